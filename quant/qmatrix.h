// A 2-D weight matrix in any QType, row-major: rows are output features, columns the
// reduction dimension. Quantized rows are zero-padded up to a whole number of blocks
// (cols_padded); kernels run over cols_padded and activations are zero-padded to match,
// so padding never changes a result. inspect reports every padded tensor. Q8_0/Q4_0 and
// Q4_1/Q5_0/Q5_1/IQ4_NL/IQ4_XS matrices may instead be held in the 16-row interleaved
// layout of the VNNI kernels (quant/packed.h); Row() is then meaningless.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "quant/aligned_buffer.h"
#include "quant/qtype.h"

namespace specsweep {

enum class Layout : uint8_t {
  kRows,       // row r at data + r * row_bytes, ggml block layout
  kPacked16,   // Q8_0/Q4_0/Q4_1..IQ4_XS: groups of 16 rows interleaved (quant/packed.h)
  kColChunks,  // F32/F16/BF16 wider than kColChunk: 16-row blocks in column chunks (below)
};

struct QMatrix {
  QType type = QType::F32;
  Layout layout = Layout::kRows;
  int rows = 0;
  int cols = 0;            // logical row length
  int cols_padded = 0;     // row length in storage: cols rounded up to BlockSize(type)
  size_t row_bytes = 0;    // as ggml rows (the weight bytes of a row in any layout)
  size_t group_bytes = 0;  // kPacked16: bytes per 16-row group
  AlignedBuffer data;      // kRows: [rows][row_bytes]; kPacked16: [groups][group_bytes]

  const uint8_t* Row(int r) const { return data.data() + static_cast<size_t>(r) * row_bytes; }
  uint8_t* Row(int r) { return data.data() + static_cast<size_t>(r) * row_bytes; }

  // Layout::kColChunks, for float matrices wider than kColChunk: the rows in blocks of
  // kChunkRows (the last may be shorter), each block's columns in chunks of kColChunk
  // (the last may be narrower), and within a chunk the block's rows one after another:
  //   block b: [chunk k][row of the block][columns of chunk k]
  // This is the order in which the blocked float kernels walk a block when they keep n
  // <= 8 activation rows of one chunk in L1 (quant/kernel_driver.h), so they read the
  // weights in address order; on row layout that walk jumps between rows, a third slower
  // (docs/kernels.md, "Column chunks of float matrices").
  static constexpr int kColChunk = 768, kChunkRows = 16;
  // Float types: element c of row r, followed by the rest of its column chunk (the rest
  // of the row on row layout).
  const uint8_t* Span(int r, int c) const {
    const size_t elt = row_bytes / static_cast<size_t>(cols_padded);
    if (layout != Layout::kColChunks) return Row(r) + elt * c;
    const int b = r / kChunkRows, k = c / kColChunk;
    const int block_rows = rows - b * kChunkRows < kChunkRows ? rows - b * kChunkRows : kChunkRows;
    const int width = cols - k * kColChunk < kColChunk ? cols - k * kColChunk : kColChunk;
    return Row(b * kChunkRows) +
           elt * (size_t(block_rows) * k * kColChunk + size_t(r % kChunkRows) * width + (c - k * kColChunk));
  }
  uint8_t* Span(int r, int c) { return const_cast<uint8_t*>(static_cast<const QMatrix&>(*this).Span(r, c)); }
  // Columns per span: kColChunk on Layout::kColChunks (the last span of a row may be
  // narrower), the whole row otherwise.
  int SpanCols() const { return layout == Layout::kColChunks ? kColChunk : cols; }
  size_t bytes() const {  // as held in memory
    return layout == Layout::kRows ? static_cast<size_t>(rows) * row_bytes : data.size();
  }
  bool padded() const { return cols_padded != cols; }
};

// Allocates a zeroed matrix of the given shape and type.
QMatrix MakeQMatrix(QType type, int rows, int cols);
// A row-layout matrix of the given shape and type holding `data` (rows * row_bytes bytes,
// e.g. AlignedBuffer::Uninitialized or a View into a mapped file).
QMatrix MakeQMatrix(QType type, int rows, int cols, AlignedBuffer data);
// Quantizes F32 weights w[rows][cols] (ggml rounding semantics for Q8_0/Q4_0).
QMatrix Quantize(const float* w, int rows, int cols, QType type);
// Re-encodes a matrix into another type (through F32).
QMatrix Convert(const QMatrix& m, QType type);
// out[cols] = row r in F32.
void DequantizeRow(const QMatrix& m, int r, float* out);
std::vector<float> Dequantize(const QMatrix& m);  // [rows][cols]

}  // namespace specsweep
