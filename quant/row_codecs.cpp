#include "quant/row_codecs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kquants.h"
#include "quant/legacy_quants.h"

namespace specsweep {
namespace {

// ggml quantize_row_q4_0_ref generalised to G-wide groups. x[G] (zero-padded).
template <int G>
void QuantizeGroupQ4(const float* x, BlockQ4<G>* y, int row, int group) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < G; ++j) {
    const float v = x[j];
    if (amax < std::fabs(v)) {
      amax = std::fabs(v);
      max = v;
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  if (std::isinf(F16ToF32(y->d))) Fail("quantize: row {} block {}: scale {} overflows f16", row, group, d);
  for (int j = 0; j < G / 2; ++j) {
    const float x0 = x[j] * id;
    const float x1 = x[G / 2 + j] * id;
    const int xi0 = std::min(15, static_cast<int>(static_cast<int8_t>(x0 + 8.5f)));
    const int xi1 = std::min(15, static_cast<int>(static_cast<int8_t>(x1 + 8.5f)));
    y->qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
  }
}

// ggml quantize_row_q8_0_ref. x[32] (zero-padded).
void QuantizeBlockQ8_0(const float* x, BlockQ8_0* y, int row, int block) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  if (std::isinf(F16ToF32(y->d))) Fail("quantize: row {} block {}: scale {} overflows f16", row, block, d);
  for (int j = 0; j < 32; ++j) y->qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
}

template <int G>
void DequantizeRowQ4(const uint8_t* row, int cols, float* out) {
  const auto* b = reinterpret_cast<const BlockQ4<G>*>(row);
  for (int c = 0; c < cols; ++c) {
    const BlockQ4<G>& blk = b[c / G];
    const int j = c % G;
    const int nib = j < G / 2 ? (blk.qs[j] & 0x0F) : (blk.qs[j - G / 2] >> 4);
    out[c] = static_cast<float>(nib - 8) * F16ToF32(blk.d);
  }
}

}  // namespace

void QuantizeRowFloat(QType type, const float* x, int cols, uint8_t* out, int row) {
  if (type == QType::F32) {
    std::memcpy(out, x, sizeof(float) * cols);
    return;
  }
  auto* h = reinterpret_cast<uint16_t*>(out);
  for (int c = 0; c < cols; ++c) {
    h[c] = type == QType::F16 ? F32ToF16(x[c]) : F32ToBF16(x[c]);
    const float back = type == QType::F16 ? F16ToF32(h[c]) : BF16ToF32(h[c]);
    if (std::isinf(back)) Fail("quantize: row {} col {}: weight {} overflows {}", row, c, x[c], QTypeName(type));
  }
}

void DequantizeRowFloat(QType type, const uint8_t* p, int cols, float* out) {
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  if (type == QType::F32)
    std::memcpy(out, p, sizeof(float) * cols);
  else if (type == QType::F16)
    for (int c = 0; c < cols; ++c) out[c] = F16ToF32(h[c]);
  else
    for (int c = 0; c < cols; ++c) out[c] = BF16ToF32(h[c]);
}

void QuantizeRowQ8(QType type, const float* x, int cols_padded, uint8_t* out, int row) {
  const int bs = BlockSize(type);
  for (int g = 0; g < cols_padded / bs; ++g) {
    const float* xg = x + g * bs;
    switch (type) {
      case QType::Q8_0: QuantizeBlockQ8_0(xg, reinterpret_cast<BlockQ8_0*>(out) + g, row, g); break;
      case QType::Q4_0: QuantizeGroupQ4<32>(xg, reinterpret_cast<BlockQ4_0*>(out) + g, row, g); break;
      case QType::Q4_G64: QuantizeGroupQ4<64>(xg, reinterpret_cast<BlockQ4_G64*>(out) + g, row, g); break;
      case QType::Q4_G128: QuantizeGroupQ4<128>(xg, reinterpret_cast<BlockQ4_G128*>(out) + g, row, g); break;
      default: Fail("quantize: type {}: unsupported", QTypeName(type));
    }
  }
}

void DequantizeRowQ8(QType type, const uint8_t* row, int cols, float* out) {
  switch (type) {
    case QType::Q8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(row);
      for (int c = 0; c < cols; ++c) out[c] = static_cast<float>(b[c / 32].qs[c % 32]) * F16ToF32(b[c / 32].d);
      return;
    }
    case QType::Q4_0: return DequantizeRowQ4<32>(row, cols, out);
    case QType::Q4_G64: return DequantizeRowQ4<64>(row, cols, out);
    case QType::Q4_G128: return DequantizeRowQ4<128>(row, cols, out);
    default: Fail("dequantize: type {}: unsupported", QTypeName(type));
  }
}

const RowCodec& CodecOf(QType type) {
  static constexpr RowCodec kFloat{QuantizeRowFloat, DequantizeRowFloat}, kQ8{QuantizeRowQ8, DequantizeRowQ8},
      kLegacy{QuantizeRowLegacy, DequantizeRowLegacy}, kKQuant{QuantizeRowK, DequantizeRowK};
  switch (GroupOf(type)) {
    case QGroup::kFloat: return kFloat;
    case QGroup::kQ8: return kQ8;
    case QGroup::kLegacy: return kLegacy;
    case QGroup::kKQuant: return kKQuant;
  }
  Fail("codec: type {}: no group", QTypeName(type));
}

}  // namespace specsweep
