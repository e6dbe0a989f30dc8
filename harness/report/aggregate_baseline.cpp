// The comparison part of an aggregated record: a speculative point against the AR
// baseline measured in the same rounds (speedups with bootstrap intervals, flags,
// output agreement).
#include <cmath>
#include <map>

#include "harness/report/aggregate.h"
#include "harness/report/aggregate_parts.h"
#include "harness/report/statistics.h"

namespace specsweep {

namespace {

double Latency(const GenerationStats& s) { return s.mean_next_token_latency_s; }

// f(point run) / f(baseline run of the same round), one per (prompt, repetition).
struct RoundRatio {
  int prompt;
  double value;
};
std::vector<RoundRatio> RoundRatios(const RawRecord& r, const RawRecord& base, double (*f)(const GenerationStats&)) {
  std::map<std::pair<int, int>, double> b;
  for (auto& run : base.runs) b[{run.prompt, run.rep}] = f(run.stats);
  std::vector<RoundRatio> out;
  for (auto& run : r.runs) {
    auto it = b.find({run.prompt, run.rep});
    if (it != b.end() && it->second > 0) out.push_back({run.prompt, f(run.stats) / it->second});
  }
  return out;
}

std::vector<double> Values(const std::vector<RoundRatio>& v) {
  std::vector<double> out;
  for (auto& x : v) out.push_back(x.value);
  return out;
}

// Per prompt, the geometric mean of its ratios over the repetitions: with the same
// repetitions per prompt, a group's geometric mean of these is the one over its rounds.
std::vector<double> PerPromptSpeedups(const std::vector<RoundRatio>& v, size_t n_prompts) {
  std::vector<std::vector<double>> by_prompt(n_prompts);
  for (auto& x : v) by_prompt[x.prompt].push_back(x.value);
  std::vector<double> out;
  for (auto& ratios : by_prompt) out.push_back(GeometricMean(ratios));
  return out;
}

// Lossless check: the share of runs with outputs identical to the baseline's for the
// same prompt and repetition.
double OutputsMatch(const RawRecord& r, const RawRecord& baseline) {
  std::map<std::pair<int, int>, std::string> base_out;
  for (auto& run : baseline.runs) base_out[{run.prompt, run.rep}] = run.output_hash;
  int same = 0, total = 0;
  for (auto& run : r.runs) {
    auto it = base_out.find({run.prompt, run.rep});
    if (it == base_out.end()) continue;
    ++total;
    same += it->second == run.output_hash;
  }
  return total ? double(same) / total : NAN;
}

}  // namespace

double SpecBenchSpeedup(std::span<const double> point_tps, std::span<const double> baseline_tps) {
  double point = 0, base = 0;
  int n = 0;
  for (size_t i = 0; i < point_tps.size() && i < baseline_tps.size(); ++i)
    if (std::isfinite(point_tps[i]) && std::isfinite(baseline_tps[i]))
      point += point_tps[i], base += baseline_tps[i], ++n;
  return n && base > 0 ? point / base : NAN;  // the n of both means cancels
}

BaselineComparison BuildComparison(const RawRecord& r, const RawRecord& baseline, const CostModel::Speculative& cost) {
  BaselineComparison c;
  c.baseline_tokens_per_s = Mean(PerPrompt(baseline, Tps));
  // Speedup: tokens/s of the point over the baseline's in the same round, one ratio per
  // (prompt, repetition); the one estimator over those ratios (statistics.h Speedup).
  const std::vector<RoundRatio> rounds = RoundRatios(r, baseline, Tps);
  const std::vector<double> ratios = Values(rounds);
  c.speedup = Speedup(ratios, SeedOf(r.key));
  c.speedup_median = Median(ratios);
  c.speedup_std = StdDev(ratios);
  c.per_prompt_speedup = PerPromptSpeedups(rounds, r.prompt_tokens.size());
  c.spec_bench_speedup = SpecBenchSpeedup(PerPrompt(r, Tps), PerPrompt(baseline, Tps));
  c.predicted_over_measured = cost.predicted_speedup / c.speedup.mean;
  // Latency: the baseline's next-token latency over the point's, same rounds, same estimator.
  c.latency_speedup = Speedup(Values(RoundRatios(baseline, r, Latency)), SeedOf(r.key) + 1);
  const Interval& ci = c.speedup;
  const double bound = cost.speedup_bound;
  c.suspect = std::isfinite(ci.mean) && std::isfinite(bound) && ci.mean > bound * (1.0 + kSuspectMargin);
  c.wide_ci = WideInterval(ci);
  c.busy = r.host.busy || baseline.host.busy;
  c.outputs_match_baseline = OutputsMatch(r, baseline);
  return c;
}

}  // namespace specsweep
