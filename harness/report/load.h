// Results for the report commands (table, plot, check, merge): a final .json as it is,
// or a .jsonl's raw records aggregated the way the run would have.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/record.h"
#include "harness/store/results.h"

namespace specsweep {

// Flat records (merge writes them back as they are).
Results LoadResults(const std::string& path);

// Typed records for table, plot and check: each record's parts read once at load, and
// the records of a question set's parts merged into one per method (report/parts.h).
struct LoadedRecords {
  std::string path;
  nlohmann::json context;  // {} for a .jsonl
  std::vector<AggregateRecord> records;
  std::vector<std::string> warnings;  // a .jsonl's corrupt lines
  // What a reader of its speedups must know: "" or, for a final .json of a schema before
  // the geometric-mean estimator, that its speedups are arithmetic means (docs/metrics.md).
  std::string speedup_note;
};
LoadedRecords LoadRecords(const std::string& path);

}  // namespace specsweep
