// Scalar K-quant quantization (Q4_K, Q5_K, Q6_K): offline, the definition of what
// `--quant q4_k` makes. Not llama.cpp's byte for byte, but the same scheme:
//
// 1. Per sub-block, a grid search for the float scale (and min) minimizing the squared
//    error: 21 candidate reciprocal scales around the range-filling one,
//    (nmax + 0.1 t) / range for t = -10..10; for each, the quants are rounded and clamped,
//    then the scale (and offset) refitted to them by least squares; the best fit wins.
//    Q4_K/Q5_K are asymmetric (x ~ a q + b, b <= 0 kept as min = -b, q in [0, nmax]);
//    Q6_K is symmetric (x ~ a q, q in [-32, 31], a of either sign).
// 2. The super-block scales: d = max a / 63 (Q6_K: max |a| / 127), dmin = max min / 63,
//    sub-block scales and mins rounded to 6 bits (Q6_K: signed 8 bits).
// 3. The quants are rounded again against the scales as stored (f16 d, integer
//    sub-scales), so they fit what dequantization will compute.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "quant/blocks_k.h"
#include "quant/fp16.h"
#include "quant/kquants.h"

namespace specsweep {
namespace {

struct Fit {
  float a = 0, b = 0;  // x ~ a q + b
};

int RoundClamp(float v, int lo, int hi) { return std::clamp(static_cast<int>(std::nearbyint(v)), lo, hi); }

// Step 1, asymmetric: x[n] ~ a q + b, q in [0, nmax], b <= 0.
Fit FitAsym(const float* x, int n, int nmax) {
  float lo = 0.0f, hi = x[0];
  for (int j = 0; j < n; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  Fit best{(hi - lo) / nmax, lo};
  if (!(hi > lo)) return {0.0f, lo};
  double best_err = INFINITY;
  for (int t = -10; t <= 10; ++t) {
    const float iscale = (nmax + 0.1f * t) / (hi - lo);
    double sq = 0, sx = 0, sqq = 0, sqx = 0;
    int q[32];
    for (int j = 0; j < n; ++j) {
      q[j] = RoundClamp((x[j] - lo) * iscale, 0, nmax);
      sq += q[j];
      sx += x[j];
      sqq += double(q[j]) * q[j];
      sqx += double(q[j]) * x[j];
    }
    const double det = n * sqq - sq * sq;
    if (det <= 0) continue;
    double a = (n * sqx - sq * sx) / det, b = (sx - a * sq) / n;
    if (b > 0) {  // the offset must be a non-negative min
      b = 0;
      a = sqq > 0 ? sqx / sqq : 0;
    }
    if (a < 0) continue;
    double err = 0;
    for (int j = 0; j < n; ++j) err += (a * q[j] + b - x[j]) * (a * q[j] + b - x[j]);
    if (err < best_err) {
      best_err = err;
      best = {float(a), float(b)};
    }
  }
  return best;
}

// Step 1, symmetric: x[16] ~ a q, q in [-32, 31].
float FitSym(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  if (amax == 0.0f) return 0.0f;
  float best_a = max / -32.0f;
  double best_err = INFINITY;
  for (int t = -10; t <= 10; ++t) {
    const float iscale = -(32.0f + 0.1f * t) / max;
    double sqq = 0, sqx = 0;
    int q[16];
    for (int j = 0; j < n; ++j) {
      q[j] = RoundClamp(x[j] * iscale, -32, 31);
      sqq += double(q[j]) * q[j];
      sqx += double(q[j]) * x[j];
    }
    if (sqq == 0) continue;
    const double a = sqx / sqq;
    double err = 0;
    for (int j = 0; j < n; ++j) err += (a * q[j] - x[j]) * (a * q[j] - x[j]);
    if (err < best_err) {
      best_err = err;
      best_a = float(a);
    }
  }
  return best_a;
}

// Steps 2 and 3 for Q4_K (nmax 15) and Q5_K (31).
void QuantizeQ45(QType type, const float* x, uint8_t* out, int row, int s) {
  const int nmax = type == QType::Q4_K ? 15 : 31;
  Fit fit[8];
  float amax = 0, mmax = 0;
  for (int j = 0; j < 8; ++j) {
    fit[j] = FitAsym(x + 32 * j, 32, nmax);
    amax = std::max(amax, fit[j].a);
    mmax = std::max(mmax, -fit[j].b);
  }
  const uint16_t dh = F32ToF16(amax / 63.0f), mh = F32ToF16(mmax / 63.0f);
  const float d = F16ToF32(dh), dmin = F16ToF32(mh);
  if (std::isinf(d) || std::isinf(dmin))
    Fail("quantize: row {} super-block {}: scale overflows f16 ({})", row, s, QTypeName(type));
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0 ? RoundClamp(fit[j].a / d, 0, 63) : 0;
    m[j] = dmin > 0 ? RoundClamp(-fit[j].b / dmin, 0, 63) : 0;
  }
  uint8_t scales[12] = {};
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    scales[j + 4] = static_cast<uint8_t>(m[j] | (m[j + 4] >> 4) << 6);
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | (m[j + 4] & 0x0F) << 4);
  }
  int q[256];
  for (int e = 0; e < 256; ++e) {
    const float dl = d * static_cast<float>(sc[e / 32]), ml = dmin * static_cast<float>(m[e / 32]);
    q[e] = dl > 0 ? RoundClamp((x[e] + ml) / dl, 0, nmax) : 0;
  }
  auto* b4 = reinterpret_cast<BlockQ4_K*>(out);
  b4->d = dh;
  b4->dmin = mh;
  std::memcpy(b4->scales, scales, 12);
  uint8_t* qs = type == QType::Q4_K ? b4->qs : reinterpret_cast<BlockQ5_K*>(out)->qs;
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      qs[32 * c + l] = static_cast<uint8_t>((q[64 * c + l] & 0x0F) | (q[64 * c + 32 + l] & 0x0F) << 4);
  if (type == QType::Q5_K) {
    uint8_t* qh = reinterpret_cast<BlockQ5_K*>(out)->qh;
    for (int l = 0; l < 32; ++l) {
      uint8_t h = 0;
      for (int j = 0; j < 8; ++j) h |= static_cast<uint8_t>((q[32 * j + l] >> 4) << j);
      qh[l] = h;
    }
  }
}

