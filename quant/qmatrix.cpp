// Storage, quantization (ggml rounding) and dequantization of every QType. Weight
// quantization is offline and scalar only: it is the definition of the formats.
#include "quant/qmatrix.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <utility>

#include <sys/mman.h>

#include "base/error.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kquants.h"
#include "quant/legacy_quants.h"
#include "quant/packed.h"

namespace specsweep {

namespace {

// Buffers of at least this size are mapped on their own, 2 MiB aligned, and advised to
// be backed by transparent huge pages: a 1.1B-parameter model takes ~1200 pages instead
// of ~600 000 (in a VM each fault is a trap that costs more than zeroing the page).
constexpr size_t kHugePage = size_t{2} << 20;

std::shared_ptr<const void> AllocZeroed(size_t bytes, uint8_t** out) {
  const size_t alloc = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, alloc));
  if (!p) Fail("out of memory allocating {} bytes", bytes);
  std::memset(p, 0, alloc);
  *out = p;
  return std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
}

std::shared_ptr<const void> AllocHuge(size_t bytes, uint8_t** out) {
  const size_t len = (bytes + 4095) / 4096 * 4096;
  void* raw = ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) Fail("out of memory allocating {} bytes", bytes);
  // Trim to a 2 MiB aligned start so that whole huge pages fit.
  const uintptr_t b = reinterpret_cast<uintptr_t>(raw), a = (b + kHugePage - 1) / kHugePage * kHugePage;
  if (a > b) ::munmap(raw, a - b);
  if (b + kHugePage > a) ::munmap(reinterpret_cast<void*>(a + len), b + kHugePage - a);
  auto* p = reinterpret_cast<uint8_t*>(a);
  ::madvise(p, len, MADV_HUGEPAGE);  // a hint: without THP the pages are small, nothing else changes
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // linux/mman.h, older libc headers lack it
#endif
  // Faulted in by one call rather than by the first writes: for 2.4 GB on huge pages in
  // this project's VM, 0.8-1.1 s against 12-14 s when memset faulted them (2 vCPU, loaded
  // host). A hint too: on failure (kernels before 5.14) the writes fault the pages in.
  ::madvise(p, len, MADV_POPULATE_WRITE);
  *out = p;
  return std::shared_ptr<const void>(p, [len](const void* q) { ::munmap(const_cast<void*>(q), len); });
}

}  // namespace

std::string TransparentHugePageMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");  // e.g. "always [madvise] never"
  std::string line;
  std::getline(f, line);
  const size_t a = line.find('['), b = line.find(']');
  return a != std::string::npos && b != std::string::npos && b > a ? line.substr(a + 1, b - a - 1) : "unknown";
}

bool UninitializedOnHugePages(size_t bytes) {
  static const std::string mode = TransparentHugePageMode();
  return bytes >= kHugePage && (mode == "always" || mode == "madvise");
}

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) { owner_ = AllocZeroed(bytes, &ptr_); }

AlignedBuffer AlignedBuffer::Uninitialized(size_t bytes) {
  AlignedBuffer b;
  b.size_ = bytes;
  if (bytes >= kHugePage) {
    b.owner_ = AllocHuge(bytes, &b.ptr_);
    return b;
  }
  const size_t alloc = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  b.ptr_ = static_cast<uint8_t*>(std::aligned_alloc(64, alloc));
  if (!b.ptr_) Fail("out of memory allocating {} bytes", bytes);
  std::memset(b.ptr_ + bytes, 0, alloc - bytes);  // as past the end of a huge one
  b.owner_ = std::shared_ptr<const void>(b.ptr_, [](const void* q) { std::free(const_cast<void*>(q)); });
  return b;
}

AlignedBuffer AlignedBuffer::View(const uint8_t* p, size_t bytes, std::shared_ptr<const void> owner) {
  AlignedBuffer b;
  b.owner_ = std::move(owner);
  b.ptr_ = const_cast<uint8_t*>(p);  // never written: immutable
  b.size_ = bytes;
  b.immutable_ = true;
  return b;
}

AlignedBuffer::AlignedBuffer(const AlignedBuffer& o) {
  if (o.immutable_) {
    owner_ = o.owner_, ptr_ = o.ptr_, size_ = o.size_, immutable_ = true;
    return;
  }
  *this = Uninitialized(o.size_);
  if (o.size_) std::memcpy(ptr_, o.ptr_, o.size_);
}

AlignedBuffer& AlignedBuffer::operator=(const AlignedBuffer& o) {
  if (this != &o) *this = AlignedBuffer(o);
  return *this;
}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    owner_ = std::move(o.owner_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    size_ = std::exchange(o.size_, 0);
    immutable_ = std::exchange(o.immutable_, false);
  }
  return *this;
}

void AlignedBuffer::Unshare() {
  AlignedBuffer copy = Uninitialized(size_);
  std::memcpy(copy.ptr_, ptr_, size_);
  *this = std::move(copy);
}

