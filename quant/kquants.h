// K-quants (Q2_K..Q6_K, quant/blocks_k.h): unpacking to an integer form, dequantization
// bit-identical to ggml's dequantize_row_qN_K, scalar quantization (Q4_K, Q5_K, Q6_K),
// ggml's Q8_K activation blocks, and the scalar reference kernel.
//
// Matrix-product semantics (every family, bit for bit): each activation row is quantized
// to 256-wide int8 blocks (QuantizeActsK). A weight super-block, unpacked as value_e =
// (d scale_k) (q_e - bias) - (dmin min_k) (k = e/16, KUnpacked below), meets activation
// block s in 8 lanes: lane j takes the values e with (e % 32) / 4 == j (the int32 lanes
// of a SIMD multiply-add over 32 bytes) and the groups 2j, 2j + 1 for the corrections:
//   isum_j = sum_{e in lane j} scale_k q_e xq_e - bias (scale_2j bsum_2j + scale_2j+1 bsum_2j+1)
//   msum_j = min_2j bsum_2j + min_2j+1 bsum_2j+1                  (types with mins)
//   lane_j += (d * dx_s) * float(isum_j);  lane_j -= (dmin * dx_s) * float(msum_j)
// in super-block order (integer sums exact, multiply and add rounded separately), and
// y = ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) at the end. The float work is
// thus one vector step per super-block and activation row, and the SIMD kernels match
// the scalar reference exactly.
#pragma once
#include <cstdint>

#include "quant/kernels.h"
#include "quant/qtype.h"

namespace specsweep {

// One super-block in integer form: value_e = (d * scale[e/16]) * (q[e] - bias) -
// (dmin * min[e/16]) (the subtraction only for types with mins: Q2_K, Q4_K, Q5_K).
// q is as stored (Q6_K: 0..63, bias 32; Q3_K: -4..3, bias 0).
struct KUnpacked {
  int8_t q[256];
  int bias = 0;
  int16_t scale[16];
  int16_t min[16];
  float d = 0, dmin = 0;
  bool has_min = false;
};
void UnpackK(QType type, const uint8_t* block, KUnpacked* u);

// out[cols] = a row of `type` (cols a multiple of 256 in storage; the first `cols` values).
void DequantizeRowK(QType type, const uint8_t* row, int cols, float* out);

// Whether QuantizeRowK supports `type` (Q4_K, Q5_K, Q6_K; Q2_K and Q3_K only load).
constexpr bool CanQuantizeK(QType type) { return IsKQuant(type) && CanQuantizeTo(type); }
// Quantizes x[cols_padded] (a multiple of 256) into a row of `type`; `row` names errors.
void QuantizeRowK(QType type, const float* x, int cols_padded, uint8_t* out, int row);

// ggml's Q8_K for x[cols], zero beyond: per 256 values, d = max / -127 (max: the value of
// largest magnitude), q = min(127, nearbyint(x / d)) and the 16 sums of 16 q each; a
// block with amax < 1e-30 is zero (its reciprocal scale would overflow).
void QuantizeActsK(const float* x, int cols, int cols_padded, int8_t* q, float* d, int16_t* bsum);

// The kernels of each family for a row-layout K-quant matrix, which SetGroupKernels
// (quant/kernels.h) puts in the family's tables: the SIMD one where the family has it
// (avx2, avx2vnni, avx512: Q4_K, Q5_K, Q6_K), else the scalar reference.
RowsKernelFn KQuantRowsScalar(QType type);
RowsKernelFn KQuantRowsAvx2(QType type);      // nullptr: none
RowsKernelFn KQuantRowsAvx2Vnni(QType type);  // nullptr: none
RowsKernelFn KQuantRowsAvx512(QType type);    // nullptr: none

}  // namespace specsweep
