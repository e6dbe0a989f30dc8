// CI regression gate: compares acceptance figures of a results file point by point
// against a baseline results file (greedy points are deterministic, so any drop beyond
// the tolerance is a behaviour change, not noise).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/table.h"

namespace specsweep {

struct CheckRow {
  std::string name;      // point name
  std::string metric;    // "acceptance_rate", "mean_accepted_length" or "missing"
  double baseline = 0, current = 0;
};

struct CheckReport {
  int compared = 0;                  // speculative baseline points found in the results
  std::vector<CheckRow> failures;    // drops beyond tolerance and missing points
  bool ok() const { return failures.empty(); }
  Table AsTable() const;
};

// Every speculative point of `baseline` must be in `current` (same key), with
// acceptance_rate and mean_accepted_length not below baseline * (1 - tolerance).
CheckReport CheckRegressions(const std::vector<nlohmann::json>& current,
                             const std::vector<nlohmann::json>& baseline, double tolerance);

}  // namespace specsweep
