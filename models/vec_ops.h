// Small float reductions for the forward pass with a fixed summation order: 16 lane
// partial sums in element order, then a fixed pairwise tree. The compiler vectorizes
// them on every ISA (no reassociation needed), and the result depends only on the
// inputs, never on n, the thread count or the instruction set.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "quant/fp16.h"

namespace specsweep {

// Float lanes in GCC's portable vector types: they lower to whatever the target ISA has
// (one zmm for 16 lanes with AVX-512, two ymm with AVX2) and keep partial sums in
// registers. As a float[16] array the sums went through the stack and the tree ran as
// scalar code with store-forwarding stalls: attention of 6 heads over 65 positions (hd
// 64, L1-resident) took 11.1 us, 6.0 us with 8-lane types.
using Lanes16 = float __attribute__((vector_size(64)));
using Lanes8 = float __attribute__((vector_size(32)));
using Lanes4 = float __attribute__((vector_size(16)));

template <class V>
V LoadLanes(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline Lanes8 LoadLanes8(const float* p) { return LoadLanes<Lanes8>(p); }
inline Lanes16 LoadLanes16(const float* p) { return LoadLanes<Lanes16>(p); }

// Elements of a KV cache row as floats: halves (uint16_t bits) widen exactly, so every
// path below gives the same lanes. (GCC 12 widens _Float16 vectors one element at a
// time, hence the intrinsics.)
inline float ToFloat(float x) { return x; }
inline float ToFloat(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);  // one instruction; F16ToF32 costs ~10 (head sizes below 16 widen per element)
#else
  return F16ToF32(h);
#endif
}
inline Lanes16 LoadLanes16(const uint16_t* p) {
#if defined(__AVX512F__)
  // maskz with every lane: the unmasked intrinsic trips GCC 12's -Wmaybe-uninitialized
  return reinterpret_cast<Lanes16>(
      _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#elif defined(__F16C__)
  const __m256 lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256 hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  Lanes16 v;
  std::memcpy(&v, &lo, 32);
  std::memcpy(reinterpret_cast<char*>(&v) + 32, &hi, 32);
  return v;
#else
  Lanes16 v;
  for (int j = 0; j < 16; ++j) v[j] = F16ToF32(p[j]);
  return v;
#endif
}
// A row into a KV cache of element type float (copied) or half (rounded to nearest even).
inline void StoreRow(const float* x, int n, float* out) { std::copy_n(x, n, out); }
inline void StoreRow(const float* x, int n, uint16_t* out) {
  for (int i = 0; i < n; ++i) out[i] = F32ToF16(x[i]);
}

// The tree over 16 partial sums: lanes j and j + w added for w = 8, 4, 2, 1.
inline float LaneTreeSum(Lanes16 s) {
  const Lanes8 s8 = __builtin_shufflevector(s, s, 0, 1, 2, 3, 4, 5, 6, 7) +
                    __builtin_shufflevector(s, s, 8, 9, 10, 11, 12, 13, 14, 15);
  const Lanes4 s4 = __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

// Lane w = LaneTreeSum(v[w]) for 16 vectors at once: each level adds two shuffled
// vectors holding halves of two inputs (15 adds instead of 16 trees of 4), the same
// additions in the same order, so every lane is bit-identical to LaneTreeSum alone.
inline Lanes16 LaneTreeSums16(const Lanes16 (&v)[16]) {
  Lanes16 c[8], d[4], e[2];
  for (int m = 0; m < 8; ++m)  // [s8 of v[2m] | s8 of v[2m+1]]
    c[m] =
        __builtin_shufflevector(v[2 * m], v[2 * m + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
        __builtin_shufflevector(v[2 * m], v[2 * m + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  for (int p = 0; p < 4; ++p)  // s4 of v[4p], .., v[4p+3]
    d[p] = __builtin_shufflevector(c[2 * p], c[2 * p + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
           __builtin_shufflevector(c[2 * p], c[2 * p + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  for (int q = 0; q < 2; ++q)  // (s4[0] + s4[2], s4[1] + s4[3]) of v[8q], .., v[8q+7]
    e[q] = __builtin_shufflevector(d[2 * q], d[2 * q + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
           __builtin_shufflevector(d[2 * q], d[2 * q + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
  return __builtin_shufflevector(e[0], e[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
         __builtin_shufflevector(e[0], e[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

// sum_i a[i] * b[i]: lane j sums the products of elements i = j (mod 16) in order. b may
// be a half-precision KV cache row (E = uint16_t): the same sums of its widened values.
template <class E>
inline float Dot(const float* a, const E* b, int n) {
  Lanes16 s = {};
  int i = 0;
  for (; i + 16 <= n; i += 16) s += LoadLanes16(a + i) * LoadLanes16(b + i);
  for (int j = 0; i + j < n; ++j) s[j] += a[i + j] * ToFloat(b[i + j]);  // the tail, in the lanes it reaches
  return LaneTreeSum(s);
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
  const float n = kf - kRound;                                   // round(x / ln 2)
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
