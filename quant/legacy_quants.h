// ggml's other GGUF block types (Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS; quant/blocks_legacy.h):
// unpacking to an integer form, dequantization bit-identical to ggml's dequantize_row_*,
// ggml's reference quantizers (quantize_row_*_ref, quantize_iq4_nl/xs without an
// importance matrix: what llama-quantize writes, byte for byte), and the kernels.
//
// Matrix-product semantics (every family, bit for bit): activations are the 32-wide int8
// blocks of the Q8_0/Q4_0 kernels (quant/kernels.h: x ~ dx_b xq). A 32-value weight block b
// (an IQ4_XS sub-block counts as one) is value_e = dw_b q_e (+ m_b for Q4_1/Q5_1, LegacyBlock
// below). It meets activation block b in 8 lanes, lane j taking the values 4j..4j+3 (the
// int32 lanes of a SIMD multiply-add over 32 bytes), and adds to float lane L = 8 (b % 2) + j:
//   isum = sum_e q_e xq_e,  xsum = sum_e xq_e               (exact int32)
//   s_L = fma(dw_b * dx_b, float(isum), s_L);  s_L = fma(m_b * dx_b, float(xsum), s_L)  (min types)
// in block order, from +0, and y = LaneTreeSum16(s) (quant/float_order.h). So a 512-bit
// register holds a block pair's 16 lanes, two 256-bit ones the even and odd blocks, and
// every family gives the scalar reference's bits.
#pragma once
#include <cstdint>
#include <type_traits>

#include "quant/kernels.h"
#include "quant/qtype.h"

namespace specsweep {

// One 32-value block: value_e = d * q[e] (+ m). q: Q4_1 0..15, Q5_1 0..31, Q5_0 -16..15,
// IQ4_NL/IQ4_XS the code book's values; d of an IQ4_XS sub-block is d (ls - 32).
struct LegacyBlock {
  int8_t q[32];
  float d = 0, m = 0;
};
constexpr bool HasMin(QType t) { return Traits(t).has_min; }
// Block b (values 32 b .. 32 b + 31) of a row of `type`.
void UnpackLegacy(QType type, const uint8_t* row, int b, LegacyBlock* u);

// out[cols] = a row of `type` (the first `cols` values of its blocks).
void DequantizeRowLegacy(QType type, const uint8_t* row, int cols, float* out);
// Quantizes x[cols_padded] (a whole number of blocks) into a row of `type` as ggml's
// reference quantizer does; `row` names errors.
void QuantizeRowLegacy(QType type, const float* x, int cols_padded, uint8_t* out, int row);

// f(std::integral_constant<QType, T>{}) for the type T == type of this group, else
// nullptr: the type switch of every family's kernel table.
template <class F>
RowsKernelFn ForLegacyType(QType type, F&& f) {
  return ForTypeIn<QGroup::kLegacy, RowsKernelFn>(type, f);
}

// The kernels of each family for a matrix of these types, kRows or kPacked16 layout
// (quant/packed.h), which SetGroupKernels (quant/kernels.h) puts in the family's tables:
// the SIMD one where the family has it, else the scalar reference, which takes either
// layout.
RowsKernelFn LegacyRowsScalar(QType type);
RowsKernelFn LegacyRowsAvx2(QType type);        // nullptr: none
RowsKernelFn LegacyRowsAvx2Vnni(QType type);    // nullptr: none
RowsKernelFn LegacyRowsAvx512(QType type);      // nullptr: none
RowsKernelFn LegacyPackedAvx2(QType type);      // kPacked16; nullptr: none
RowsKernelFn LegacyPackedAvx2Vnni(QType type);  // kPacked16; nullptr: none
// kPacked16; nullptr: none. vbmi: the CPU has AVX512-VBMI and GFNI (IQ4 then takes
// vpermb, Q5 gf2p8affineqb).
RowsKernelFn LegacyPackedAvx512(QType type, bool vbmi);
RowsKernelFn LegacyPackedAvx512Vbmi(QType type);    // not Q4_1; call only on VBMI + GFNI CPUs
RowsKernelFn LegacyPackedAvx512ForCpu(QType type);  // LegacyPackedAvx512 for this CPU

}  // namespace specsweep
