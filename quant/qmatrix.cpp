// Matrices of every QType: shapes, storage, and whole-matrix quantization and
// dequantization through each format's row codec (quant/row_codecs.h).
#include "quant/qmatrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <utility>

#include "base/error.h"
#include "quant/fp16.h"
#include "quant/packed.h"
#include "quant/row_codecs.h"

namespace specsweep {

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

// Row r of w[rows][cols] into m's row r; buf[cols_padded] is scratch, zero beyond cols.
void QuantizeRow(const float* w, int r, int cols, QMatrix& m, std::vector<float>& buf) {
  const float* src = w + static_cast<size_t>(r) * cols;
  for (int c = 0; c < cols; ++c)
    if (!std::isfinite(src[c])) Fail("quantize: row {} col {}: non-finite weight {}", r, c, src[c]);
  std::memcpy(buf.data(), src, sizeof(float) * cols);  // tail stays zero
  CodecOf(m.type).quantize(m.type, buf.data(), m.cols_padded, m.Row(r), r);
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

void DequantizeRow(const QMatrix& m, int r, float* out) {
  if (r < 0 || r >= m.rows) Fail("dequantize: row {}: out of range [0, {})", r, m.rows);
  const RowCodec& codec = CodecOf(m.type);
  if (m.layout == Layout::kPacked16 && IsLegacyQuant(m.type)) {
    std::vector<uint8_t> row(m.row_bytes);  // row r in ggml's layout
    packed::UnpackLegacyRow(m, r, row.data());
    return codec.dequantize(m.type, row.data(), m.cols, out);
  }
  if (m.layout == Layout::kPacked16) {
    for (int c = 0; c < m.cols; ++c)
      out[c] = static_cast<float>(packed::Value(m, r, c)) * F16ToF32(packed::Scale(m, r, c / 32));
    return;
  }
  if (!IsQuantized(m.type)) {  // a whole row, or one span per column chunk
    const int step = m.SpanCols();
    for (int c0 = 0; c0 < m.cols; c0 += step)
      codec.dequantize(m.type, m.Span(r, c0), std::min(step, m.cols - c0), out + c0);
    return;
  }
  codec.dequantize(m.type, m.Row(r), m.cols, out);
}

std::vector<float> Dequantize(const QMatrix& m) {
  std::vector<float> out(static_cast<size_t>(m.rows) * m.cols);  // [rows][cols]
#pragma omp parallel for schedule(static) if (size_t(m.rows) * m.cols >= (1 << 20))
  for (int r = 0; r < m.rows; ++r) DequantizeRow(m, r, out.data() + static_cast<size_t>(r) * m.cols);
  return out;
}

}  // namespace specsweep
