// The one reduction order of the float-weight kernels (F32/F16/BF16), shared by every
// kernel family so that logits are bit-identical whichever family runs (and so greedy
// acceptance is the same on any CPU):
//   s[j] = fma(w[c], x[c], s[j]) over c = j (mod 16) in column order, s[j] from +0, the
//          row padded with zero weights and activations to a multiple of 16 columns;
//   y    = LaneTreeSum16(s): t[j] = s[j] + s[j+8] (j < 8), u[j] = t[j] + t[j+4] (j < 4),
//          y = (u[0] + u[2]) + (u[1] + u[3]).
// AVX-512 holds s in one zmm and reduces it as _mm512_reduce_add_ps does; AVX2 in two
// ymm (lanes 0-7, 8-15), whose sum is t; the scalar reference in an array.
// (models/vec_ops.h's LaneTreeSum is the same tree for the forward pass's own dot
// products, which multiply and add without fusing.)
#pragma once

namespace specsweep {

inline float LaneTreeSum16(const float (&s)[16]) {
  float t[8], u[4];
  for (int j = 0; j < 8; ++j) t[j] = s[j] + s[j + 8];
  for (int j = 0; j < 4; ++j) u[j] = t[j] + t[j + 4];
  return (u[0] + u[2]) + (u[1] + u[3]);
}

}  // namespace specsweep
