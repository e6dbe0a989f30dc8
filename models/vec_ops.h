// Small float reductions for the forward pass with a fixed summation order: 16 lane
// partial sums in element order, then a fixed pairwise tree. The compiler vectorizes
// them on every ISA (no reassociation needed), and the result depends only on the
// inputs, never on n, the thread count or the instruction set.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>

namespace specsweep {

inline float LaneTreeSum(float (&acc)[16]) {
  for (int w = 8; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

// sum_i a[i] * b[i]
inline float Dot(const float* a, const float* b, int n) {
  float acc[16] = {};  // [16] lane partial sums
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += a[i + j] * b[i + j];
  for (int j = 0; i + j < n; ++j) acc[j] += a[i + j] * b[i + j];
  return LaneTreeSum(acc);
}

// exp(x) without a libm call, so loops of it vectorize (std::exp does not without
// -ffast-math; its scalar calls in SwiGLU were the forward's hottest own code in a Q4_0
// decode profile): Cody-Waite reduction by
// ln 2 and Cephes' degree-6 expf polynomial. Relative error < 4e-7 over [-87, 88]
// (tested); inputs are clamped to [-87.3, 88.3], the range with a normal 2^n. Plain
// float operations: the same value on every ISA and for every n.
inline float ExpF(float x) {
  x = std::min(std::max(x, -87.3f), 88.3f);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float kf = x * 1.44269504f + kRound;
  const float n = kf - kRound;                            // round(x / ln 2)
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // x - n ln 2, two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t e = std::bit_cast<int32_t>(kf) - std::bit_cast<int32_t>(kRound);  // n
  return p * std::bit_cast<float>((e + 127) << 23);
}

// SiLU(g) * u, the SwiGLU gate.
inline float SwiGlu(float g, float u) { return g / (1.0f + ExpF(-g)) * u; }

}  // namespace specsweep
