// Conversion between ggml's row layout and the 16-row interleaved layout (packed.h).
#include "quant/packed.h"

#include "quant/blocks.h"

namespace specsweep::packed {
namespace {

// Byte offset of element c of row r in the packed matrix, and the bit shift of its nibble.
struct Where {
  size_t byte;
  int shift;
};
Where Locate(const QMatrix& m, int r, int c) {
  const size_t base = size_t(r / kGroupRows) * m.group_bytes + size_t(c / 32) * QuantBytes(m.type);
  const int lane = r % kGroupRows, j = c % 32;
  if (m.type == QType::Q4_0) return {base + 64 * (j / 8) + 4 * lane + j % 4, j % 8 < 4 ? 0 : 4};
  return {base + 64 * (j / 4) + 4 * lane + j % 4, 0};
}
size_t ScaleOffset(const QMatrix& m, int r, int b) {
  return size_t(r / kGroupRows) * m.group_bytes + size_t(m.cols_padded / 32) * QuantBytes(m.type) +
         2 * (16 * size_t(b) + r % kGroupRows);
}

}  // namespace

QMatrix Pack(const QMatrix& m) {
  if (!Packable(m.type) || m.layout != Layout::kRows) return m;
  QMatrix p = m;
  const int nb = m.cols_padded / 32;
  p.layout = Layout::kPacked16;
  p.group_bytes = (size_t(nb) * (QuantBytes(m.type) + 32) + 63) / 64 * 64;
  p.data = AlignedBuffer(size_t(Groups(m)) * p.group_bytes);
  uint8_t* out = p.data.data();
  for (int r = 0; r < m.rows; ++r) {
    const uint8_t* row = m.Row(r);
    for (int b = 0; b < nb; ++b) {
      uint16_t d;
      if (m.type == QType::Q4_0) {
        const BlockQ4_0& blk = reinterpret_cast<const BlockQ4_0*>(row)[b];
        d = blk.d;
        for (int j = 0; j < 32; ++j) {
          const int nib = j < 16 ? blk.qs[j] & 0x0F : blk.qs[j - 16] >> 4;
          const Where w = Locate(p, r, 32 * b + j);
          out[w.byte] = static_cast<uint8_t>(out[w.byte] | nib << w.shift);
        }
      } else {
        const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(row)[b];
        d = blk.d;
        for (int j = 0; j < 32; ++j) out[Locate(p, r, 32 * b + j).byte] = static_cast<uint8_t>(blk.qs[j] + 128);
      }
      const size_t so = ScaleOffset(p, r, b);
      out[so] = static_cast<uint8_t>(d & 0xFF);
      out[so + 1] = static_cast<uint8_t>(d >> 8);
    }
  }
  return p;
}

QMatrix Unpack(const QMatrix& m) {
  if (m.layout != Layout::kPacked16) return m;
  QMatrix u = MakeQMatrix(m.type, m.rows, m.cols);
  const int nb = m.cols_padded / 32;
  for (int r = 0; r < m.rows; ++r) {
    uint8_t* row = u.Row(r);
    for (int b = 0; b < nb; ++b) {
      const uint16_t d = Scale(m, r, b);
      if (m.type == QType::Q4_0) {
        BlockQ4_0& blk = reinterpret_cast<BlockQ4_0*>(row)[b];
        blk.d = d;
        for (int j = 0; j < 16; ++j)
          blk.qs[j] = static_cast<uint8_t>((Value(m, r, 32 * b + j) + 8) | (Value(m, r, 32 * b + j + 16) + 8) << 4);
      } else {
        BlockQ8_0& blk = reinterpret_cast<BlockQ8_0*>(row)[b];
        blk.d = d;
        for (int j = 0; j < 32; ++j) blk.qs[j] = static_cast<int8_t>(Value(m, r, 32 * b + j));
      }
    }
  }
  return u;
}

}  // namespace specsweep::packed
