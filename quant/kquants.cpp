// K-quant unpacking, dequantization, Q8_K activations and the scalar reference kernel
// (semantics in quant/kquants.h).
#include "quant/kquants.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "quant/blocks_k.h"
#include "quant/fp16.h"

namespace specsweep {
namespace {

// Q4_K/Q5_K: scale and min of 32-wide sub-block j from the 12 packed bytes (6 bits
// each: j < 4 in the low bits of bytes j and j + 4, j >= 4 split over byte j + 4's
// nibbles and the top 2 bits of bytes j - 4 and j).
void ScaleMinK4(int j, const uint8_t* s, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q3_K: 6-bit scale k (0..15): low 4 bits from byte k (k < 8) or the high nibble of
// byte k - 8, high 2 bits from byte 8 + k % 4 at shift 2 (k / 4).
int ScaleQ3(const uint8_t* s, int k) {
  const int lo = k < 8 ? s[k] & 0x0F : s[k - 8] >> 4;
  const int hi = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
  return lo | (hi << 4);
}

}  // namespace

void UnpackK(QType type, const uint8_t* block, KUnpacked* u) {
  u->bias = 0;
  switch (type) {
    case QType::Q2_K: {
      const auto* b = reinterpret_cast<const BlockQ2_K*>(block);
      u->d = F16ToF32(b->d);
      u->dmin = F16ToF32(b->dmin);
      u->has_min = true;
      for (int k = 0; k < 16; ++k) {
        u->scale[k] = b->scales[k] & 0x0F;
        u->min[k] = b->scales[k] >> 4;
      }
      for (int e = 0; e < 256; ++e) u->q[e] = (b->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      return;
    }
    case QType::Q3_K: {
      const auto* b = reinterpret_cast<const BlockQ3_K*>(block);
      u->d = F16ToF32(b->d);
      u->dmin = 0;
      u->has_min = false;
      for (int k = 0; k < 16; ++k) {
        u->scale[k] = static_cast<int16_t>(ScaleQ3(b->scales, k) - 32);
        u->min[k] = 0;
      }
      for (int e = 0; e < 256; ++e) {
        const int j = (e % 128) / 32;
        const int lo = (b->qs[32 * (e / 128) + e % 32] >> (2 * j)) & 3;
        const bool high = b->hmask[e % 32] & (1 << (4 * (e / 128) + j));
        u->q[e] = static_cast<int8_t>(lo - (high ? 0 : 4));
      }
      return;
    }
    case QType::Q4_K:
    case QType::Q5_K: {
      // Same header and scale packing; Q5_K adds qh between scales and qs.
      const auto* b4 = reinterpret_cast<const BlockQ4_K*>(block);
      const auto* b5 = reinterpret_cast<const BlockQ5_K*>(block);
      const uint8_t* qs = type == QType::Q4_K ? b4->qs : b5->qs;
      u->d = F16ToF32(b4->d);
      u->dmin = F16ToF32(b4->dmin);
      u->has_min = true;
      for (int j = 0; j < 8; ++j) {
        int sc, m;
        ScaleMinK4(j, b4->scales, &sc, &m);
        u->scale[2 * j] = u->scale[2 * j + 1] = static_cast<int16_t>(sc);
        u->min[2 * j] = u->min[2 * j + 1] = static_cast<int16_t>(m);
      }
      for (int e = 0; e < 256; ++e) {
        const uint8_t byte = qs[32 * (e / 64) + e % 32];
        int q = e % 64 < 32 ? byte & 0x0F : byte >> 4;
        if (type == QType::Q5_K && (b5->qh[e % 32] >> (e / 32) & 1)) q += 16;
        u->q[e] = static_cast<int8_t>(q);
      }
      return;
    }
    case QType::Q6_K: {
      const auto* b = reinterpret_cast<const BlockQ6_K*>(block);
      u->d = F16ToF32(b->d);
      u->dmin = 0;
      u->has_min = false;
      for (int k = 0; k < 16; ++k) {
        u->scale[k] = b->scales[k];
        u->min[k] = 0;
      }
      for (int e = 0; e < 256; ++e) {
        const int h = e / 128, w = e % 128;
        const uint8_t l = b->ql[64 * h + w % 64];
        const int lo = w < 64 ? l & 0x0F : l >> 4;
        const int hi = (b->qh[32 * h + w % 32] >> (2 * (w / 32))) & 3;
        u->q[e] = static_cast<int8_t>(lo | (hi << 4));
      }
      u->bias = 32;
      return;
    }
    default: Fail("unpack: type {}: not a K-quant", QTypeName(type));
  }
}

void DequantizeRowK(QType type, const uint8_t* row, int cols, float* out) {
  const size_t bytes = BlockBytes(type);
  KUnpacked u;
  for (int s = 0; s * kQK < cols; ++s) {
    UnpackK(type, row + s * bytes, &u);
    const int n = std::min(kQK, cols - s * kQK);
    for (int e = 0; e < n; ++e) {
      // ggml's order: sub-block scale first, then times the quant, then minus the min.
      const float dl = u.d * static_cast<float>(u.scale[e / 16]);
      float v = dl * static_cast<float>(u.q[e] - u.bias);
      if (u.has_min) v = v - u.dmin * static_cast<float>(u.min[e / 16]);
      out[s * kQK + e] = v;
    }
  }
}

void QuantizeActsK(const float* x, int cols, int cols_padded, int8_t* q, float* d, int16_t* bsum) {
  for (int s = 0; s < cols_padded / kQK; ++s) {
    float xb[kQK];  // [256] block, zero beyond cols
    for (int j = 0; j < kQK; ++j) xb[j] = kQK * s + j < cols ? x[kQK * s + j] : 0.0f;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j)
      if (std::fabs(xb[j]) > amax) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    int8_t* qb = q + kQK * s;
    if (!(amax >= 1e-30f)) {
      std::memset(qb, 0, kQK);
      std::fill(bsum + 16 * s, bsum + 16 * s + 16, int16_t{0});
      d[s] = 0.0f;
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK; ++j) qb[j] = static_cast<int8_t>(std::min(127.0f, std::nearbyint(iscale * xb[j])));
    for (int k = 0; k < 16; ++k) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += qb[16 * k + j];
      bsum[16 * s + k] = static_cast<int16_t>(sum);
    }
    d[s] = 1.0f / iscale;
  }
}

namespace {

template <QType T>
void KRowsScalar(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  const int nsb = W.cols_padded / kQK;
  const size_t bytes = BlockBytes(T);
  KUnpacked u;
  std::vector<float> lanes(size_t(n) * 8);  // [n][8]
  for (int r = r0; r < r1; ++r) {
    std::fill(lanes.begin(), lanes.end(), 0.0f);
    for (int s = 0; s < nsb; ++s) {
      UnpackK(T, W.Row(r) + s * bytes, &u);
      for (int i = 0; i < n; ++i) {
        const int8_t* xq = A->KQ(i) + kQK * s;
        const int16_t* bs = A->KBSum(i) + 16 * s;
        const float dx = A->KD(i)[s];
        for (int j = 0; j < 8; ++j) {
          int32_t isum = 0;
          for (int e0 = 4 * j; e0 < kQK; e0 += 32)
            for (int e = e0; e < e0 + 4; ++e) isum += u.scale[e / 16] * (u.q[e] * xq[e]);
          isum -= u.bias * (u.scale[2 * j] * bs[2 * j] + u.scale[2 * j + 1] * bs[2 * j + 1]);
          float& l = lanes[size_t(i) * 8 + j];
          l = l + (u.d * dx) * static_cast<float>(isum);
          if (u.has_min) {
            const int32_t msum = u.min[2 * j] * bs[2 * j] + u.min[2 * j + 1] * bs[2 * j + 1];
            l = l - (u.dmin * dx) * static_cast<float>(msum);
          }
        }
      }
    }
    for (int i = 0; i < n; ++i) {
      const float* l = &lanes[size_t(i) * 8];
      Y[size_t(i) * W.rows + r] = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
    }
  }
}

}  // namespace

RowsKernelFn KQuantRowsScalar(QType type) {
  return ForTypeIn<QGroup::kKQuant, RowsKernelFn>(type, [](auto t) -> RowsKernelFn {
    return KRowsScalar<decltype(t)::value>;
  });
}

}  // namespace specsweep
