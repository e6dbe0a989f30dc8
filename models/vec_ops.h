// Small float reductions for the forward pass with a fixed summation order: 16 lane
// partial sums in element order, then a fixed pairwise tree. The compiler vectorizes
// them on every ISA (no reassociation needed), and the result depends only on the
// inputs, never on n, the thread count or the instruction set.
#pragma once

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

}  // namespace specsweep
