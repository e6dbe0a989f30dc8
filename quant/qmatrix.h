// A 2-D weight matrix in any QType, row-major: rows are output features, columns the
// reduction dimension. Quantized rows are zero-padded up to a whole number of blocks
// (cols_padded); kernels run over cols_padded and activations are zero-padded to match,
// so padding never changes a result. inspect reports every padded tensor. Q8_0/Q4_0 and
// Q4_1/Q5_0/Q5_1/IQ4_NL/IQ4_XS matrices may instead be held in the 16-row interleaved
// layout of the VNNI kernels (quant/packed.h); Row() is then meaningless.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "quant/qtype.h"

namespace specsweep {

// 64-byte aligned byte buffer (AVX-512 loads) with value semantics. Its bytes are either
// owned and writable, or immutable: borrowed from a longer-lived owner (View: weights
// pointed to in a memory-mapped file) or frozen (Freeze). Copies of immutable bytes share
// them instead of copying (a tied classifier and embedding are one buffer); writing
// through the non-const data() makes a private copy first, so sharing is never visible.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);  // zeroed
  // Contents undefined, for buffers the caller fills completely: no page is written
  // twice (zeroing, then filling) and a large one is faulted in on huge pages.
  static AlignedBuffer Uninitialized(size_t bytes);
  // The `bytes` at p, immutable, kept alive by `owner` (p need not be 64-byte aligned:
  // only row-layout matrices, whose kernels use unaligned loads, are viewed).
  static AlignedBuffer View(const uint8_t* p, size_t bytes, std::shared_ptr<const void> owner);
  AlignedBuffer(const AlignedBuffer& o);
  AlignedBuffer& operator=(const AlignedBuffer& o);
  AlignedBuffer(AlignedBuffer&& o) noexcept { *this = std::move(o); }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  uint8_t* data() {  // copies immutable bytes first (copy on write)
    if (immutable_ && size_ > 0) Unshare();
    return ptr_;
  }
  const uint8_t* data() const { return ptr_; }
  size_t size() const { return size_; }
  // Makes the bytes immutable, so that copies share them.
  void Freeze() { immutable_ = true; }
  bool immutable() const { return immutable_; }

 private:
  void Unshare();
  std::shared_ptr<const void> owner_;  // frees the bytes (or keeps a view's source alive)
  uint8_t* ptr_ = nullptr;
  size_t size_ = 0;
  bool immutable_ = false;
};

// The kernel's transparent huge page mode: "always", "madvise" or "never" (the bracketed
// word of /sys/kernel/mm/transparent_hugepage/enabled), "unknown" where it cannot be read.
std::string TransparentHugePageMode();
// Whether AlignedBuffer::Uninitialized(bytes) is backed by huge pages: 2 MiB or more
// (its own mapping) and a mode that honours MADV_HUGEPAGE.
bool UninitializedOnHugePages(size_t bytes);

enum class Layout : uint8_t {
  kRows,       // row r at data + r * row_bytes, ggml block layout
  kPacked16,   // Q8_0/Q4_0/Q4_1..IQ4_XS: groups of 16 rows interleaved (quant/packed.h)
  kColChunks,  // F32/F16/BF16 wider than kColChunk: 16-row blocks in column chunks (below)
};

struct QMatrix {
  QType type = QType::F32;
  Layout layout = Layout::kRows;
  int rows = 0;
  int cols = 0;         // logical row length
  int cols_padded = 0;  // row length in storage: cols rounded up to BlockSize(type)
  size_t row_bytes = 0;     // as ggml rows (the weight bytes of a row in any layout)
  size_t group_bytes = 0;   // kPacked16: bytes per 16-row group
  AlignedBuffer data;       // kRows: [rows][row_bytes]; kPacked16: [groups][group_bytes]

  const uint8_t* Row(int r) const { return data.data() + static_cast<size_t>(r) * row_bytes; }
  uint8_t* Row(int r) { return data.data() + static_cast<size_t>(r) * row_bytes; }

  // Layout::kColChunks, for float matrices wider than kColChunk: the rows in blocks of
  // kChunkRows (the last may be shorter), each block's columns in chunks of kColChunk
  // (the last may be narrower), and within a chunk the block's rows one after another:
  //   block b: [chunk k][row of the block][columns of chunk k]
  // This is the order in which the blocked float kernels walk a block when they keep n
  // <= 8 activation rows of one chunk in L1 (quant/kernel_driver.h), so they read the
  // weights in address order; on row layout that walk jumps between rows and streamed a
  // 64 MB 2048-column F32 matrix at 10.5-11.2 GB/s against 14.1-14.8 (one thread, n = 8).
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
