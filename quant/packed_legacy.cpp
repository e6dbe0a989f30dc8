// Q4_1/Q5_0/Q5_1/IQ4_NL/IQ4_XS rows <-> Layout::kPacked16 (quant/packed.h): the fields of
// each ggml block (nibbles, high bits, f16 d and m, IQ4_XS's 6-bit sub-block scales and
// super-block d) moved to their places in the 16-row group; bytes round-trip exactly.
#include <cstring>

#include "quant/blocks_legacy.h"
#include "quant/packed.h"

namespace specsweep::packed {
namespace {

// One 32-value block's fields as stored (IQ4_XS: sub-block b of its super-block).
struct Fields {
  uint8_t nibble[32];
  uint32_t high = 0;  // bit j: bit 4 of element j (Q5_0/Q5_1)
  uint16_t d = 0, m = 0;
  uint8_t ls = 0;  // IQ4_XS: 6-bit sub-block scale
};

// Row-layout qs of 16 bytes: element j < 16 low nibble of qs[j], else high nibble of qs[j - 16].
void ReadNibbles(const uint8_t* qs, Fields* f) {
  for (int j = 0; j < 32; ++j) f->nibble[j] = j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4;
}
void WriteNibbles(const Fields& f, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(f.nibble[j] | f.nibble[j + 16] << 4);
}

Fields Read(QType type, const uint8_t* row, int b) {
  Fields f;
  switch (type) {
    case QType::Q4_1: {
      const auto& k = reinterpret_cast<const BlockQ4_1*>(row)[b];
      f.d = k.d, f.m = k.m;
      ReadNibbles(k.qs, &f);
      break;
    }
    case QType::Q5_0: {
      const auto& k = reinterpret_cast<const BlockQ5_0*>(row)[b];
      f.d = k.d;
      std::memcpy(&f.high, k.qh, 4);
      ReadNibbles(k.qs, &f);
      break;
    }
    case QType::Q5_1: {
      const auto& k = reinterpret_cast<const BlockQ5_1*>(row)[b];
      f.d = k.d, f.m = k.m;
      std::memcpy(&f.high, k.qh, 4);
      ReadNibbles(k.qs, &f);
      break;
    }
    case QType::IQ4_NL: {
      const auto& k = reinterpret_cast<const BlockIQ4_NL*>(row)[b];
      f.d = k.d;
      ReadNibbles(k.qs, &f);
      break;
    }
    default: {  // IQ4_XS
      const auto& k = reinterpret_cast<const BlockIQ4_XS*>(row)[b / 8];
      const int s = b % 8;
      f.d = k.d;
      f.ls = static_cast<uint8_t>(((k.scales_l[s / 2] >> 4 * (s % 2)) & 0x0F) | ((k.scales_h >> 2 * s) & 3) << 4);
      ReadNibbles(k.qs + 16 * s, &f);
    }
  }
  return f;
}

void Write(QType type, const Fields& f, uint8_t* row, int b) {
  switch (type) {
    case QType::Q4_1: {
      auto& k = reinterpret_cast<BlockQ4_1*>(row)[b];
      k.d = f.d, k.m = f.m;
      WriteNibbles(f, k.qs);
      return;
    }
    case QType::Q5_0: {
      auto& k = reinterpret_cast<BlockQ5_0*>(row)[b];
      k.d = f.d;
      std::memcpy(k.qh, &f.high, 4);
      WriteNibbles(f, k.qs);
      return;
    }
    case QType::Q5_1: {
      auto& k = reinterpret_cast<BlockQ5_1*>(row)[b];
      k.d = f.d, k.m = f.m;
      std::memcpy(k.qh, &f.high, 4);
      WriteNibbles(f, k.qs);
      return;
    }
    case QType::IQ4_NL: {
      auto& k = reinterpret_cast<BlockIQ4_NL*>(row)[b];
      k.d = f.d;
      WriteNibbles(f, k.qs);
      return;
    }
    default: {  // IQ4_XS: the super-block's fields are written by each of its sub-blocks
      auto& k = reinterpret_cast<BlockIQ4_XS*>(row)[b / 8];
      const int s = b % 8;
      k.d = f.d;
      if (s == 0) k.scales_h = 0, std::memset(k.scales_l, 0, sizeof k.scales_l);
      k.scales_l[s / 2] = static_cast<uint8_t>(k.scales_l[s / 2] | (f.ls & 0x0F) << 4 * (s % 2));
      k.scales_h = static_cast<uint16_t>(k.scales_h | (f.ls >> 4) << 2 * s);
      WriteNibbles(f, k.qs + 16 * s);
    }
  }
}

}  // namespace

void UnpackLegacyRow(const QMatrix& p, int r, uint8_t* row) {
  const uint8_t* data = p.data.data();
  for (int b = 0; b < p.cols_padded / 32; ++b) {
    Fields f;
    const uint8_t* q = data + QuantsOffset(p, r, b);
    for (int j = 0; j < 32; ++j) f.nibble[j] = (q[QuantByte(p.type, j)] >> NibbleShift(j)) & 0x0F;
    if (HighBytes(p.type))
      for (int j = 0; j < 32; ++j) f.high |= uint32_t(data[HighOffset(p, r, b) + j % 4] >> (j / 4) & 1) << j;
    if (p.type == QType::IQ4_XS) {
      f.ls = data[ScaleOffset(p, r, b)];
      std::memcpy(&f.d, data + SuperOffset(p, r, b), 2);
    } else {
      std::memcpy(&f.d, data + ScaleOffset(p, r, b), 2);
      if (HasMin(p.type)) std::memcpy(&f.m, data + ScaleOffset(p, r, b) + 2 * kGroupRows, 2);
    }
    Write(p.type, f, row, b);
  }
}

void PackLegacyRow(const QMatrix& m, int r, QMatrix& p) {
  uint8_t* data = p.data.data();
  for (int b = 0; b < m.cols_padded / 32; ++b) {
    const Fields f = Read(m.type, m.Row(r), b);
    uint8_t* q = data + QuantsOffset(p, r, b);
    for (int j = 0; j < 32; ++j) q[QuantByte(p.type, j)] |= static_cast<uint8_t>(f.nibble[j] << NibbleShift(j));
    if (HighBytes(p.type))
      for (int j = 0; j < 32; ++j)
        data[HighOffset(p, r, b) + j % 4] |= static_cast<uint8_t>((f.high >> j & 1) << (j / 4));
    if (p.type == QType::IQ4_XS) {
      data[ScaleOffset(p, r, b)] = f.ls;
      std::memcpy(data + SuperOffset(p, r, b), &f.d, 2);
    } else {
      std::memcpy(data + ScaleOffset(p, r, b), &f.d, 2);
      if (HasMin(p.type)) std::memcpy(data + ScaleOffset(p, r, b) + 2 * kGroupRows, &f.m, 2);
    }
  }
}

}  // namespace specsweep::packed
