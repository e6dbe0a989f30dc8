// The 16-row interleaved layout of Q8_0, Q4_0 and the 32-value-block types Q4_1, Q5_0,
// Q5_1, IQ4_NL, IQ4_XS (Layout::kPacked16), made for VNNI kernels: one 64-byte vector
// holds 4 consecutive elements of 16 rows, so one vpdpbusd with 4 broadcast activation
// bytes advances 16 dot products at once (Q8_0/Q4_0: a block's integer sum ends up whole
// in one lane, ready for its scale; the other types: the 4-value sums of the reference's
// lane order, quant/legacy_quants.h). The bytes are the ggml blocks' fields rearranged,
// so the weights streamed per token do not change (IQ4_XS: + 2 bytes per 256 values);
// only a group's tail is padded to 64 bytes.
//
// Rows are grouped by 16 (the last group padded with zero rows); each group holds, for
// its nb = cols_padded / 32 blocks, first the quants of every block, then the high bits
// (Q5_0/Q5_1), then the scales:
//   group g:  [nb][QuantBytes] quants | [nb][64] high bits | [nb][ScaleBytes] scales | pad to 64
//   4-bit block (256 bytes; Q4_0 and the others): 4 chunks of 64 bytes; byte 4 lane + i of
//     chunk ch holds element 8 ch + i (low nibble) and 8 ch + 4 + i (high nibble) of row
//     16 g + lane, as in ggml (Q4_0: nibble = value + 8; IQ4: the code-book index).
//   Q8_0 block (512 bytes): 8 chunks of 64 bytes; byte 4 lane + i of chunk ch holds
//     element 4 ch + i of row 16 g + lane, stored as value + 128 (an unsigned byte).
//   high bits (64 bytes): byte 4 lane + i, bit k = bit 4 of element 4 k + i of that row.
//   scales: [16] f16 d (row order); Q4_1/Q5_1 then [16] f16 m; IQ4_XS [16] bytes ls (the
//     6-bit sub-block scale, d (ls - 32)) and, after all blocks, [nb/8][16] f16 super d.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/legacy_quants.h"
#include "quant/qmatrix.h"

namespace specsweep::packed {

constexpr int kGroupRows = 16;

// True if `type` has the packed layout.
constexpr bool Packable(QType type) { return Traits(type).packed16; }
// Bytes of one 32-wide block of a 16-row group: quants, high bits, scales (IQ4_XS: without
// its super-block scales, SuperBytes per 8 blocks).
constexpr int QuantBytes(QType type) { return type == QType::Q8_0 ? 512 : 256; }
constexpr int HighBytes(QType type) { return type == QType::Q5_0 || type == QType::Q5_1 ? 64 : 0; }
constexpr int ScaleBytes(QType type) { return type == QType::IQ4_XS ? 16 : HasMin(type) ? 64 : 32; }
constexpr int kSuperBytes = 32;
inline size_t GroupBytes(QType type, int nb) {
  const size_t used = size_t(nb) * (QuantBytes(type) + HighBytes(type) + ScaleBytes(type)) +
                      (type == QType::IQ4_XS ? size_t(nb / 8) * kSuperBytes : 0);
  return (used + 63) / 64 * 64;
}

inline int Groups(const QMatrix& m) { return (m.rows + kGroupRows - 1) / kGroupRows; }
inline const uint8_t* Group(const QMatrix& m, int g) { return m.data.data() + size_t(g) * m.group_bytes; }
// The scale section of a group (after its quants and high bits).
inline const uint8_t* ScaleBytesOf(const QMatrix& m, const uint8_t* group) {
  return group + size_t(m.cols_padded / 32) * (QuantBytes(m.type) + HighBytes(m.type));
}
inline const uint16_t* Scales(const QMatrix& m, const uint8_t* group) {
  return reinterpret_cast<const uint16_t*>(ScaleBytesOf(m, group));
}

// Group g's sections (see above): quants [nb][QuantBytes], high bits [nb][64], scales
// [nb][ScaleBytes], IQ4_XS's super-block d [nb/8][16].
struct GroupSections {
  const uint8_t *quants, *high, *scales, *super;
};
inline GroupSections Sections(const QMatrix& m, int g) {
  const uint8_t* group = Group(m, g);
  const uint8_t* scales = ScaleBytesOf(m, group);
  return {group, group + size_t(m.cols_padded / 32) * QuantBytes(m.type), scales,
          scales + size_t(m.cols_padded / 32) * ScaleBytes(m.type)};
}

// Byte offsets in m.data of row r's 32-wide block b: where its quants start (element j
// at + QuantByte(type, j)) and its f16 scale.
inline size_t QuantsOffset(const QMatrix& m, int r, int b) {
  return size_t(r / kGroupRows) * m.group_bytes + size_t(b) * QuantBytes(m.type) + 4 * (r % kGroupRows);
}
// The scale section of row r's group, and within it block b's share.
inline size_t ScaleBase(const QMatrix& m, int r, int b) {
  return size_t(r / kGroupRows) * m.group_bytes +
         size_t(m.cols_padded / 32) * (QuantBytes(m.type) + HighBytes(m.type)) + size_t(b) * ScaleBytes(m.type);
}
// f16 d (IQ4_XS: byte ls) of row r's block b; + 2 * kGroupRows: its f16 m.
inline size_t ScaleOffset(const QMatrix& m, int r, int b) {
  return ScaleBase(m, r, b) + (m.type == QType::IQ4_XS ? 1 : 2) * (r % kGroupRows);
}
// Q5_0/Q5_1: the 4 high-bit bytes of row r's block b; IQ4_XS: the f16 d of super-block b / 8.
inline size_t HighOffset(const QMatrix& m, int r, int b) {
  return size_t(r / kGroupRows) * m.group_bytes + size_t(m.cols_padded / 32) * QuantBytes(m.type) +
         size_t(b) * HighBytes(m.type) + 4 * (r % kGroupRows);
}
inline size_t SuperOffset(const QMatrix& m, int r, int b) {
  return ScaleBase(m, r, m.cols_padded / 32) + size_t(b / 8) * kSuperBytes + 2 * (r % kGroupRows);
}
inline int QuantByte(QType type, int j) { return type != QType::Q8_0 ? 64 * (j / 8) + j % 4 : 64 * (j / 4) + j % 4; }
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

// Q4_1/Q5_0/Q5_1/IQ4_NL/IQ4_XS: row r's ggml bytes (row_bytes) from a kPacked16 matrix, and
// row r of a row-layout matrix m into the kPacked16 matrix p (packed_legacy.cpp).
void UnpackLegacyRow(const QMatrix& p, int r, uint8_t* row);
void PackLegacyRow(const QMatrix& m, int r, QMatrix& p);

// Re-lays a row-layout packable matrix out as kPacked16, and a float one wider than
// QMatrix::kColChunk as kColChunks; Unpack returns either to rows. Bytes round-trip
// exactly. Other types and layouts are returned unchanged.
QMatrix Pack(const QMatrix& m);
QMatrix Unpack(const QMatrix& m);

}  // namespace specsweep::packed
