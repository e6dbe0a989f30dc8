// Quantization error statistics against the F32 weights, for `inspect --quant-error`.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "quant/qmatrix.h"

namespace specsweep {

struct Model;

struct QuantErrorStats {
  size_t count = 0;                                          // elements compared
  double max_abs = 0.0;                                      // max |q - ref|
  double mean_abs = 0.0;                                     // mean |q - ref|
  double rmse = 0.0;                                         // sqrt(mean (q - ref)^2)
  double snr_db = 0.0;                                       // 10 log10(sum ref^2 / sum (q - ref)^2); +inf when exact
  double sum_abs = 0.0, sum_sq_err = 0.0, sum_sq_ref = 0.0;  // raw sums (for totals)

  void Add(const QuantErrorStats& o);  // merges raw sums, recomputes the derived fields
  void Finish();                       // derived fields from the raw sums
};

// Error of `q` against ref[q.rows][q.cols].
QuantErrorStats MeasureQuantError(const float* ref, const QMatrix& q);
// Error of quantizing `m` (dequantized to F32 as the reference) to `type`.
QuantErrorStats MeasureQuantError(const QMatrix& m, QType type);

struct TensorQuantError {
  std::string name;           // "layers.0.wq", ..., "output"
  QType stored = QType::F32;  // what QuantizeModel stores it as (StoredQType: F16 when no block fits)
  QuantErrorStats stats;
};
struct ModelQuantError {
  QType type = QType::F32;
  std::vector<TensorQuantError> tensors;  // every matrix QuantizeModel converts
  QuantErrorStats total;                  // over all of them
};
// What QuantizeModel(m, type) would lose, per tensor and in total: each tensor at the
// type it would be stored as. Error where QuantizeModel refuses (type covers no matrix).
ModelQuantError MeasureModelQuantError(const Model& m, QType type);

}  // namespace specsweep
