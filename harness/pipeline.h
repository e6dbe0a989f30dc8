// The harness pipeline end to end, one stage after the other (docs/architecture.md):
//   sweep (the parsed experiment) -> measure (harness/measure/runner.h: interleaved
//   rounds, each group's records in DIR/<name>.jsonl) -> store -> report (the records
//   aggregated into DIR/<name>.json). Besides cli/, the only file that calls every stage.
#pragma once
#include "harness/measure/runner.h"

namespace specsweep {

// Measures `e` (resuming as `o` says) and writes the final DIR/<name>.json.
RunSummary RunExperiment(const Experiment& e, RunOptions o);

}  // namespace specsweep
