#include "harness/report/load.h"

#include "harness/report/aggregate.h"

namespace specsweep {

Results LoadResults(const std::string& path) {
  Results res = ReadResults(path);
  for (auto& r : AggregateAll(res.raw)) res.records.push_back(std::move(r));
  res.raw.clear();
  return res;
}

LoadedRecords LoadRecords(const std::string& path) {
  Results res = ReadResults(path);
  LoadedRecords out{res.path, std::move(res.context), RecordsFromJson(res.records), std::move(res.warnings)};
  for (auto& r : AggregateAllTyped(res.raw)) out.records.push_back(std::move(r));
  return out;
}

}  // namespace specsweep