namespace {

QMatrix Shape(QType type, int rows, int cols) {
  if (rows < 0 || cols < 0) Fail("matrix: shape: negative dimension [{} x {}]", rows, cols);
  QMatrix m;
  m.type = type;
  m.rows = rows;
  m.cols = cols;
  int bs = BlockSize(type);
  m.cols_padded = (cols + bs - 1) / bs * bs;
  m.row_bytes = static_cast<size_t>(m.cols_padded / bs) * BlockBytes(type);
  return m;
}

}  // namespace

QMatrix MakeQMatrix(QType type, int rows, int cols) {
  QMatrix m = Shape(type, rows, cols);
  m.data = AlignedBuffer(m.row_bytes * rows);
  return m;
}

QMatrix MakeQMatrix(QType type, int rows, int cols, AlignedBuffer data) {
  QMatrix m = Shape(type, rows, cols);
  if (data.size() != m.row_bytes * rows)
    Fail("matrix: {} bytes given for [{} x {}] {} ({} bytes)", data.size(), rows, cols, QTypeName(type),
         m.row_bytes * rows);
  m.data = std::move(data);
  return m;
}

namespace {

// ggml quantize_row_q4_0_ref generalised to G-wide groups. x[G] (zero-padded).
template <int G>
void QuantizeGroupQ4(const float* x, BlockQ4<G>* y, int row, int group) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < G; ++j) {
    const float v = x[j];
    if (amax < std::fabs(v)) {
      amax = std::fabs(v);
      max = v;
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  if (std::isinf(F16ToF32(y->d)))
    Fail("quantize: row {} block {}: scale {} overflows f16", row, group, d);
  for (int j = 0; j < G / 2; ++j) {
    const float x0 = x[j] * id;
    const float x1 = x[G / 2 + j] * id;
    const int xi0 = std::min(15, static_cast<int>(static_cast<int8_t>(x0 + 8.5f)));
    const int xi1 = std::min(15, static_cast<int>(static_cast<int8_t>(x1 + 8.5f)));
    y->qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
  }
}

// ggml quantize_row_q8_0_ref. x[32] (zero-padded).
void QuantizeBlockQ8_0(const float* x, BlockQ8_0* y, int row, int block) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  if (std::isinf(F16ToF32(y->d)))
    Fail("quantize: row {} block {}: scale {} overflows f16", row, block, d);
  for (int j = 0; j < 32; ++j) y->qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
}

template <int G>
void DequantizeRowQ4(const uint8_t* row, int cols, float* out) {
  const auto* b = reinterpret_cast<const BlockQ4<G>*>(row);
  for (int c = 0; c < cols; ++c) {
    const BlockQ4<G>& blk = b[c / G];
    const int j = c % G;
    const int nib = j < G / 2 ? (blk.qs[j] & 0x0F) : (blk.qs[j - G / 2] >> 4);
    out[c] = static_cast<float>(nib - 8) * F16ToF32(blk.d);
  }
}

// Row r of w[rows][cols] into m's row r; buf[cols_padded] is scratch, zero beyond cols.
void QuantizeRow(const float* w, int r, int cols, QMatrix& m, std::vector<float>& buf) {
  const QType type = m.type;
  const int bs = BlockSize(type);
  const float* src = w + static_cast<size_t>(r) * cols;
  for (int c = 0; c < cols; ++c)
    if (!std::isfinite(src[c])) Fail("quantize: row {} col {}: non-finite weight {}", r, c, src[c]);
  uint8_t* dst = m.Row(r);
  switch (type) {
    case QType::F32: std::memcpy(dst, src, sizeof(float) * cols); break;
    case QType::F16:
    case QType::BF16: {
      auto* h = reinterpret_cast<uint16_t*>(dst);
      for (int c = 0; c < cols; ++c) {
        h[c] = type == QType::F16 ? F32ToF16(src[c]) : F32ToBF16(src[c]);
        const float back = type == QType::F16 ? F16ToF32(h[c]) : BF16ToF32(h[c]);
        if (std::isinf(back))
          Fail("quantize: row {} col {}: weight {} overflows {}", r, c, src[c], QTypeName(type));
      }
      break;
    }
    default: {
      std::memcpy(buf.data(), src, sizeof(float) * cols);  // tail stays zero
      if (IsKQuant(type)) {
        QuantizeRowK(type, buf.data(), m.cols_padded, dst, r);
        break;
      }
      if (IsLegacyQuant(type)) {
        QuantizeRowLegacy(type, buf.data(), m.cols_padded, dst, r);
        break;
      }
      for (int g = 0; g < m.cols_padded / bs; ++g) {
        const float* x = buf.data() + g * bs;
        switch (type) {
          case QType::Q8_0: QuantizeBlockQ8_0(x, reinterpret_cast<BlockQ8_0*>(dst) + g, r, g); break;
          case QType::Q4_0: QuantizeGroupQ4<32>(x, reinterpret_cast<BlockQ4_0*>(dst) + g, r, g); break;
          case QType::Q4_G64: QuantizeGroupQ4<64>(x, reinterpret_cast<BlockQ4_G64*>(dst) + g, r, g); break;
          case QType::Q4_G128:
            QuantizeGroupQ4<128>(x, reinterpret_cast<BlockQ4_G128*>(dst) + g, r, g);
            break;
          default: Fail("quantize: type {}: unsupported", QTypeName(type));
        }
      }
    }
  }
}

}  // namespace

