// ggml's reference quantizers for Q4_1, Q5_0, Q5_1, IQ4_NL and IQ4_XS, reimplemented
// from their published rules (ggml-quants.c); llama-quantize uses them when it has no
// importance matrix, so a model quantized here is byte-identical to its file (tested on
// the fixtures). The float steps are ggml's, one rounding each, no fused multiply-add
// (the project builds with -ffp-contract=off, as ggml-base is built).
//  Q4_1/Q5_1: d = (max - min) / (2^bits - 1), q = trunc((x - min) / d + 0.5) (Q4_1 at most 15).
//  Q5_0:      d = max / -16 (max: the value of largest magnitude), q = min(31, trunc(x / d + 16.5)).
//  IQ4_NL:    per 32 values, weights w = x^2, a start scale max / 127, then 15 trial
//             reciprocal scales (t - 127) / max, t = -7..7: each picks the code-book index
//             nearest to x / scale and the least-squares scale sum w q x / sum w q^2; the fit
//             with the largest (sum w q x)^2 / sum w q^2 wins; the indices are chosen again
//             against the winning float scale.
//  IQ4_XS:    the same per 32-value sub-block; then d = -s / 32 for the sub-block scale s of
//             largest magnitude, 6-bit sub-scales nearest(s_k / d) clamped to [-32, 31],
//             indices chosen again against d * sub-scale.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "quant/blocks_legacy.h"
#include "quant/fp16.h"
#include "quant/legacy_quants.h"

namespace specsweep {
namespace {

void CheckScale(Half h, float d, int row, int b) {
  if (std::isinf(F16ToF32(h))) Fail("quantize: row {} block {}: scale {} overflows f16", row, b, d);
}

// Q4_1 (bits 4) and Q5_1 (bits 5).
template <class Block, int Bits>
void QuantizeMinBlock(const float* x, Block* y, int row, int b) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / float((1 << Bits) - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  y->m = F32ToF16(min);
  CheckScale(y->d, d, row, b);
  CheckScale(y->m, min, row, b);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const float x0 = (x[j] - min) * id, x1 = (x[16 + j] - min) * id;
    int q0, q1;
    if constexpr (Bits == 4) {
      q0 = std::min(15, int(static_cast<int8_t>(x0 + 0.5f)));
      q1 = std::min(15, int(static_cast<int8_t>(x1 + 0.5f)));
    } else {
      q0 = static_cast<uint8_t>(x0 + 0.5f);
      q1 = static_cast<uint8_t>(x1 + 0.5f);
      qh |= uint32_t(q0 >> 4 & 1) << j | uint32_t(q1 >> 4 & 1) << (j + 16);
    }
    y->qs[j] = static_cast<uint8_t>((q0 & 0x0F) | (q1 & 0x0F) << 4);
  }
  if constexpr (Bits == 5) std::memcpy(y->qh, &qh, 4);
}

void QuantizeQ5_0Block(const float* x, BlockQ5_0* y, int row, int b) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  const float d = max / -16.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  CheckScale(y->d, d, row, b);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(31, int(static_cast<int8_t>(x[j] * id + 16.5f)));
    const int q1 = std::min(31, int(static_cast<int8_t>(x[16 + j] * id + 16.5f)));
    y->qs[j] = static_cast<uint8_t>((q0 & 0x0F) | (q1 & 0x0F) << 4);
    qh |= uint32_t(q0 >> 4 & 1) << j | uint32_t(q1 >> 4 & 1) << (j + 16);
  }
  std::memcpy(y->qh, &qh, 4);
}

// Index of the code-book value nearest to v; a tie takes the upper one (v reaches the
// midpoint: compared as 2 v >= lo + hi, both sides exact).
int NearestIq4(float v) {
  const float v2 = v + v;
  int idx = 0;
  for (int step = 8; step > 0; step /= 2)
    if (v2 >= float(kIq4nlValues[idx + step - 1] + kIq4nlValues[idx + step])) idx += step;
  return idx;
}

