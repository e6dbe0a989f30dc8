// The report's own end of a run: the final results document (context + aggregated
// records, the DIR/<name>.json) and the one-line summary of a point in progress output.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/store/results.h"

namespace specsweep {

// {"context": context, "benchmarks": the records aggregated (report/aggregate.h)}.
nlohmann::json ResultsDocument(const nlohmann::json& context, const std::vector<RawRecord>& records);

// "123.4 tok/s, accept 0.800, tau 3.20, speedup 1.50x [1.40, 1.60]" and its flags, for
// a measured point against its baseline (null for a baseline).
std::string PointSummary(const RawRecord& r, const RawRecord* baseline);

}  // namespace specsweep
