// Conversion between ggml's row layout and the 16-row interleaved layout (packed.h).
#include "quant/packed.h"

#include "quant/blocks.h"

namespace specsweep::packed {
namespace {

// Element j of a ggml Q4_0 block as its stored nibble (value + 8).
int Nibble(const BlockQ4_0& b, int j) { return j < 16 ? b.qs[j] & 0x0F : b.qs[j - 16] >> 4; }
// Packed Q4_0: element j of a block is in byte 64 (j / 8) + j % 4 of the row's lane, low
// nibble for j % 8 < 4 (packed.h).
int Shift(int j) { return j % 8 < 4 ? 0 : 4; }

// Calls f(r, b, q, d) for every row r and 32-wide block b of the row-layout matrix `rows`,
// with q the first quant byte of (r, b) in the packed matrix `pk` (its bytes at q + 64 ch
// + i, see packed.h) and d its scale. Rows run in parallel: they never share a byte.
template <class F>
void ForEachBlock(const QMatrix& rows, const QMatrix& pk, uint8_t* pk_data, F&& f) {
  const int nb = rows.cols_padded / 32;
#pragma omp parallel for schedule(static) if (rows.bytes() >= (1 << 20))
  for (int r = 0; r < rows.rows; ++r) {
    uint8_t* group = pk_data + size_t(r / kGroupRows) * pk.group_bytes;
    const int lane = r % kGroupRows;
    auto* scales = reinterpret_cast<uint16_t*>(group + size_t(nb) * QuantBytes(rows.type));
    for (int b = 0; b < nb; ++b)
      f(r, b, group + size_t(b) * QuantBytes(rows.type) + 4 * lane, scales + 16 * b + lane);
  }
}

}  // namespace

QMatrix Pack(const QMatrix& m) {
  if (!Packable(m.type) || m.layout != Layout::kRows) return m;
  QMatrix p = m;
  const int nb = m.cols_padded / 32;
  p.layout = Layout::kPacked16;
  p.group_bytes = (size_t(nb) * (QuantBytes(m.type) + 32) + 63) / 64 * 64;
  p.data = AlignedBuffer(size_t(Groups(m)) * p.group_bytes);
  ForEachBlock(m, p, p.data.data(), [&](int r, int b, uint8_t* q, uint16_t* d) {
    if (m.type == QType::Q4_0) {
      const BlockQ4_0& blk = reinterpret_cast<const BlockQ4_0*>(m.Row(r))[b];
      *d = blk.d;
      for (int j = 0; j < 32; ++j) q[64 * (j / 8) + j % 4] |= static_cast<uint8_t>(Nibble(blk, j) << Shift(j));
    } else {
      const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(m.Row(r))[b];
      *d = blk.d;
      for (int j = 0; j < 32; ++j) q[64 * (j / 4) + j % 4] = static_cast<uint8_t>(blk.qs[j] + 128);
    }
  });
  return p;
}

QMatrix Unpack(const QMatrix& m) {
  if (m.layout != Layout::kPacked16) return m;
  QMatrix u = MakeQMatrix(m.type, m.rows, m.cols);
  // ForEachBlock only reads through its packed pointers here.
  ForEachBlock(u, m, const_cast<uint8_t*>(m.data.data()), [&](int r, int b, uint8_t* q, uint16_t* d) {
    if (m.type == QType::Q4_0) {
      BlockQ4_0& blk = reinterpret_cast<BlockQ4_0*>(u.Row(r))[b];
      blk.d = *d;
      for (int j = 0; j < 32; ++j) {
        const int nib = (q[64 * (j / 8) + j % 4] >> Shift(j)) & 0x0F;
        blk.qs[j % 16] |= static_cast<uint8_t>(nib << (j < 16 ? 0 : 4));  // ggml: j + 16 is the high nibble
      }
    } else {
      BlockQ8_0& blk = reinterpret_cast<BlockQ8_0*>(u.Row(r))[b];
      blk.d = *d;
      for (int j = 0; j < 32; ++j) blk.qs[j] = static_cast<int8_t>(q[64 * (j / 4) + j % 4] - 128);
    }
  });
  return u;
}

}  // namespace specsweep::packed
