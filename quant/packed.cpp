// Conversion between ggml's row layout and the kernels' layouts: 16-row interleaved
// (packed.h) and column chunks (QMatrix::Span).
#include "quant/packed.h"

#include <algorithm>
#include <cstring>

#include "quant/blocks.h"

namespace specsweep::packed {
namespace {

// Calls f(r, b) for every row r and 32-wide block b of m. Rows run in parallel: in
// either layout two rows never share a byte.
template <class F>
void ForEachBlock(const QMatrix& m, F&& f) {
  const int nb = m.cols_padded / 32;
#pragma omp parallel for schedule(static) if (size_t(m.rows) * m.row_bytes >= (1 << 20))
  for (int r = 0; r < m.rows; ++r)
    for (int b = 0; b < nb; ++b) f(r, b);
}

// m's shape and type with no bytes (copying m would copy its bytes too).
QMatrix ShapeOf(const QMatrix& m) {
  QMatrix s;
  s.type = m.type, s.layout = m.layout, s.rows = m.rows, s.cols = m.cols, s.cols_padded = m.cols_padded;
  s.row_bytes = m.row_bytes, s.group_bytes = m.group_bytes;
  return s;
}

// Row layout <-> Layout::kColChunks (qmatrix.h): the same bytes, moved span by span
// (float types have no padding, so the spans fill the whole buffer).
QMatrix ChunkColumns(const QMatrix& m, Layout to) {
  QMatrix out = ShapeOf(m);
  out.layout = to;
  out.data = AlignedBuffer::Uninitialized(m.bytes());
  const size_t elt = m.row_bytes / m.cols_padded;
  for (int r = 0; r < m.rows; ++r)
    for (int c0 = 0; c0 < m.cols; c0 += QMatrix::kColChunk)
      std::memcpy(out.Span(r, c0), m.Span(r, c0), elt * std::min(QMatrix::kColChunk, m.cols - c0));
  return out;
}

}  // namespace

QMatrix Pack(const QMatrix& m) {
  if (m.layout != Layout::kRows) return m;
  if (!IsQuantized(m.type)) return m.cols > QMatrix::kColChunk ? ChunkColumns(m, Layout::kColChunks) : m;
  if (!Packable(m.type)) return m;
  QMatrix p = ShapeOf(m);
  const int nb = m.cols_padded / 32, groups = Groups(m);
  p.layout = Layout::kPacked16;
  p.group_bytes = GroupBytes(m.type, nb);
  // Every byte is written once: quants and scales of each row, zeros for the rows of a
  // partial last group and for each group's tail (the other types' fields are or-ed
  // into a zeroed group).
  p.data = AlignedBuffer::Uninitialized(size_t(groups) * p.group_bytes);
  uint8_t* out = p.data.data();
  const bool legacy = IsLegacyQuant(m.type);
  const size_t used = legacy ? 0 : size_t(nb) * (QuantBytes(m.type) + 32);  // legacy: all of it is tail
#pragma omp parallel for schedule(static) if (size_t(m.rows) * m.row_bytes >= (1 << 20))
  for (int g = 0; g < groups; ++g) {
    uint8_t* group = out + size_t(g) * p.group_bytes;
    const int r1 = std::min(m.rows, kGroupRows * (g + 1));
    if (r1 - kGroupRows * g < kGroupRows) std::memset(group, 0, used);
    std::memset(group + used, 0, p.group_bytes - used);
    if (legacy) {
      for (int r = kGroupRows * g; r < r1; ++r) PackLegacyRow(m, r, p);
      continue;
    }
    for (int r = kGroupRows * g; r < r1; ++r)
      for (int b = 0; b < nb; ++b) {
        uint8_t* q = out + QuantsOffset(p, r, b);
        if (m.type == QType::Q4_0) {
          const BlockQ4_0& blk = reinterpret_cast<const BlockQ4_0*>(m.Row(r))[b];
          std::memcpy(out + ScaleOffset(p, r, b), &blk.d, sizeof blk.d);
          // Byte i of chunk ch: element 8 ch + i (low nibble) and 8 ch + 4 + i (high). In
          // ggml, element j < 16 is the low nibble of qs[j] and j >= 16 the high one of
          // qs[j - 16], so chunks 0-1 take low nibbles and 2-3 high ones, byte by byte
          // (a 4 GB Q4_0 model spends seconds here at one nibble per step).
          for (int ch = 0; ch < 2; ++ch)
            for (int i = 0; i < 4; ++i) {
              const uint8_t lo = blk.qs[8 * ch + i], hi = blk.qs[8 * ch + 4 + i];
              q[64 * ch + i] = static_cast<uint8_t>((lo & 0x0F) | (hi << 4));
              q[64 * (ch + 2) + i] = static_cast<uint8_t>((lo >> 4) | (hi & 0xF0));  // elements + 16
            }
        } else {
          const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(m.Row(r))[b];
          std::memcpy(out + ScaleOffset(p, r, b), &blk.d, sizeof blk.d);
          for (int ch = 0; ch < 8; ++ch) {  // 4 consecutive elements per chunk, + 128 as bytes
            uint32_t v;
            std::memcpy(&v, blk.qs + 4 * ch, sizeof v);
            v ^= 0x80808080u;
            std::memcpy(q + 64 * ch, &v, sizeof v);
          }
        }
      }
  }
  return p;
}

QMatrix Unpack(const QMatrix& m) {
  if (m.layout == Layout::kColChunks) return ChunkColumns(m, Layout::kRows);
  if (m.layout != Layout::kPacked16) return m;
  QMatrix u = MakeQMatrix(m.type, m.rows, m.cols);
  if (IsLegacyQuant(m.type)) {
#pragma omp parallel for schedule(static) if (size_t(m.rows) * m.row_bytes >= (1 << 20))
    for (int r = 0; r < m.rows; ++r) UnpackLegacyRow(m, r, u.Row(r));
    return u;
  }
  ForEachBlock(u, [&](int r, int b) {
    if (m.type == QType::Q4_0) {
      BlockQ4_0& blk = reinterpret_cast<BlockQ4_0*>(u.Row(r))[b];
      blk.d = Scale(m, r, b);
      for (int j = 0; j < 32; ++j)  // ggml: element j + 16 is the high nibble of qs[j]
        blk.qs[j % 16] |= static_cast<uint8_t>((Value(m, r, 32 * b + j) + 8) << (j < 16 ? 0 : 4));
    } else {
      BlockQ8_0& blk = reinterpret_cast<BlockQ8_0*>(u.Row(r))[b];
      blk.d = Scale(m, r, b);
      for (int j = 0; j < 32; ++j) blk.qs[j] = static_cast<int8_t>(Value(m, r, 32 * b + j));
    }
  });
  return u;
}

}  // namespace specsweep::packed