void QuantizeQ6(const float* x, uint8_t* out, int row, int s) {
  float a[16], amax = 0;
  for (int k = 0; k < 16; ++k) {
    a[k] = FitSym(x + 16 * k, 16);
    amax = std::max(amax, std::fabs(a[k]));
  }
  auto* b = reinterpret_cast<BlockQ6_K*>(out);
  b->d = F32ToF16(amax / 127.0f);
  const float d = F16ToF32(b->d);
  if (std::isinf(d)) Fail("quantize: row {} super-block {}: scale overflows f16 (q6_k)", row, s);
  for (int k = 0; k < 16; ++k) b->scales[k] = static_cast<int8_t>(d > 0 ? RoundClamp(a[k] / d, -128, 127) : 0);
  int q[256];  // stored values, 0..63
  for (int e = 0; e < 256; ++e) {
    const float dl = d * static_cast<float>(b->scales[e / 16]);
    q[e] = (dl != 0 ? RoundClamp(x[e] / dl, -32, 31) : 0) + 32;
  }
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const int* qq = q + 128 * h + l;  // qq[0], [32], [64], [96]
      b->ql[64 * h + l] = static_cast<uint8_t>((qq[0] & 0x0F) | (qq[64] & 0x0F) << 4);
      b->ql[64 * h + 32 + l] = static_cast<uint8_t>((qq[32] & 0x0F) | (qq[96] & 0x0F) << 4);
      b->qh[32 * h + l] =
          static_cast<uint8_t>((qq[0] >> 4) | (qq[32] >> 4) << 2 | (qq[64] >> 4) << 4 | (qq[96] >> 4) << 6);
    }
}

}  // namespace

void QuantizeRowK(QType type, const float* x, int cols_padded, uint8_t* out, int row) {
  if (!CanQuantizeK(type))
    Fail("quantize: type {}: quantization is not implemented (it loads from GGUF; use another type)", QTypeName(type));
  for (int s = 0; s < cols_padded / kQK; ++s) {
    uint8_t* blk = out + s * BlockBytes(type);
    if (type == QType::Q6_K)
      QuantizeQ6(x + kQK * s, blk, row, s);
    else
      QuantizeQ45(type, x + kQK * s, blk, row, s);
  }
}

}  // namespace specsweep
