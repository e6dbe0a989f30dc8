// Speedup against batch size (docs/batching.md): the points of one draft configuration
// over the batch axis, measured and predicted, and the crossover batch where the speedup
// falls below 1. Read by the batch table (table_batch.cpp) and the speedup-vs-batch plot.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "harness/report/record.h"
#include "harness/report/table.h"

namespace specsweep {

// Where a speedup curve over batch crosses 1, the smallest batch at which it is below 1.
struct Crossover {
  enum class Kind {
    kNoData,  // no finite speedup
    kAt,      // between two measured batches (interpolated in log2 batch) or at one
    kBeyond,  // at or above 1 at every measured batch: "> largest"
    kNone,    // below 1 already at the smallest measured batch: speculation never paid
  };
  Kind kind = Kind::kNoData;
  double batch = NAN;  // kAt: the crossover; kBeyond/kNone: the largest/smallest measured batch
};
// The crossover of (batch, speedup) points (any order; non-finite speedups skipped): the
// first batch b_i whose speedup s_i < 1 after one at or above 1, interpolated linearly in
// log2(batch) between b_{i-1} and b_i: 2^(log2 b_{i-1} + (s_{i-1} - 1) / (s_{i-1} - s_i)
// (log2 b_i - log2 b_{i-1})).
Crossover FindCrossover(std::vector<std::pair<double, double>> batch_speedup);
// "5.7", "> 16", "none (< 1 at 1)", "-".
std::string CrossoverText(const Crossover& c);

// One draft configuration over the batch axis: its row cells (the main table's row
// fields but the batch, and K) and per measured batch its record.
struct BatchCurve {
  std::vector<std::string> cells;
  std::string name;                                              // cells joined as plot legends name rows
  std::vector<std::pair<int, const AggregateRecord*>> by_batch;  // sorted by batch
  std::vector<std::pair<double, double>> Measured() const;       // (batch, speedup)
  std::vector<std::pair<double, double>> Predicted() const;      // (batch, predicted_speedup)
};
struct BatchCurves {
  std::vector<std::string> fields;  // the row fields of the curves' cells ("k_label" for K)
  std::vector<int> batches;         // every batch measured, ascending
  std::vector<BatchCurve> curves;   // in row order
};
// The speculative records (after the filters) grouped into curves (none without such
// records); `records` must outlive the result.
BatchCurves BatchCurvesOf(const std::vector<AggregateRecord>& records, const Filters& filters = {});

}  // namespace specsweep
