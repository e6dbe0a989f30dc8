// The harness pipeline end to end, one stage after the other (docs/architecture.md):
//   sweep (the parsed experiment) -> measure (harness/measure/runner.h: interleaved
//   rounds, each group's records in DIR/<name>.jsonl) -> store -> report (the records
//   aggregated into DIR/<name>.json). Besides cli/, the only file that calls every stage.
#pragma once
#include "harness/measure/runner.h"

namespace specsweep {

// Measures `e` (resuming as `o` says) and writes the final DIR/<name>.json. Every model
// of e's points is looked for first (Error naming a missing one before any loads). An
// empty o.out_dir is the default folder (DefaultOutDir), named first on o.progress.
RunSummary RunExperiment(const Experiment& e, RunOptions o);

// `run` without -o: a new folder BASE/<name>-<UTC time> (store/results_dir.h), or,
// resuming, the newest one holding the run's .jsonl. `note` gets "results: DIR ...".
std::string DefaultOutDir(const Experiment& e, const RunOptions& o, std::FILE* note);

}  // namespace specsweep
