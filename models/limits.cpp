#include "models/limits.h"

#include <cstring>

#include "base/error.h"
#include "quant/qtype.h"

namespace specsweep {

std::string Quoted(std::string_view s) {
  if (s.size() <= kMaxQuoted) return fmt::format("'{}'", s);
  return fmt::format("'{}...' ({} bytes)", s.substr(0, kMaxQuoted), s.size());
}

namespace {

// Index of the first non-finite value among n values of `bits` bits whose exponent
// field is `exp_mask` (all ones = Inf or NaN), or n. The common all-finite case runs on
// 16-byte vectors (SSE2 compares, any x86-64 build) over 256-byte chunks; the scalar tail
// and a flagged chunk find the index. 1.1B F16 load: the auto-vectorized loop this
// replaces ran at 3-5 GB/s on one core and took a third of start-up CPU time; this runs
// at 9-11 GB/s (Zen 3, 512 MB, one thread), close to that core's memory stream.
template <class U>
size_t FirstNonFinite(const uint8_t* p, size_t n, U exp_mask) {
  typedef U V __attribute__((vector_size(16)));
  constexpr size_t kLanes = 16 / sizeof(U), kChunk = 16 * kLanes;
  size_t i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    V bad = {};
    for (size_t j = 0; j < kChunk; j += kLanes) {
      V v;
      std::memcpy(&v, p + (i + j) * sizeof(U), sizeof(V));
      bad |= (V)((v & exp_mask) == exp_mask);
    }
    U any = 0;
    for (size_t l = 0; l < kLanes; ++l) any |= bad[l];
    if (any) break;
  }
  for (; i < n; ++i) {
    U v;
    std::memcpy(&v, p + i * sizeof(U), sizeof(U));
    if ((v & exp_mask) == exp_mask) return i;
  }
  return n;
}

[[noreturn]] void NonFinite(std::string_view file, std::string_view tensor, int row, size_t col) {
  Fail("{}: tensor '{}': row {} column {} is NaN or Inf (non-finite weights are refused)", file, tensor, row, col);
}

}  // namespace

void CheckFinite(const QMatrix& w, std::string_view file, std::string_view tensor) {
  if (w.layout != Layout::kRows) Fail("{}: tensor '{}': finiteness check needs the row layout", file, tensor);
  const int block = BlockSize(w.type);
  const size_t block_bytes = BlockBytes(w.type);
  const size_t per_row = static_cast<size_t>(w.cols_padded) / block;  // blocks (or elements) per row
  if (IsKQuant(w.type)) {
    // K-quant super-blocks keep their f16 scales at type-specific offsets (some at the
    // end): check the dequantized values instead, which covers every scale and min.
    std::vector<float> row(w.cols);  // [cols]
    for (int r = 0; r < w.rows; ++r) {
      DequantizeRow(w, r, row.data());
      const size_t bad =
          FirstNonFinite<uint32_t>(reinterpret_cast<const uint8_t*>(row.data()), row.size(), 0x7F800000u);
      if (bad < row.size()) NonFinite(file, tensor, r, bad);
    }
    return;
  }
  for (int r = 0; r < w.rows; ++r) {
    const uint8_t* row = w.Row(r);
    size_t bad = per_row;
    switch (w.type) {
      case QType::F32: bad = FirstNonFinite<uint32_t>(row, per_row, 0x7F800000u); break;
      case QType::F16: bad = FirstNonFinite<uint16_t>(row, per_row, 0x7C00u); break;
      case QType::BF16: bad = FirstNonFinite<uint16_t>(row, per_row, 0x7F80u); break;
      default:  // block types: an f16 scale leads every block (Q4_1/Q5_1: then an f16 min)
        for (size_t b = 0; b < per_row; ++b) {
          uint16_t d[2];
          std::memcpy(d, row + b * block_bytes, 4);
          const bool min = w.type == QType::Q4_1 || w.type == QType::Q5_1;
          if ((d[0] & 0x7C00u) == 0x7C00u || (min && (d[1] & 0x7C00u) == 0x7C00u)) {
            bad = b;
            break;
          }
        }
    }
    if (bad < per_row) NonFinite(file, tensor, r, bad * block);
  }
}

void CheckFinite(QType type, const uint8_t* data, size_t count, std::string_view file, std::string_view tensor) {
  size_t bad = count;
  switch (type) {
    case QType::F32: bad = FirstNonFinite<uint32_t>(data, count, 0x7F800000u); break;
    case QType::F16: bad = FirstNonFinite<uint16_t>(data, count, 0x7C00u); break;
    case QType::BF16: bad = FirstNonFinite<uint16_t>(data, count, 0x7F80u); break;
    default: Fail("{}: tensor '{}': {} is not a float type", file, tensor, QTypeName(type));
  }
  if (bad < count)
    Fail("{}: tensor '{}': element {} is NaN or Inf (non-finite weights are refused)", file, tensor, bad);
}

void CheckFinite(std::span<const float> v, std::string_view file, std::string_view tensor) {
  const size_t bad = FirstNonFinite<uint32_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size(), 0x7F800000u);
  if (bad < v.size()) NonFinite(file, tensor, 0, bad);
}

}  // namespace specsweep