// Sums sum w q x and sum w q^2 of x[32] quantized with reciprocal scale id (indices to L).
void Iq4Sums(const float* x, float id, uint8_t* L, float* sumqx, float* sumq2) {
  float sx = 0, s2 = 0;
  for (int j = 0; j < 32; ++j) {
    const int l = NearestIq4(id * x[j]);
    if (L) L[j] = static_cast<uint8_t>(l);
    const float q = kIq4nlValues[l], w = x[j] * x[j];
    sx += w * q * x[j];
    s2 += w * q * q;
  }
  *sumqx = sx, *sumq2 = s2;
}

// Float scale of one 32-value (sub-)block: the search of the header comment; 0 for a
// block of (near) zeros.
float Iq4BlockScale(const float* x) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  if (amax < 1e-15f) return 0;
  constexpr int kTries = 7;
  float sumqx, sumq2;
  Iq4Sums(x, 1.0f / (-max / kIq4nlValues[0]), nullptr, &sumqx, &sumq2);
  float d = sumqx / sumq2, best = d * sumqx;
  for (int t = -kTries; t <= kTries; ++t) {
    Iq4Sums(x, float(t + kIq4nlValues[0]) / max, nullptr, &sumqx, &sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

void PackIq4(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(L[j] | L[16 + j] << 4);
}

void QuantizeIq4NlBlock(const float* x, BlockIQ4_NL* y, int row, int b) {
  const float d = Iq4BlockScale(x);
  y->d = F32ToF16(d);
  CheckScale(y->d, d, row, b);
  uint8_t L[32];
  const float id = d != 0 ? 1 / d : 0.0f;
  for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(NearestIq4(id * x[j]));
  PackIq4(L, y->qs);
}

void QuantizeIq4XsBlock(const float* x, BlockIQ4_XS* y, int row, int b) {
  float scales[8], max_scale = 0, amax_scale = 0;
  for (int k = 0; k < 8; ++k) {
    scales[k] = Iq4BlockScale(x + 32 * k);
    if (std::fabs(scales[k]) > amax_scale) {
      amax_scale = std::fabs(scales[k]);
      max_scale = scales[k];
    }
  }
  const float d = -max_scale / 32;
  y->d = F32ToF16(d);
  CheckScale(y->d, d, row, b);
  const float id = d != 0 ? 1 / d : 0.0f;
  y->scales_h = 0;
  std::memset(y->scales_l, 0, 4);
  for (int k = 0; k < 8; ++k) {
    const int l = std::clamp(static_cast<int>(std::nearbyint(id * scales[k])), -32, 31);
    const float dl = d * static_cast<float>(l);
    const float idl = dl != 0 ? 1 / dl : 0.0f;
    uint8_t L[32];
    for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(NearestIq4(idl * x[32 * k + j]));
    PackIq4(L, y->qs + 16 * k);
    const int u = l + 32;
    y->scales_l[k / 2] |= static_cast<uint8_t>((u & 0x0F) << 4 * (k % 2));
    y->scales_h |= static_cast<uint16_t>((u >> 4) << 2 * k);
  }
}

}  // namespace

void QuantizeRowLegacy(QType type, const float* x, int cols_padded, uint8_t* out, int row) {
  const int bs = BlockSize(type);
  for (int b = 0; b < cols_padded / bs; ++b) {
    const float* xb = x + size_t(b) * bs;
    switch (type) {
      case QType::Q4_1: QuantizeMinBlock<BlockQ4_1, 4>(xb, reinterpret_cast<BlockQ4_1*>(out) + b, row, b); break;
      case QType::Q5_1: QuantizeMinBlock<BlockQ5_1, 5>(xb, reinterpret_cast<BlockQ5_1*>(out) + b, row, b); break;
      case QType::Q5_0: QuantizeQ5_0Block(xb, reinterpret_cast<BlockQ5_0*>(out) + b, row, b); break;
      case QType::IQ4_NL: QuantizeIq4NlBlock(xb, reinterpret_cast<BlockIQ4_NL*>(out) + b, row, b); break;
      case QType::IQ4_XS: QuantizeIq4XsBlock(xb, reinterpret_cast<BlockIQ4_XS*>(out) + b, row, b); break;
      default: Fail("quantize: type {}: not a Q4_1/Q5_0/Q5_1/IQ4_NL/IQ4_XS type", QTypeName(type));
    }
  }
}

}  // namespace specsweep
