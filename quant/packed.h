// The 16-row interleaved layout of Q8_0 and Q4_0 matrices (Layout::kPacked16), made
// for VNNI kernels: one 64-byte vector holds 4 consecutive elements of 16 rows, so one
// vpdpbusd with 4 broadcast activation bytes advances 16 dot products at once, and a
// block's integer sum ends up whole in one lane, ready for its scale. The bytes are the
// ggml blocks' bytes rearranged (18 or 34 per row and block), so the weights streamed
// per token do not change; only a group's tail is padded to 64 bytes.
//
// Rows are grouped by 16 (the last group padded with zero rows); each group holds, for
// its nb = cols_padded / 32 blocks, first the quants of every block, then the f16 scales:
//   group g:  [nb][QuantBytes] quants | [nb][16] f16 scales (row order) | pad to 64
//   Q4_0 block (256 bytes): 4 chunks of 64 bytes; byte 4 lane + i of chunk ch holds
//     element 8 ch + i (low nibble) and 8 ch + 4 + i (high nibble) of row 16 g + lane,
//     as in ggml: nibble = value + 8.
//   Q8_0 block (512 bytes): 8 chunks of 64 bytes; byte 4 lane + i of chunk ch holds
//     element 4 ch + i of row 16 g + lane, stored as value + 128 (an unsigned byte).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/qmatrix.h"

namespace specsweep::packed {

constexpr int kGroupRows = 16;

// True if `type` has the packed layout (Q8_0, Q4_0).
constexpr bool Packable(QType type) { return type == QType::Q8_0 || type == QType::Q4_0; }
// Quant bytes of one 32-wide block of a 16-row group.
constexpr int QuantBytes(QType type) { return type == QType::Q4_0 ? 256 : 512; }

inline int Groups(const QMatrix& m) { return (m.rows + kGroupRows - 1) / kGroupRows; }
inline const uint8_t* Group(const QMatrix& m, int g) { return m.data.data() + size_t(g) * m.group_bytes; }
inline const uint16_t* Scales(const QMatrix& m, const uint8_t* group) {
  return reinterpret_cast<const uint16_t*>(group + size_t(m.cols_padded / 32) * QuantBytes(m.type));
}

// Byte offsets in m.data of row r's 32-wide block b: where its quants start (element j
// at + QuantByte(type, j)) and its f16 scale.
inline size_t QuantsOffset(const QMatrix& m, int r, int b) {
  return size_t(r / kGroupRows) * m.group_bytes + size_t(b) * QuantBytes(m.type) + 4 * (r % kGroupRows);
}
inline size_t ScaleOffset(const QMatrix& m, int r, int b) {
  return size_t(r / kGroupRows) * m.group_bytes + size_t(m.cols_padded / 32) * QuantBytes(m.type) +
         2 * (kGroupRows * size_t(b) + r % kGroupRows);
}
inline int QuantByte(QType type, int j) { return type == QType::Q4_0 ? 64 * (j / 8) + j % 4 : 64 * (j / 4) + j % 4; }
// Q4_0: the nibble of element j in its byte.
inline int NibbleShift(int j) { return j % 8 < 4 ? 0 : 4; }

// Signed integer value of element c of row r.
inline int Value(const QMatrix& m, int r, int c) {
  const uint8_t byte = m.data.data()[QuantsOffset(m, r, c / 32) + QuantByte(m.type, c % 32)];
  return m.type == QType::Q4_0 ? ((byte >> NibbleShift(c % 32)) & 0x0F) - 8 : byte - 128;
}
// f16 bits of the scale of row r's 32-wide block b.
inline uint16_t Scale(const QMatrix& m, int r, int b) {
  uint16_t d;
  std::memcpy(&d, m.data.data() + ScaleOffset(m, r, b), sizeof d);
  return d;
}

// Re-lays a row-layout Q8_0/Q4_0 matrix out as kPacked16, and a float one wider than
// QMatrix::kColChunk as kColChunks; Unpack returns either to rows. Bytes round-trip
// exactly. Other types and layouts are returned unchanged.
QMatrix Pack(const QMatrix& m);
QMatrix Unpack(const QMatrix& m);

}  // namespace specsweep::packed
