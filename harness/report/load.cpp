#include "harness/report/load.h"

#include "harness/report/aggregate.h"

namespace specsweep {

Results LoadResults(const std::string& path) {
  Results res = ReadResults(path);
  for (auto& r : AggregateAll(res.raw)) res.records.push_back(std::move(r));
  res.raw.clear();
  return res;
}

}  // namespace specsweep
