#include "harness/report/aggregate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "decoders/common.h"
#include "harness/report/fit.h"
#include "harness/report/statistics.h"
#include "models/model.h"

using nlohmann::json;

namespace specsweep {

double PredictedSpeedup(double alpha, double k, double c) {
  double denom = c * k + 1.0;
  // (1 - a^(K+1)) / (1 - a) = 1 + a + ... + a^K, which is K + 1 at a = 1.
  double tokens = std::abs(1.0 - alpha) < 1e-12 ? k + 1.0
                                                 : (1.0 - std::pow(alpha, k + 1.0)) / (1.0 - alpha);
  return tokens / denom;
}

double EstimateAlpha(const GenerationStats& s) {
  // Position 0 is evaluated in every step that drafted one; position i only when
  // position i-1 was accepted (and the step drafted that far).
  double evaluated = 0, accepted = 0;
  size_t n = std::min(s.drafted_at_pos.size(), s.accepted_at_pos.size());
  for (size_t i = 0; i < n; ++i) {
    double e = double(s.drafted_at_pos[i]);
    if (i > 0) e = std::min(e, double(s.accepted_at_pos[i - 1]));
    evaluated += e;
    accepted += double(s.accepted_at_pos[i]);
  }
  return evaluated > 0 ? accepted / evaluated : 0.0;
}

namespace {

// Sums the counters and times of several runs (positions arrays element-wise).
GenerationStats Pool(const std::vector<const GenerationStats*>& runs) {
  GenerationStats p;
  for (auto* s : runs) AddStats(p, *s);
  return p;
}

double MeanK(const GenerationStats& s) {
  if (s.k_per_step.empty()) return 0.0;
  double t = 0;
  for (int k : s.k_per_step) t += k;
  return t / double(s.k_per_step.size());
}

// Statistics reported for every point: value of one run, and value of a group of runs
// (the prompts of one repetition). Ratios pool their counts over the group; the others
// average over prompts.
struct Metric {
  const char* name;
  double (*run)(const GenerationStats&);
  bool pooled;  // group value = run() of the pooled stats
};

const std::vector<Metric>& Metrics() {
  static const std::vector<Metric> m = {
      {"prompt_tokens", [](const GenerationStats& s) { return double(s.prompt_tokens); }, false},
      {"generated_tokens", [](const GenerationStats& s) { return double(s.generated_tokens); }, false},
      {"target_calls", [](const GenerationStats& s) { return double(s.target_calls); }, false},
      {"draft_calls", [](const GenerationStats& s) { return double(s.draft_calls); }, false},
      {"drafted", [](const GenerationStats& s) { return double(s.drafted); }, false},
      {"accepted", [](const GenerationStats& s) { return double(s.accepted); }, false},
      {"prefill_s", [](const GenerationStats& s) { return s.prefill_s; }, false},
      {"draft_s", [](const GenerationStats& s) { return s.draft_s; }, false},
      {"verify_s", [](const GenerationStats& s) { return s.verify_s; }, false},
      {"other_s", [](const GenerationStats& s) { return s.other_s; }, false},
      {"retokenize_s", [](const GenerationStats& s) { return s.retokenize_s; }, false},
      {"total_s", [](const GenerationStats& s) { return s.total_s; }, false},
      {"first_token_latency_s", [](const GenerationStats& s) { return s.first_token_latency_s; }, false},
      {"mean_next_token_latency_s", [](const GenerationStats& s) { return s.mean_next_token_latency_s; }, false},
      {"tokens_per_s", [](const GenerationStats& s) { return s.tokens_per_s; }, false},
      {"acceptance_rate", [](const GenerationStats& s) { return s.acceptance_rate(); }, true},
      {"mean_accepted_length", [](const GenerationStats& s) { return s.mean_accepted_length(); }, true},
      {"alpha", [](const GenerationStats& s) { return EstimateAlpha(s); }, true},
      {"mean_k", [](const GenerationStats& s) { return MeanK(s); }, true},
  };
  return m;
}

// Per-prompt means over repetitions of `f`.
std::vector<double> PerPrompt(const RawRecord& r, double (*f)(const GenerationStats&)) {
  size_t n = r.prompt_tokens.size();
  std::vector<double> sum(n, 0.0), cnt(n, 0.0);
  for (auto& run : r.runs) {
    sum[run.prompt] += f(run.stats);
    cnt[run.prompt] += 1;
  }
  for (size_t i = 0; i < n; ++i) sum[i] = cnt[i] > 0 ? sum[i] / cnt[i] : std::nan("");
  return sum;
}

double Tps(const GenerationStats& s) { return s.tokens_per_s; }
double Latency(const GenerationStats& s) { return s.mean_next_token_latency_s; }

json NumOrNull(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// T(n) of a call over n positions from the measured [n_max] costs (the target's, or a
// draft tree's); beyond n_max, their least-squares fit (harness/report/fit.h; only
// adaptive K policies draft past the measured range). One measured size: that cost.
double CallTime(const std::vector<double>& t, int n) {
  const int m = int(t.size());
  if (m == 0 || n < 1) return NAN;
  if (n <= m) return t[n - 1];
  const CostFit fit = FitVerifyCost(t);
  return fit.ok() ? fit.At(n) : t[m - 1];
}

// A model-drafted token tree's draft time over all steps: every call at its size, a
// catch-up of n tokens T_d(n), a tree call of n nodes T_d,tree(n) (both measured up to
// K + 1, fitted beyond). NaN when the runs did not record the sizes (older records).
double TreeDraftTime(const GenerationStats& s, const CallCosts& c) {
  if (s.draft_calls_by_size.empty() && s.draft_tree_calls_by_size.empty()) return NAN;
  double t = 0;
  for (auto [calls, cost] : {std::pair{&s.draft_calls_by_size, &c.draft_s},
                             std::pair{&s.draft_tree_calls_by_size, &c.draft_tree_s}})
    for (size_t i = 0; i < calls->size(); ++i)
      if ((*calls)[i] > 0) t += double((*calls)[i]) * CallTime(*cost, int(i) + 1);
  return t;
}

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

void PutInterval(json& out, const std::string& name, const Interval& ci) {
  out[name] = NumOrNull(ci.mean);
  out[name + "_ci_low"] = NumOrNull(ci.low);
  out[name + "_ci_high"] = NumOrNull(ci.high);
  out[name + "_n"] = ci.n;
}

// What the target calls of a speculative record's steps cost, in units of T_target(1):
// sum over steps of T(k_step + 1) / T(1), and the mean T(k_step + 1) per step.
struct VerifyCost {
  double calls_in_t1 = NAN, mean_verify_s = NAN;
};
VerifyCost VerifyCostOf(const GenerationStats& pooled, const std::vector<double>& t) {
  VerifyCost v;
  if (t.empty() || pooled.k_per_step.empty()) return v;
  double sum = 0;
  for (int k : pooled.k_per_step) sum += CallTime(t, k + 1);
  v.calls_in_t1 = sum / t[0];
  v.mean_verify_s = sum / double(pooled.k_per_step.size());
  return v;
}

// Steps fully accepted (a = k > 0) and followed by a step that drafts: the next step's
// first draft call then feeds two tokens (the last draft token and the bonus), T_d(2).
// NaN when the runs carry no per-step acceptance (records before #31).
double CatchUpsAfterFullSteps(const RawRecord& r) {
  double n = 0;
  for (const RawRun& run : r.runs) {
    const std::vector<int>&k = run.stats.k_per_step, &a = run.stats.accepted_per_step;
    if (a.size() != k.size()) return NAN;
    for (size_t i = 0; i + 1 < k.size(); ++i) n += a[i] == k[i] && k[i] > 0 && k[i + 1] > 0;
  }
  return n;
}

// Tokens an autoregressive record's decode yields per target call in it: its prefill
// yields the first token, so a generation of G tokens makes G - 1 decode calls.
double TokensPerDecodeCall(const RawRecord& ar) {
  double tokens = 0, calls = 0;
  for (const RawRun& run : ar.runs) {
    tokens += run.stats.generated_tokens;
    calls += std::max(0, run.stats.target_calls - 1);
  }
  return calls > 0 ? tokens / calls : 1.0;
}

}  // namespace

json Aggregate(const RawRecord& r, const RawRecord* baseline) {
  json out = r.params;
  out["name"] = r.name;
  out["run_name"] = r.name;
  out["run_type"] = "aggregate";
  out["key"] = r.key;
  out["baseline_key"] = r.baseline_key;
  out["repetitions"] = r.repetitions;
  out["warmup"] = r.warmup;
  out["threads_used"] = r.threads_used;
  out["kernel_isa"] = r.kernel_isa;
  out["prompts"] = int(r.prompt_tokens.size());
  out["iterations"] = int(r.runs.size());
  out["host"] = r.host.ToJson();
  out["busy"] = r.host.busy;
  // Identity, so that check and merge match records by what they measured, not by name.
  out["prompt_sha256"] = r.identity.prompt_sha256;
  out["model_files"] = ModelFilesToJson(r.identity.model_files);
  out["experiment_sha256"] = r.identity.experiment_sha256;
  // What ran: a quant type that covered only some matrices shows in the labels.
  for (auto [field, types, label] : {std::tuple{"target_types", &r.target_types, "target_quant"},
                                     std::tuple{"draft_types", &r.draft_types, "draft_quant"}}) {
    if (types->empty()) continue;
    out[field] = *types;
    const std::string asked = FieldText(out, label), shown = StoredTypesLabel(asked, *types);
    if (asked != "none" && asked != "-" && shown != asked) {
      out[label] = shown;
      if (std::string(label) == "draft_quant") out["draft"] = FieldText(out, "draft") + shown.substr(asked.size());
    }
  }

  // Group runs by repetition; each group is the full prompt set.
  std::map<int, std::vector<const GenerationStats*>> reps;
  std::vector<const GenerationStats*> all;
  for (auto& run : r.runs) {
    reps[run.rep].push_back(&run.stats);
    all.push_back(&run.stats);
  }
  for (auto& m : Metrics()) {
    std::vector<double> per_rep;
    for (auto& [rep, runs] : reps) {
      if (m.pooled) {
        per_rep.push_back(m.run(Pool(runs)));
      } else {
        double s = 0;
        for (auto* st : runs) s += m.run(*st);
        per_rep.push_back(runs.empty() ? 0.0 : s / double(runs.size()));
      }
    }
    out[m.name] = NumOrNull(Mean(per_rep));
    out[std::string(m.name) + "_median"] = NumOrNull(Median(per_rep));
    out[std::string(m.name) + "_std"] = NumOrNull(StdDev(per_rep));
  }
  // Google Benchmark's time fields: mean wall time of one generation.
  out["real_time"] = NumOrNull(out["total_s"].is_number() ? out["total_s"].get<double>() * 1e3 : NAN);
  out["cpu_time"] = out["real_time"];
  out["time_unit"] = "ms";

  out["per_prompt_prompt_tokens"] = r.prompt_tokens;
  if (!r.prompt_categories.empty()) out["per_prompt_category"] = r.prompt_categories;
  if (!r.prompt_set.empty()) out["prompt_set"] = r.prompt_set;
  out["per_prompt_tokens_per_s"] = PerPrompt(r, Tps);
  out["per_prompt_mean_next_token_latency_s"] = PerPrompt(r, Latency);
  out["per_prompt_acceptance_rate"] = PerPrompt(r, [](const GenerationStats& s) { return s.acceptance_rate(); });
  out["per_prompt_mean_accepted_length"] =
      PerPrompt(r, [](const GenerationStats& s) { return s.mean_accepted_length(); });
  out["per_prompt_generated_tokens"] =
      PerPrompt(r, [](const GenerationStats& s) { return double(s.generated_tokens); });

  // Per draft position i: unconditional = accepted / drafted there; conditional = given
  // that position i-1 was accepted (and position i drafted).
  GenerationStats pooled = Pool(all);
  std::vector<double> acc_at_pos, acc_cond;
  for (size_t i = 0; i < pooled.drafted_at_pos.size(); ++i) {
    const double d = double(pooled.drafted_at_pos[i]), a = double(pooled.accepted_at_pos[i]);
    acc_at_pos.push_back(d > 0 ? a / d : 0.0);
    const double reached = i == 0 ? d : std::min(d, double(pooled.accepted_at_pos[i - 1]));
    acc_cond.push_back(reached > 0 ? a / reached : 0.0);
  }
  out["drafted_at_pos"] = pooled.drafted_at_pos;
  out["accepted_at_pos"] = pooled.accepted_at_pos;
  out["acceptance_at_pos"] = acc_at_pos;
  out["acceptance_at_pos_conditional"] = acc_cond;
  // Steps whose accepted path (chain prefix or tree path) had length 0, 1, ...: a step
  // reaching length i+1 counts in accepted_at_pos[i] (for a tree, drafted_at_pos is per depth).
  std::vector<int64_t> path_lengths;
  const int64_t n_steps = static_cast<int64_t>(pooled.k_per_step.size());
  for (size_t i = 0; i <= pooled.accepted_at_pos.size() && n_steps > 0; ++i) {
    const int64_t reached = i == 0 ? n_steps : pooled.accepted_at_pos[i - 1];
    path_lengths.push_back(reached - (i < pooled.accepted_at_pos.size() ? pooled.accepted_at_pos[i] : 0));
  }
  out["accepted_length_distribution"] = path_lengths;
  const double draft_per_call = pooled.draft_calls ? pooled.draft_s / pooled.draft_calls : NAN;
  out["draft_time_per_call_s"] = NumOrNull(draft_per_call);

  // Verify-cost model inputs, measured in the same process as the runs.
  const std::vector<double>& t = r.costs.target_s;
  const double t1 = t.empty() ? NAN : t[0];
  const double td1 = r.costs.draft_s.size() >= 1 ? r.costs.draft_s[0] : NAN;
  const double td2 = r.costs.draft_s.size() >= 2 ? r.costs.draft_s[1] : NAN;
  out["target_time_s"] = NumOrNull(t1);
  out["target_time_by_n_s"] = t;
  if (const CostFit fit = FitVerifyCost(t); fit.ok())  // T(n) ~ intercept + slope max(n, knee)
    out["verify_cost_fit"] = {{"intercept_s", fit.intercept_s}, {"slope_s", fit.slope_s}, {"knee", fit.knee},
                              {"max_residual_rel", fit.max_residual_rel}, {"points", fit.points}};
  out["draft_time_s"] = NumOrNull(td1);
  out["draft_catch_up_time_s"] = NumOrNull(td2);
  if (!r.costs.draft_tree_s.empty()) {  // a model's token tree: its calls by size
    out["draft_time_by_n_s"] = r.costs.draft_s;
    out["draft_tree_time_by_n_s"] = r.costs.draft_tree_s;
  }

  const bool spec = !r.baseline_key.empty();
  if (!spec) return out;

  const VerifyCost vc = VerifyCostOf(pooled, t);
  const double steps = double(pooled.k_per_step.size());
  out["verify_time_s"] = NumOrNull(vc.mean_verify_s);
  // A step emits at most accepted + 1 tokens and costs at least its verify call, so no
  // speedup can beat tokens / (sum over steps of T(k+1) / T(1)).
  const double bound = double(pooled.generated_tokens) / vc.calls_in_t1;
  out["speedup_bound"] = NumOrNull(bound);

  // Cost model: E[tokens per step] x T(1) / (draft time per step + mean T(k+1)).
  double e_tokens = 1.0;
  for (size_t i = 0; i < pooled.accepted_at_pos.size(); ++i) e_tokens += double(pooled.accepted_at_pos[i]) / steps;
  double draft_step = NAN;
  const std::string draft = FieldText(r.params, "draft");
  if (draft.find("branching=") != std::string::npos || draft.find("tree_budget=") != std::string::npos) {
    // A token tree: each draft call at its size (a model's tree: catch-ups T_d(n) and
    // tree calls T_d,tree(n); docs/trees.md), or the drafter's measured time (no model).
    draft_step = std::isfinite(td1) ? TreeDraftTime(pooled, r.costs) / steps : pooled.draft_s / steps;
  } else if (std::isfinite(td1)) {
    // Every draft call costs T_d(1), the first one of a step after a fully accepted step
    // T_d(2) (it also feeds the last draft token): counted from the per-step traces, so
    // for any K policy (records without them: constant K only, from the positions).
    double catch_ups = CatchUpsAfterFullSteps(r);
    const size_t kk = size_t(std::max(0, int(FieldNumber(r.params, "k"))));
    if (!std::isfinite(catch_ups))
      catch_ups = FieldText(r.params, "k_policy") == "constant" && kk > 0 && kk <= pooled.accepted_at_pos.size()
                      ? double(pooled.accepted_at_pos[kk - 1])
                      : 0.0;
    draft_step = (double(pooled.draft_calls) * td1 + catch_ups * (td2 - td1)) / steps;
  } else if (steps > 0) {
    draft_step = pooled.draft_s / steps;  // a drafter without a model (measured in the loop)
  }
  const double cost_ratio = td1 / t1;
  out["cost_ratio"] = NumOrNull(cost_ratio);
  // The baseline's decode as measured: its prefill yields the first token, so G tokens
  // cost G - 1 calls of T(1) (3% of the baseline's time at 32 new tokens).
  const double ar_tokens_per_call = baseline ? TokensPerDecodeCall(*baseline) : 1.0;
  out["predicted_speedup"] = NumOrNull(e_tokens * t1 / ar_tokens_per_call / (draft_step + vc.mean_verify_s));
  out["predicted_speedup_leviathan"] =
      NumOrNull(std::isfinite(cost_ratio) ? PredictedSpeedup(EstimateAlpha(pooled), MeanK(pooled), cost_ratio) : NAN);

  if (!baseline || baseline->prompt_tokens != r.prompt_tokens) return out;
  out["baseline_tokens_per_s"] = NumOrNull(Mean(PerPrompt(*baseline, Tps)));
  // Speedup: tokens/s of the point over the baseline's in the same round, one ratio per
  // (prompt, repetition); mean with a seeded bootstrap interval over those ratios.
  const std::vector<RoundRatio> rounds = RoundRatios(r, *baseline, Tps);
  const std::vector<double> ratios = Values(rounds);
  const Interval ci = BootstrapMean(ratios, SeedOf(r.key));
  PutInterval(out, "speedup", ci);
  out["speedup_median"] = NumOrNull(Median(ratios));
  out["speedup_std"] = NumOrNull(StdDev(ratios));
  out["per_prompt_speedup"] = PerPromptMeans(rounds, r.prompt_tokens.size());
  // Agreement of the verify-cost model with the measurement (1 = exact).
  out["predicted_over_measured"] = NumOrNull(FieldNumber(out, "predicted_speedup") / ci.mean);
  // Latency: the baseline's next-token latency over the point's, same rounds.
  PutInterval(out, "latency_speedup", BootstrapMean(Values(RoundRatios(*baseline, r, Latency)), SeedOf(r.key) + 1));

  const bool suspect = std::isfinite(ci.mean) && std::isfinite(bound) && ci.mean > bound * (1.0 + kSuspectMargin);
  const bool wide = ci.n < 2 || !(ci.half_width_rel() <= kWideInterval);
  out["suspect"] = suspect;
  out["wide_ci"] = wide;
  out["busy"] = r.host.busy || baseline->host.busy;

  // Lossless check: identical outputs to the baseline for the same prompt and rep.
  std::map<std::pair<int, int>, std::string> base_out;
  for (auto& run : baseline->runs) base_out[{run.prompt, run.rep}] = run.output_hash;
  int same = 0, total = 0;
  for (auto& run : r.runs) {
    auto it = base_out.find({run.prompt, run.rep});
    if (it == base_out.end()) continue;
    ++total;
    same += it->second == run.output_hash;
  }
  out["outputs_match_baseline"] = NumOrNull(total ? double(same) / total : NAN);
  return out;
}

std::vector<json> AggregateAll(const std::vector<RawRecord>& raws) {
  std::map<std::string, const RawRecord*> by_key;
  for (auto& r : raws) by_key[r.key] = &r;
  std::vector<json> out;
  for (auto& r : raws) {
    const RawRecord* base = nullptr;
    if (!r.baseline_key.empty()) {
      auto it = by_key.find(r.baseline_key);
      if (it != by_key.end()) base = it->second;
    }
    out.push_back(Aggregate(r, base));
  }
  return out;
}

}  // namespace specsweep
