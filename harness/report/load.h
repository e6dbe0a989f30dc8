// Results for the report commands (table, plot, check, merge): a final .json as it is,
// or a .jsonl's raw records aggregated the way the run would have.
#pragma once
#include <string>

#include "harness/store/results.h"

namespace specsweep {

Results LoadResults(const std::string& path);

}  // namespace specsweep
