#include "models/quant_error.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/model.h"

namespace specsweep {

void QuantErrorStats::Finish() {
  if (count == 0) return;
  mean_abs = sum_abs / static_cast<double>(count);
  rmse = std::sqrt(sum_sq_err / static_cast<double>(count));
  snr_db = sum_sq_err > 0.0 ? 10.0 * std::log10(sum_sq_ref / sum_sq_err) : std::numeric_limits<double>::infinity();
}

void QuantErrorStats::Add(const QuantErrorStats& o) {
  count += o.count;
  max_abs = std::max(max_abs, o.max_abs);
  sum_abs += o.sum_abs;
  sum_sq_err += o.sum_sq_err;
  sum_sq_ref += o.sum_sq_ref;
  Finish();
}

QuantErrorStats MeasureQuantError(const float* ref, const QMatrix& q) {
  QuantErrorStats s;
  std::vector<float> row(q.cols);  // [cols] dequantized row
  for (int r = 0; r < q.rows; ++r) {
    DequantizeRow(q, r, row.data());
    const float* x = ref + static_cast<size_t>(r) * q.cols;
    for (int c = 0; c < q.cols; ++c) {
      const double e = std::fabs(static_cast<double>(row[c]) - x[c]);
      s.max_abs = std::max(s.max_abs, e);
      s.sum_abs += e;
      s.sum_sq_err += e * e;
      s.sum_sq_ref += static_cast<double>(x[c]) * x[c];
    }
  }
  s.count = static_cast<size_t>(q.rows) * q.cols;
  s.Finish();
  return s;
}

QuantErrorStats MeasureQuantError(const QMatrix& m, QType type) {
  const std::vector<float> ref = Dequantize(m);  // [rows][cols]
  return MeasureQuantError(ref.data(), Quantize(ref.data(), m.rows, m.cols, type));
}

ModelQuantError MeasureModelQuantError(const Model& m, QType type) {
  ModelQuantError out;
  out.type = type;
  CheckQuantizable(m, type);
  auto add = [&](std::string name, const QMatrix& w) {
    const QType stored = StoredQType(type, w.cols);
    TensorQuantError t{std::move(name), stored, MeasureQuantError(w, stored)};
    out.total.Add(t.stats);
    out.tensors.push_back(std::move(t));
  };
  // The embedding is only gathered from and stays as loaded (see QuantizeModel).
  ForEachMatrix(m, [&](const std::string& name, const QMatrix& w) {
    if (name != "tok_embeddings") add(name, w);
  });
  return out;
}

}  // namespace specsweep
