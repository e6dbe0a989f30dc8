// Per-category figures: a record whose prompts carry report groups (a question set,
// per_prompt_category) split into one record per group plus "overall", each computed
// from the record's per-prompt values: a group's speedup is the one estimator
// (statistics.h Speedup) over its questions' speedups, each the geometric mean over its
// repetitions, so it is the geometric mean over the group's rounds.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/record.h"

namespace specsweep {

inline constexpr const char* kOverallCategory = "overall";

// Records with per_prompt_category become one record per group (in the order the
// prompts list them) and one "overall", each with a `category` field, its parameters
// and name, `prompts` (questions in it) and, from its prompts' values: speedup and
// mean_accepted_length with bootstrap intervals over questions (speedup's in log space)
// (_ci_low, _ci_high, _n),
// tokens_per_s, acceptance_rate, generated_tokens, prompt_tokens and wide_ci; with its
// baseline among `records` (baseline_key), spec_bench_speedup (SpecBenchSpeedup over the
// group's questions) with its interval (_ci_low, _ci_high, _n). The point's suspect flag
// holds for each of its groups. Records without categories pass unchanged.
std::vector<AggregateRecord> SplitByCategory(const std::vector<AggregateRecord>& records);
// The report groups of the records, in the order their prompts list them. Error naming
// the point when a group is empty or named kOverallCategory (CheckCategoryName).
std::vector<std::string> CategoryOrder(const std::vector<AggregateRecord>& records);
// Error "WHERE: ..." when `category` is empty or the reserved kOverallCategory. The
// question loader (sweep/questions.cpp) keeps the same rule, reporting FILE:LINE.
void CheckCategoryName(const std::string& category, const std::string& where);

}  // namespace specsweep
