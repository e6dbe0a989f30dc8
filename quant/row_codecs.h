// The row quantizer and dequantizer of every format, one pair per group (quant/qtype.h):
// the definition of the formats (ggml's rounding), scalar and offline.
#pragma once
#include <cstdint>

#include "quant/qtype.h"

namespace specsweep {

// Quantizes x[cols_padded] (zero beyond the row's values; cols_padded a whole number of
// blocks) into a row of `type`; `row` names errors (a scale or weight that overflows).
using QuantizeRowFn = void (*)(QType type, const float* x, int cols_padded, uint8_t* out, int row);
// out[cols] = the first `cols` values of a row of `type` in ggml's layout.
using DequantizeRowFn = void (*)(QType type, const uint8_t* row, int cols, float* out);

struct RowCodec {
  QuantizeRowFn quantize;
  DequantizeRowFn dequantize;
};
// The codec of type's group: QuantizeRowK/DequantizeRowK (quant/kquants.h),
// QuantizeRowLegacy/DequantizeRowLegacy (quant/legacy_quants.h), or the float and Q8
// group's below.
const RowCodec& CodecOf(QType type);

void QuantizeRowFloat(QType type, const float* x, int cols, uint8_t* out, int row);
void DequantizeRowFloat(QType type, const uint8_t* row, int cols, float* out);
void QuantizeRowQ8(QType type, const float* x, int cols_padded, uint8_t* out, int row);
void DequantizeRowQ8(QType type, const uint8_t* row, int cols, float* out);

}  // namespace specsweep
