#include "harness/report/aggregate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "base/error.h"
#include "decoders/common.h"
#include "decoders/draft_spec.h"
#include "harness/report/aggregate_parts.h"
#include "harness/report/statistics.h"
#include "models/model.h"

using nlohmann::json;

namespace specsweep {

double PredictedSpeedup(double alpha, double k, double c) {
  double denom = c * k + 1.0;
  // (1 - a^(K+1)) / (1 - a) = 1 + a + ... + a^K, which is K + 1 at a = 1.
  double tokens = std::abs(1.0 - alpha) < 1e-12 ? k + 1.0 : (1.0 - std::pow(alpha, k + 1.0)) / (1.0 - alpha);
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

double MeanAcceptedLength(const GenerationStats& s, bool speculative) {
  if (s.generated_tokens == 0) return NAN;
  return speculative ? s.mean_accepted_length() : 1.0;
}

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

namespace {

// Statistics reported for every point: value of one run, and value of a group of runs
// (the prompts of one repetition). Ratios pool their counts over the group; the others
// average over prompts.
struct Metric {
  const char* name;
  double (*run)(const GenerationStats&);
  bool pooled;                                     // group value = run() of the pooled stats
  double (*ar)(const GenerationStats&) = nullptr;  // run() of an autoregressive point, when it differs
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
      {"mean_accepted_length", [](const GenerationStats& s) { return MeanAcceptedLength(s, true); }, true,
       [](const GenerationStats& s) { return MeanAcceptedLength(s, false); }},
      {"alpha", [](const GenerationStats& s) { return EstimateAlpha(s); }, true},
      {"mean_k", [](const GenerationStats& s) { return MeanK(s); }, true},
  };
  return m;
}

// One value of metric `m` per repetition (each repetition is the full prompt set).
std::vector<double> PerRepetition(const Metric& m, bool speculative,
                                  const std::map<int, std::vector<const GenerationStats*>>& reps) {
  const auto run = !speculative && m.ar ? m.ar : m.run;
  std::vector<double> per_rep;
  for (auto& [rep, runs] : reps) {
    if (m.pooled) {
      per_rep.push_back(run(Pool(runs)));
    } else {
      double s = 0;
      for (auto* st : runs) s += run(*st);
      per_rep.push_back(runs.empty() ? 0.0 : s / double(runs.size()));
    }
  }
  return per_rep;
}

std::vector<const GenerationStats*> AllRuns(const RawRecord& r) {
  std::vector<const GenerationStats*> all;
  for (auto& run : r.runs) all.push_back(&run.stats);
  return all;
}

// The draft a raw record measured, parsed from its label as measure wrote it (no
// partial-quant note yet); none for an AR point or a draft this version does not know.
std::optional<DraftSpec> DraftOf(const RawRecord& r) {
  try {
    return ParseDraftSpec(FieldText(r.params, "draft"), "draft");
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

const std::vector<std::string>& StatisticNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Metric& m : Metrics()) n.push_back(m.name);
    return n;
  }();
  return names;
}

RecordIdentity BuildIdentity(const RawRecord& r) {
  RecordIdentity id;
  id.params = r.params;
  id.name = id.run_name = r.name;
  id.key = r.key;
  id.baseline_key = r.baseline_key;
  id.repetitions = r.repetitions;
  id.warmup = r.warmup;
  id.threads_used = r.threads_used;
  id.kernel_isa = r.kernel_isa;
  id.kernels = r.kernels;
  id.prompts = int(r.prompt_tokens.size());
  id.iterations = int(r.runs.size());
  id.host = r.host.ToJson();
  id.host_busy = r.host.busy;
  id.prompt_sha256 = r.identity.prompt_sha256;
  id.model_files = r.identity.model_files;
  id.experiment_sha256 = r.identity.experiment_sha256;
  id.target_types = r.target_types;
  id.draft_types = r.draft_types;
  id.draft_tokenizer = r.draft_tokenizer;
  // What ran: a quant type that covered only some matrices shows in the labels.
  for (auto [types, label] : {std::pair{&r.target_types, "target_quant"}, std::pair{&r.draft_types, "draft_quant"}}) {
    if (types->empty()) continue;
    const std::string asked = FieldText(id.params, label), shown = StoredTypesLabel(asked, *types);
    if (asked != "none" && asked != "-" && shown != asked) {
      id.params[label] = shown;
      if (std::string(label) == "draft_quant")
        id.params["draft"] = FieldText(id.params, "draft") + shown.substr(asked.size());
    }
  }
  id.ReadParams();
  return id;
}

RecordStatistics BuildStatistics(const RawRecord& r) {
  RecordStatistics s;
  std::map<int, std::vector<const GenerationStats*>> reps;
  for (auto& run : r.runs) reps[run.rep].push_back(&run.stats);
  const bool speculative = FieldText(r.params, "decoder") != "ar";  // as RecordIdentity::ReadParams
  for (auto& m : Metrics()) {
    const std::vector<double> per_rep = PerRepetition(m, speculative, reps);
    s.metrics.push_back({m.name, {Mean(per_rep), Median(per_rep), StdDev(per_rep)}});
  }
  s.per_prompt_prompt_tokens = r.prompt_tokens;
  s.per_prompt_category = r.prompt_categories;
  s.prompt_set = r.prompt_set;
  s.per_prompt_tokens_per_s = PerPrompt(r, Tps);
  s.per_prompt_mean_next_token_latency_s =
      PerPrompt(r, [](const GenerationStats& g) { return g.mean_next_token_latency_s; });
  s.per_prompt_acceptance_rate = PerPrompt(r, [](const GenerationStats& g) { return g.acceptance_rate(); });
  s.per_prompt_mean_accepted_length = PerPrompt(
      r, speculative ? +[](const GenerationStats& g) { return MeanAcceptedLength(g, true); }
                     : +[](const GenerationStats& g) { return MeanAcceptedLength(g, false); });
  s.per_prompt_generated_tokens = PerPrompt(r, [](const GenerationStats& g) { return double(g.generated_tokens); });
  return s;
}

namespace {

// Steps of a chain that drafted position i after accepting position i-1, per i, counted
// from the per-step traces ({} when a run has none).
std::vector<int64_t> ChainStepsReaching(const GenerationStats& pooled, size_t positions) {
  if (pooled.k_per_step.empty() || pooled.k_per_step.size() != pooled.accepted_per_step.size()) return {};
  std::vector<int64_t> reached(positions, 0);
  for (size_t s = 0; s < pooled.k_per_step.size(); ++s)
    for (size_t i = 0; i < positions && int(i) < pooled.k_per_step[s] && int(i) <= pooled.accepted_per_step[s]; ++i)
      ++reached[i];
  return reached;
}

}  // namespace

PositionAcceptance BuildPositions(const GenerationStats& pooled, bool chain) {
  PositionAcceptance p;
  // Per draft position i: unconditional = accepted / drafted there; conditional = given
  // that position i-1 was accepted and position i drafted. A chain's traces count those
  // steps exactly; without them (a tree, an old record) accepted_at_pos[i-1] bounds them
  // from above, which counts a clipped last step that accepted i-1 and drafted no i.
  const std::vector<int64_t> exact =
      chain ? ChainStepsReaching(pooled, pooled.drafted_at_pos.size()) : std::vector<int64_t>{};
  for (size_t i = 0; i < pooled.drafted_at_pos.size(); ++i) {
    const double d = double(pooled.drafted_at_pos[i]), a = double(pooled.accepted_at_pos[i]);
    p.acceptance_at_pos.push_back(d > 0 ? a / d : 0.0);
    const double reached = !exact.empty() ? double(exact[i])
                           : i == 0       ? d
                                          : std::min(d, double(pooled.accepted_at_pos[i - 1]));
    p.acceptance_at_pos_conditional.push_back(reached > 0 ? a / reached : 0.0);
  }
  p.drafted_at_pos = pooled.drafted_at_pos;
  p.accepted_at_pos = pooled.accepted_at_pos;
  // Steps whose accepted path (chain prefix or tree path) had length 0, 1, ...: a step
  // reaching length i+1 counts in accepted_at_pos[i] (for a tree, drafted_at_pos is per depth).
  const int64_t n_steps = static_cast<int64_t>(pooled.k_per_step.size());
  for (size_t i = 0; i <= pooled.accepted_at_pos.size() && n_steps > 0; ++i) {
    const int64_t reached = i == 0 ? n_steps : pooled.accepted_at_pos[i - 1];
    p.accepted_length_distribution.push_back(reached -
                                             (i < pooled.accepted_at_pos.size() ? pooled.accepted_at_pos[i] : 0));
  }
  p.draft_time_per_call_s = pooled.draft_calls ? pooled.draft_s / pooled.draft_calls : NAN;
  return p;
}

AggregateRecord AggregateTyped(const RawRecord& r, const RawRecord* baseline) {
  AggregateRecord a;
  a.identity = BuildIdentity(r);
  a.statistics = BuildStatistics(r);
  const GenerationStats pooled = Pool(AllRuns(r));
  const std::optional<DraftSpec> draft = DraftOf(r);
  a.positions = BuildPositions(pooled, !(draft && draft->IsTree()));
  a.cost = BuildCostModel(r, draft && draft->IsTree(), pooled, baseline);
  if (a.cost.speculative && baseline && baseline->prompt_tokens == r.prompt_tokens)
    a.comparison = BuildComparison(r, *baseline, *a.cost.speculative);
  a.batch = BuildBatchFigures(r);
  a.flat = a.ToJson();
  return a;
}

json Aggregate(const RawRecord& r, const RawRecord* baseline) { return AggregateTyped(r, baseline).flat; }

std::vector<AggregateRecord> AggregateAllTyped(const std::vector<RawRecord>& raws) {
  std::map<std::string, const RawRecord*> by_key;
  for (auto& r : raws) by_key[r.key] = &r;
  std::vector<AggregateRecord> out;
  for (auto& r : raws) {
    const RawRecord* base = nullptr;
    if (!r.baseline_key.empty()) {
      auto it = by_key.find(r.baseline_key);
      if (it != by_key.end()) base = it->second;
    }
    out.push_back(AggregateTyped(r, base));
  }
  return out;
}

std::vector<json> AggregateAll(const std::vector<RawRecord>& raws) { return RecordsToJson(AggregateAllTyped(raws)); }

}  // namespace specsweep
