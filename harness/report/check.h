// CI regression gate: compares acceptance figures of a results file point by point
// against a baseline results file. Greedy points are deterministic (logits are
// bit-identical across batch sizes, threads and kernel families), so they are gated at
// tolerance 0: any drop is a behaviour change, not noise. Sampled points use the given
// relative tolerance. A gate that cannot fail is refused: a baseline without
// speculative points, non-numeric baseline figures, no overlap, a bad tolerance.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/table.h"

namespace specsweep {

struct CheckRow {
  std::string name;    // point name
  std::string metric;  // "acceptance_rate", "mean_accepted_length" or "missing"
  double baseline = 0, current = 0;
  double tolerance = 0;  // the one applied
};

struct CheckReport {
  int compared = 0;                // speculative baseline points found in the results
  int baseline_points = 0;         // speculative points in the baseline (measured acceptance)
  int replayed = 0;                // replayed points of the baseline: their acceptance was declared, not
                                   // measured, so they are not gated
  std::vector<CheckRow> failures;  // drops beyond tolerance and missing points
  bool ok() const { return failures.empty(); }
  Table AsTable() const;
};

// Every speculative point of `baseline` must be in `current` (same key), with
// acceptance_rate and mean_accepted_length not below baseline * (1 - tol), tol = 0 for
// greedy points and `sampled_tolerance` otherwise. Error (not a report) when the gate
// could not fail: see above; `what` names the baseline file in messages. Points with a
// replayed acceptance source (in either file) are never compared: their acceptance was
// declared, not measured.
CheckReport CheckRegressions(const std::vector<AggregateRecord>& current, const std::vector<AggregateRecord>& baseline,
                             double sampled_tolerance, const std::string& what = "baseline");

}  // namespace specsweep
