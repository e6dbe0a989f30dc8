// K-quants (Q2_K..Q6_K, quant/blocks_k.h): unpacking to an integer form, dequantization
// bit-identical to ggml's dequantize_row_qN_K, scalar quantization (Q4_K, Q5_K, Q6_K),
// ggml's Q8_K activation blocks, and the scalar reference kernel.
//
// Matrix-product semantics (every family, bit for bit): each activation row is quantized
// to 256-wide int8 blocks (QuantizeActsK). Per weight super-block s of row r and
// activation row i, with the block unpacked as value_e = (d scale_k) q_e - (dmin min_k)
// (k = e/16, KUnpacked below):
//   isum = sum_k scale_k * sum_{e in k} q_e xq_e     (exact int32)
//   msum = sum_k min_k * bsum_k                       (exact int32; types with mins)
//   y += (d * dx_s) * float(isum);  y -= (dmin * dx_s) * float(msum)
// in super-block order, multiply and add rounded separately. The integer sums are exact
// whatever the instruction sequence, so the SIMD kernels only have to keep this float
// order to match the scalar reference.
#pragma once
#include <cstdint>

#include "quant/kernels.h"
#include "quant/qtype.h"

namespace specsweep {

// One super-block in integer form: value_e = (d * scale[e/16]) * q[e] - (dmin * min[e/16])
// (the subtraction only for types with mins: Q2_K, Q4_K, Q5_K).
struct KUnpacked {
  int8_t q[256];
  int16_t scale[16];
  int16_t min[16];
  float d = 0, dmin = 0;
  bool has_min = false;
};
void UnpackK(QType type, const uint8_t* block, KUnpacked* u);

// out[cols] = a row of `type` (cols a multiple of 256 in storage; the first `cols` values).
void DequantizeRowK(QType type, const uint8_t* row, int cols, float* out);

// Whether QuantizeRowK supports `type` (Q4_K, Q5_K, Q6_K; Q2_K and Q3_K only load).
bool CanQuantizeK(QType type);
// Quantizes x[cols_padded] (a multiple of 256) into a row of `type`; `row` names errors.
void QuantizeRowK(QType type, const float* x, int cols_padded, uint8_t* out, int row);

// ggml's Q8_K for x[cols], zero beyond: per 256 values, d = max / -127 (max: the value of
// largest magnitude), q = min(127, nearbyint(x / d)) and the 16 sums of 16 q each; a
// block with amax < 1e-30 is zero (its reciprocal scale would overflow).
void QuantizeActsK(const float* x, int cols, int cols_padded, int8_t* q, float* d, int16_t* bsum);

// The family's kernel for a row-layout K-quant matrix: the SIMD one where the family has
// it (avx2, avx512: Q4_K, Q5_K, Q6_K), else the scalar reference.
RowsKernelFn KQuantRows(const KernelFamily& family, QType type);
RowsKernelFn KQuantRowsScalar(QType type);
RowsKernelFn KQuantRowsAvx2(QType type);    // nullptr: none
RowsKernelFn KQuantRowsAvx512(QType type);  // nullptr: none

}  // namespace specsweep
