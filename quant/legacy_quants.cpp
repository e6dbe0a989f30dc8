// Unpacking, dequantization and the scalar reference kernel of the
// Q4_1/Q5_0/Q5_1/IQ4_NL/IQ4_XS formats (semantics in quant/legacy_quants.h).
#include "quant/legacy_quants.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "quant/blocks_legacy.h"
#include "quant/float_order.h"
#include "quant/fp16.h"
#include "quant/packed.h"

namespace specsweep {
namespace {

// Nibble j of a 16-byte qs: value j low nibbles, value j + 16 high nibbles.
inline int Nibble(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4; }
inline int HighBit(const uint8_t* qh, int j) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  return int(h >> j & 1) << 4;
}

}  // namespace

void UnpackLegacy(QType type, const uint8_t* row, int b, LegacyBlock* u) {
  u->m = 0;
  switch (type) {
    case QType::Q4_1: {
      const auto& k = reinterpret_cast<const BlockQ4_1*>(row)[b];
      u->d = F16ToF32(k.d), u->m = F16ToF32(k.m);
      for (int j = 0; j < 32; ++j) u->q[j] = int8_t(Nibble(k.qs, j));
      return;
    }
    case QType::Q5_0: {
      const auto& k = reinterpret_cast<const BlockQ5_0*>(row)[b];
      u->d = F16ToF32(k.d);
      for (int j = 0; j < 32; ++j) u->q[j] = int8_t((Nibble(k.qs, j) | HighBit(k.qh, j)) - 16);
      return;
    }
    case QType::Q5_1: {
      const auto& k = reinterpret_cast<const BlockQ5_1*>(row)[b];
      u->d = F16ToF32(k.d), u->m = F16ToF32(k.m);
      for (int j = 0; j < 32; ++j) u->q[j] = int8_t(Nibble(k.qs, j) | HighBit(k.qh, j));
      return;
    }
    case QType::IQ4_NL: {
      const auto& k = reinterpret_cast<const BlockIQ4_NL*>(row)[b];
      u->d = F16ToF32(k.d);
      for (int j = 0; j < 32; ++j) u->q[j] = kIq4nlValues[Nibble(k.qs, j)];
      return;
    }
    case QType::IQ4_XS: {
      const auto& k = reinterpret_cast<const BlockIQ4_XS*>(row)[b / 8];
      const int s = b % 8;
      const int ls = ((k.scales_l[s / 2] >> 4 * (s % 2)) & 0x0F) | ((k.scales_h >> 2 * s) & 3) << 4;
      u->d = F16ToF32(k.d) * static_cast<float>(ls - 32);  // exact: 11 x 6 significant bits
      for (int j = 0; j < 32; ++j) u->q[j] = kIq4nlValues[Nibble(k.qs + 16 * s, j)];
      return;
    }
    default: Fail("unpack: type {}: not a Q4_1/Q5_0/Q5_1/IQ4_NL/IQ4_XS type", QTypeName(type));
  }
}

void DequantizeRowLegacy(QType type, const uint8_t* row, int cols, float* out) {
  LegacyBlock u;
  for (int b = 0; 32 * b < cols; ++b) {
    UnpackLegacy(type, row, b, &u);
    for (int j = 0; j < 32 && 32 * b + j < cols; ++j) {
      float v = static_cast<float>(u.q[j]) * u.d;  // ggml: multiply, then add the min
      if (HasMin(type)) v = v + u.m;
      out[32 * b + j] = v;
    }
  }
}

namespace {

// Either layout: a packed row is first put back in ggml's layout, so both run the same
// arithmetic on the same values.
template <QType T>
void LegacyRowsScalarT(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  const int nb = W.cols_padded / 32;
  std::vector<LegacyBlock> blocks(nb);                                          // [nb] one row, unpacked once for all n
  std::vector<uint8_t> bytes(W.layout == Layout::kPacked16 ? W.row_bytes : 0);  // [row_bytes] ggml row
  for (int r = r0; r < r1; ++r) {
    const uint8_t* row = W.Row(r);
    if (!bytes.empty()) packed::UnpackLegacyRow(W, r, bytes.data()), row = bytes.data();
    for (int b = 0; b < nb; ++b) UnpackLegacy(T, row, b, &blocks[b]);
    for (int i = 0; i < n; ++i) {
      const int8_t* xq = A->Q(i);
      const float* dx = A->D(i);
      float s[16] = {};
      for (int b = 0; b < nb; ++b) {
        const LegacyBlock& u = blocks[b];
        const float dd = u.d * dx[b], dm = u.m * dx[b];
        for (int j = 0; j < 8; ++j) {
          int32_t isum = 0, xsum = 0;
          for (int e = 4 * j; e < 4 * j + 4; ++e) {
            isum += u.q[e] * xq[32 * b + e];
            xsum += xq[32 * b + e];
          }
          float& l = s[8 * (b % 2) + j];
          l = std::fma(dd, static_cast<float>(isum), l);
          if constexpr (HasMin(T)) l = std::fma(dm, static_cast<float>(xsum), l);
        }
      }
      Y[size_t(i) * W.rows + r] = LaneTreeSum16(s);
    }
  }
}

}  // namespace

RowsKernelFn LegacyRowsScalar(QType type) {
  return ForLegacyType(type, [](auto t) -> RowsKernelFn { return LegacyRowsScalarT<decltype(t)::value>; });
}

}  // namespace specsweep
