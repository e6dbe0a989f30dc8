#include "harness/report/category.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "base/error.h"
#include "harness/report/aggregate.h"
#include "harness/report/statistics.h"
#include "harness/store/results.h"

using nlohmann::json;

namespace specsweep {

namespace {

json NumOrNull(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// rec[field][i] for the prompts i in `idx` (non-numbers left out).
std::vector<double> Pick(const json& rec, const std::string& field, const std::vector<size_t>& idx) {
  std::vector<double> out;
  if (!rec.contains(field) || !rec[field].is_array()) return out;
  const json& a = rec[field];
  for (size_t i : idx)
    if (i < a.size() && a[i].is_number()) out.push_back(a[i].get<double>());
  return out;
}

// SpecBenchSpeedup over the prompts `idx`, with a percentile bootstrap interval over them
// (a prompt's tokens/s resampled with its baseline's, so the pairing is kept).
Interval SpecBenchInterval(const std::vector<double>& point, const std::vector<double>& base, uint64_t seed) {
  Interval ci{SpecBenchSpeedup(point, base), NAN, NAN, int(std::min(point.size(), base.size()))};
  if (!std::isfinite(ci.mean)) return ci;
  std::vector<double> p(size_t(ci.n)), b(size_t(ci.n));
  const auto resampled = [&](std::span<const size_t> idx) {
    for (size_t i = 0; i < idx.size(); ++i) p[i] = point[idx[i]], b[i] = base[idx[i]];
    return SpecBenchSpeedup(p, b);
  };
  std::tie(ci.low, ci.high) = BootstrapPercentiles(size_t(ci.n), resampled, seed);
  return ci;
}

// Spec-Bench's speedup of the prompts `idx` against the baseline record (null: absent).
void PutSpecBenchSpeedup(const json& rec, const json* baseline, const std::vector<size_t>& idx, uint64_t seed,
                         json& out) {
  if (!baseline) return;
  const std::vector<double> point = Pick(rec, "per_prompt_tokens_per_s", idx),
                            base = Pick(*baseline, "per_prompt_tokens_per_s", idx);
  if (point.empty() || point.size() != base.size()) return;  // not the same prompts
  const Interval ci = SpecBenchInterval(point, base, seed);
  out["spec_bench_speedup"] = NumOrNull(ci.mean);
  out["spec_bench_speedup_ci_low"] = NumOrNull(ci.low);
  out["spec_bench_speedup_ci_high"] = NumOrNull(ci.high);
  out["spec_bench_speedup_n"] = ci.n;
}

json GroupRecord(const json& rec, const json* baseline, const std::string& group, const std::vector<size_t>& idx) {
  json out;
  for (auto& f : ParamFields())
    if (rec.contains(f)) out[f] = rec[f];
  for (const char* f : {"name", "run_name", "key", "baseline_key", "busy", "suspect", "repetitions", "kernel_isa",
                        "kernels", "threads_used", "prompt_set", "draft_tokenizer"})
    if (rec.contains(f)) out[f] = rec[f];
  out["category"] = group;
  out["prompts"] = int(idx.size());
  const uint64_t seed = SeedOf(rec.value("key", "") + "#" + group);
  for (auto [metric, field] : {std::pair{"speedup", "per_prompt_speedup"},
                               std::pair{"mean_accepted_length", "per_prompt_mean_accepted_length"}}) {
    const std::vector<double> v = Pick(rec, field, idx);
    if (v.empty()) continue;
    // The speedup estimator over the group's per-question (geometric-mean) speedups.
    const bool speedup = std::string(metric) == "speedup";
    const Interval ci = speedup ? Speedup(v, seed + 1) : BootstrapMean(v, seed);
    out[metric] = NumOrNull(ci.mean);
    out[std::string(metric) + "_ci_low"] = NumOrNull(ci.low);
    out[std::string(metric) + "_ci_high"] = NumOrNull(ci.high);
    out[std::string(metric) + "_n"] = ci.n;
    if (speedup) out["wide_ci"] = WideInterval(ci);
  }
  for (auto [metric, field] : {std::pair{"tokens_per_s", "per_prompt_tokens_per_s"},
                               std::pair{"acceptance_rate", "per_prompt_acceptance_rate"},
                               std::pair{"generated_tokens", "per_prompt_generated_tokens"},
                               std::pair{"prompt_tokens", "per_prompt_prompt_tokens"}}) {
    const std::vector<double> v = Pick(rec, field, idx);
    if (!v.empty()) out[metric] = NumOrNull(Mean(v));
  }
  PutSpecBenchSpeedup(rec, baseline, idx, seed + 2, out);
  return out;
}

}  // namespace

void CheckCategoryName(const std::string& category, const std::string& where) {
  if (category.empty()) Fail("{}: a prompt's category is empty: every report group needs a name", where);
  if (category == kOverallCategory)
    Fail("{}: prompt category '{}' is reserved for the figures over every question: rename it", where, category);
}

std::vector<std::string> CategoryOrder(const std::vector<AggregateRecord>& records) {
  std::vector<std::string> order;
  for (auto& r : records)
    for (const std::string& c : r.statistics.per_prompt_category)
      if (std::find(order.begin(), order.end(), c) == order.end()) {
        CheckCategoryName(c, "point " + r.identity.name);
        order.push_back(c);
      }
  return order;
}

std::vector<AggregateRecord> SplitByCategory(const std::vector<AggregateRecord>& records) {
  std::map<std::string, const json*> by_key;  // the baselines, for Spec-Bench's speedup
  for (auto& r : records)
    if (!r.Speculative()) by_key[r.identity.key] = &r.flat;
  std::vector<AggregateRecord> out;
  for (auto& r : records) {
    const auto base = by_key.find(r.identity.baseline_key);
    const json* baseline = r.Speculative() && base != by_key.end() ? base->second : nullptr;
    const std::vector<std::string>& cats = r.statistics.per_prompt_category;
    if (cats.empty()) {
      out.push_back(r);
      continue;
    }
    std::vector<size_t> all(cats.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    for (auto& g : CategoryOrder({r})) {
      std::vector<size_t> idx;
      for (size_t i = 0; i < cats.size(); ++i)
        if (cats[i] == g) idx.push_back(i);
      out.push_back(AggregateRecord::FromJson(GroupRecord(r.flat, baseline, g, idx)));
    }
    out.push_back(AggregateRecord::FromJson(GroupRecord(r.flat, baseline, kOverallCategory, all)));
  }
  return out;
}

}  // namespace specsweep
