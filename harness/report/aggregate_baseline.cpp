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

// Per prompt, the mean of its ratios over the repetitions.
std::vector<double> PerPromptMeans(const std::vector<RoundRatio>& v, size_t n_prompts) {
  std::vector<double> sum(n_prompts, 0.0), cnt(n_prompts, 0.0);
  for (auto& x : v) sum[x.prompt] += x.value, cnt[x.prompt] += 1;
  for (size_t i = 0; i < n_prompts; ++i) sum[i] = cnt[i] > 0 ? sum[i] / cnt[i] : NAN;
  return sum;
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
  // (prompt, repetition); mean with a seeded bootstrap interval over those ratios.
  const std::vector<RoundRatio> rounds = RoundRatios(r, baseline, Tps);
  const std::vector<double> ratios = Values(rounds);
  c.speedup = BootstrapMean(ratios, SeedOf(r.key));
  c.speedup_median = Median(ratios);
  c.speedup_std = StdDev(ratios);
  c.per_prompt_speedup = PerPromptMeans(rounds, r.prompt_tokens.size());
  c.spec_bench_speedup = SpecBenchSpeedup(PerPrompt(r, Tps), PerPrompt(baseline, Tps));
  c.predicted_over_measured = cost.predicted_speedup / c.speedup.mean;
  // Latency: the baseline's next-token latency over the point's, same rounds.
  c.latency_speedup = BootstrapMean(Values(RoundRatios(baseline, r, Latency)), SeedOf(r.key) + 1);
  const Interval& ci = c.speedup;
  const double bound = cost.speedup_bound;
  c.suspect = std::isfinite(ci.mean) && std::isfinite(bound) && ci.mean > bound * (1.0 + kSuspectMargin);
  c.wide_ci = ci.n < 2 || !(ci.half_width_rel() <= kWideInterval);
  c.busy = r.host.busy || baseline.host.busy;
  c.outputs_match_baseline = OutputsMatch(r, baseline);
  return c;
}

}  // namespace specsweep
