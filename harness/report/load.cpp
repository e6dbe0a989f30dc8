#include "harness/report/load.h"

#include <fmt/format.h>

#include "harness/report/aggregate.h"
#include "harness/report/parts.h"

namespace specsweep {

Results LoadResults(const std::string& path) {
  Results res = ReadResults(path);
  for (auto& r : AggregateAll(res.raw)) res.records.push_back(std::move(r));
  res.raw.clear();
  return res;
}

LoadedRecords LoadRecords(const std::string& path) {
  Results res = ReadResults(path);
  LoadedRecords out{res.path, std::move(res.context), RecordsFromJson(res.records), std::move(res.warnings), ""};
  for (auto& r : AggregateAllTyped(res.raw)) out.records.push_back(std::move(r));
  out.records = MergeQuestionParts(out.records);  // one record per method, whatever its parts
  // A .json's records are read as written; a .jsonl is aggregated now, by today's estimator.
  const int version = SchemaVersionOf(out.context);
  if (!out.context.empty() && version < kGeometricSpeedupSchemaVersion)
    out.speedup_note = fmt::format(
        "{}: results schema {}: its speedups are arithmetic means of per-round ratios, not the geometric "
        "means of schema {} (docs/metrics.md); the .jsonl beside it gives them by today's estimator",
        path, version, kGeometricSpeedupSchemaVersion);
  return out;
}

}  // namespace specsweep
