// Aggregation of raw records into flat result records (the "benchmarks" of the final
// .json): every GenerationStats statistic, acceptance per draft position, and for a
// speculative point its speedup over the baseline measured in the same rounds, with a
// bootstrap confidence interval, a physical upper bound and the verify-cost model.
#pragma once
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/record.h"
#include "harness/report/statistics.h"
#include "harness/store/results.h"

namespace specsweep {

// Leviathan et al. (2023) expected speedup for per-token acceptance alpha, draft length
// K and cost ratio c: (1 - alpha^(K+1)) / ((1 - alpha)(cK + 1)); alpha -> 1 is the limit.
double PredictedSpeedup(double alpha, double k, double c);
// Per-token acceptance probability under the i.i.d. model of Leviathan et al.:
// accepted / evaluated draft tokens, a token being evaluated only when every earlier one
// in its step was accepted. Exact for constant K; an upper bound on evaluated tokens (so
// a lower bound on alpha) when K varies per step.
double EstimateAlpha(const GenerationStats& s);

// τ of a run (or of pooled runs): tokens per token-yielding target call, bonus token
// included; NaN when nothing was generated. Autoregressive decoding yields one token per
// call by definition: 1, though a run ending at a stop token spends a call on it.
double MeanAcceptedLength(const GenerationStats& s, bool speculative);

// A point whose measured speedup exceeds its bound by more than this is `suspect`.
inline constexpr double kSuspectMargin = 0.10;
// A point whose interval's half-width exceeds this fraction of the mean is `wide_ci`.
inline constexpr double kWideInterval = 0.15;
// So is one whose interval comes from fewer rounds than this: n values have at most
// C(2n-1, n) distinct bootstrap resamples (3 at n = 2, 35 at n = 4, 126 at n = 5), too
// few below 5 for 2.5% tails, so a "95%" interval of 2-4 rounds is not one.
inline constexpr int kMinIntervalRounds = 5;
// Whether an interval is flagged wide (‡): too few rounds, or wider than ±kWideInterval.
inline bool WideInterval(const Interval& ci) {
  return ci.n < kMinIntervalRounds || !(ci.half_width_rel() <= kWideInterval);
}

// Spec-Bench's speedup (evaluation/speed.py): the mean of the point's tokens/s over the
// mean of its baseline's, over the same prompts (index i in both is one prompt; prompts
// without a finite value in either are left out). NaN when none is left.
double SpecBenchSpeedup(std::span<const double> point_tps, std::span<const double> baseline_tps);

// Aggregated record of a point (record.h; its parts built in aggregate.cpp,
// aggregate_cost.cpp and aggregate_baseline.cpp): its parameters, every GenerationStats
// statistic as mean over repetitions (plus _median/_std), per-prompt arrays, per-position
// acceptance, and versus `baseline` (may be null): speedup with its interval, bound and
// flags, the cost-model and Leviathan predictions, output agreement. Formulas: docs/metrics.md.
AggregateRecord AggregateTyped(const RawRecord& r, const RawRecord* baseline);
nlohmann::json Aggregate(const RawRecord& r, const RawRecord* baseline);  // AggregateTyped(...).flat
// Aggregates a list of raw records (baselines looked up among them by key).
std::vector<AggregateRecord> AggregateAllTyped(const std::vector<RawRecord>& raws);
std::vector<nlohmann::json> AggregateAll(const std::vector<RawRecord>& raws);

}  // namespace specsweep
