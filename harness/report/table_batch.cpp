// Speedup against batch size (docs/batching.md): per draft configuration, the measured
// speedup with its interval and the cost model's prediction at each batch, and the
// crossover batch of each.
#include <fmt/format.h>

#include "base/error.h"
#include "harness/report/batch_curve.h"
#include "harness/report/table_cells.h"

namespace specsweep {

const char* const kCrossoverNote =
    "crossover: the smallest batch at which the speedup falls below 1, interpolated linearly in log2(batch) between "
    "the measured batches on either side; \"> B\": at or above 1 up to the largest batch B measured; \"none (< 1 at "
    "B)\": below 1 already at the smallest batch";
const char* const kBatchModelNote =
    "predicted: the cost model with the costs measured at the point's batch B, E[tokens per step] x T(B) / (draft "
    "time per step + T(B(K+1))) (T(B n): one target call of B sequences of n positions each, the draft's T_d(B) "
    "likewise); it assumes every step runs all B sequences (docs/batching.md)";

Table BatchTable(const std::vector<AggregateRecord>& records, const Filters& filters, const nlohmann::json& context) {
  const BatchCurves bc = BatchCurvesOf(records, filters);
  if (bc.curves.empty()) Fail("table: no speculative points in the results (nothing to compare with AR)");
  Table t;
  t.title = "Speedup over autoregressive decoding at the same batch size, measured and predicted, and the crossover";
  t.kind = "batch";
  t.header = bc.fields;
  t.header.back() = "k";  // the k_label cell: "k=4"
  t.header.push_back("speedup");
  t.label_cols = t.header.size();
  for (int b : bc.batches) t.header.push_back(fmt::format("B={}", b));
  t.header.push_back("crossover");
  CellFlags flags;
  std::vector<AggregateRecord> shown;
  for (const BatchCurve& c : bc.curves) {
    std::vector<std::string> measured = c.cells, predicted = c.cells;
    measured.push_back("measured");
    predicted.push_back("predicted");
    for (int b : bc.batches) {
      const AggregateRecord* r = nullptr;
      for (const auto& [at, rec] : c.by_batch)
        if (at == b) r = rec;
      measured.push_back(r ? SpeedupCell(*r, flags) : "");
      predicted.push_back(r ? FormatMetric("predicted_speedup", FieldNumber(*r, "predicted_speedup")) : "");
      if (r) shown.push_back(*r);
    }
    measured.push_back(CrossoverText(FindCrossover(c.Measured())));
    predicted.push_back(CrossoverText(FindCrossover(c.Predicted())));
    t.rows.push_back(measured);
    t.rows.push_back(predicted);
  }
  t.notes.push_back(Caption(shown, context));
  t.notes.push_back(kSpeedupNote);
  t.notes.push_back(kBatchModelNote);
  t.notes.push_back(kCrossoverNote);
  for (const AggregateRecord& r : shown)
    if (IsReplayed(r)) {
      t.notes.push_back(kReplayNote);
      break;
    }
  AddFlagNotes(flags, t);
  return t;
}

}  // namespace specsweep