// Rows are independent, so the thread team (OpenMP) takes them in parallel: the bytes do
// not depend on the thread count, and of several bad rows the first is reported. IQ4_XS
// of a 1.1B model is minutes on one thread (its scale search tries 16 scales per block).
QMatrix Quantize(const float* w, int rows, int cols, QType type) {
  QMatrix m = MakeQMatrix(type, rows, cols);
  std::exception_ptr error;
  int error_row = rows;
#pragma omp parallel if (size_t(rows) * cols >= (1 << 18))
  {
    std::vector<float> buf(m.cols_padded, 0.0f);  // [cols_padded] one zero-padded row
#pragma omp for schedule(dynamic, 16)
    for (int r = 0; r < rows; ++r) {
      try {
        QuantizeRow(w, r, cols, m, buf);
      } catch (...) {
#pragma omp critical(specsweep_quantize_error)
        if (r < error_row) error_row = r, error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  return m;
}

QMatrix Convert(const QMatrix& m, QType type) {
  if (m.type == type) return m;
  auto f = Dequantize(m);
  return Quantize(f.data(), m.rows, m.cols, type);
}

namespace {

void DequantizeFloats(QType type, const uint8_t* p, int count, float* out) {
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  if (type == QType::F32) std::memcpy(out, p, sizeof(float) * count);
  else if (type == QType::F16) for (int c = 0; c < count; ++c) out[c] = F16ToF32(h[c]);
  else for (int c = 0; c < count; ++c) out[c] = BF16ToF32(h[c]);
}

}  // namespace

void DequantizeRow(const QMatrix& m, int r, float* out) {
  if (r < 0 || r >= m.rows) Fail("dequantize: row {}: out of range [0, {})", r, m.rows);
  if (m.layout == Layout::kPacked16 && IsLegacyQuant(m.type)) {
    std::vector<uint8_t> row(m.row_bytes);  // row r in ggml's layout
    packed::UnpackLegacyRow(m, r, row.data());
    return DequantizeRowLegacy(m.type, row.data(), m.cols, out);
  }
  if (m.layout == Layout::kPacked16) {
    for (int c = 0; c < m.cols; ++c)
      out[c] = static_cast<float>(packed::Value(m, r, c)) * F16ToF32(packed::Scale(m, r, c / 32));
    return;
  }
  if (!IsQuantized(m.type)) {  // a whole row, or one span per column chunk
    const int step = m.SpanCols();
    for (int c0 = 0; c0 < m.cols; c0 += step)
      DequantizeFloats(m.type, m.Span(r, c0), std::min(step, m.cols - c0), out + c0);
    return;
  }
  const uint8_t* row = m.Row(r);
  switch (m.type) {
    case QType::F32:
    case QType::F16:
    case QType::BF16: break;  // above
    case QType::Q8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(row);
      for (int c = 0; c < m.cols; ++c)
        out[c] = static_cast<float>(b[c / 32].qs[c % 32]) * F16ToF32(b[c / 32].d);
      return;
    }
    case QType::Q4_0: DequantizeRowQ4<32>(row, m.cols, out); return;
    case QType::Q4_G64: DequantizeRowQ4<64>(row, m.cols, out); return;
    case QType::Q4_G128: DequantizeRowQ4<128>(row, m.cols, out); return;
    case QType::Q2_K:
    case QType::Q3_K:
    case QType::Q4_K:
    case QType::Q5_K:
    case QType::Q6_K: DequantizeRowK(m.type, row, m.cols, out); return;
    case QType::Q4_1:
    case QType::Q5_0:
    case QType::Q5_1:
    case QType::IQ4_NL:
    case QType::IQ4_XS: DequantizeRowLegacy(m.type, row, m.cols, out); return;
  }
  Fail("dequantize: type {}: unsupported", QTypeName(m.type));
}

std::vector<float> Dequantize(const QMatrix& m) {
  std::vector<float> out(static_cast<size_t>(m.rows) * m.cols);  // [rows][cols]
#pragma omp parallel for schedule(static) if (size_t(m.rows) * m.cols >= (1 << 20))
  for (int r = 0; r < m.rows; ++r) DequantizeRow(m, r, out.data() + static_cast<size_t>(r) * m.cols);
  return out;
}

}  // namespace specsweep
