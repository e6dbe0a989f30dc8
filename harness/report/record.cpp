// The flat JSON form of each part of an aggregated record: written and read here only.
#include "harness/report/record.h"

#include <algorithm>
#include <cstdlib>

#include "base/error.h"

using nlohmann::json;

namespace specsweep {

namespace {

json NumOrNull(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// Readers tolerant of older records: an absent or null field is NaN, 0, false or empty.
double Num(const json& j, const char* f) { return j.contains(f) && j[f].is_number() ? j[f].get<double>() : NAN; }
int Int(const json& j, const char* f) { return j.contains(f) && j[f].is_number() ? j[f].get<int>() : 0; }
bool Bool(const json& j, const char* f) { return j.contains(f) && j[f].is_boolean() && j[f].get<bool>(); }
std::string Text(const json& j, const char* f) {
  return j.contains(f) && j[f].is_string() ? j[f].get<std::string>() : std::string();
}
std::vector<double> Nums(const json& j, const char* f) {
  std::vector<double> out;
  if (j.contains(f) && j[f].is_array())
    for (const json& v : j[f]) out.push_back(v.is_number() ? v.get<double>() : NAN);
  return out;
}
template <typename T>
T Get(const json& j, const char* f) {
  if (!j.contains(f) || j[f].is_null()) return T{};
  try {
    return j[f].get<T>();
  } catch (const json::exception&) {
    return T{};
  }
}

void PutInterval(json& out, const std::string& name, const Interval& ci) {
  out[name] = NumOrNull(ci.mean);
  out[name + "_ci_low"] = NumOrNull(ci.low);
  out[name + "_ci_high"] = NumOrNull(ci.high);
  out[name + "_n"] = ci.n;
}
Interval GetInterval(const json& j, const std::string& name) {
  return Interval{Num(j, name.c_str()), Num(j, (name + "_ci_low").c_str()), Num(j, (name + "_ci_high").c_str()),
                  Int(j, (name + "_n").c_str())};
}

// The draft label of a record; records without the whole label: its base and quant.
std::string DraftLabelOf(const json& j) {
  std::string label = FieldText(j, "draft");
  if (!label.empty()) return label;
  const std::string base = FieldText(j, "draft_base"), q = FieldText(j, "draft_quant");
  const bool has_q = !q.empty() && q != "none" && q != "-";
  return base.empty() || base == "self" ? (has_q ? q : "self") : base + (has_q ? "+" + q : "");
}

}  // namespace

void RecordIdentity::ToJson(json& out) const {
  for (auto& [f, v] : params.items()) out[f] = v;
  out["name"] = name;
  out["run_name"] = run_name;
  out["run_type"] = "aggregate";
  out["key"] = key;
  out["baseline_key"] = baseline_key;
  out["repetitions"] = repetitions;
  out["warmup"] = warmup;
  out["threads_used"] = threads_used;
  out["kernel_isa"] = kernel_isa;
  if (!kernels.empty()) out["kernels"] = kernels;
  out["prompts"] = prompts;
  out["iterations"] = iterations;
  out["host"] = host;
  out["busy"] = host_busy;
  // Identity, so that check and merge match records by what they measured, not by name.
  out["prompt_sha256"] = prompt_sha256;
  out["model_files"] = ModelFilesToJson(model_files);
  out["experiment_sha256"] = experiment_sha256;
  if (!draft_tokenizer.empty()) out["draft_tokenizer"] = draft_tokenizer;
  if (!target_types.empty()) out["target_types"] = target_types;
  if (!draft_types.empty()) out["draft_types"] = draft_types;
}

RecordIdentity RecordIdentity::FromJson(const json& j) {
  RecordIdentity id;
  for (const std::string& f : ParamFields())
    if (j.contains(f)) id.params[f] = j[f];
  for (const char* f : {"draft", "draft_p_min"})
    if (j.contains(f)) id.params[f] = j[f];
  id.name = Text(j, "name");
  id.run_name = Text(j, "run_name");
  id.key = Text(j, "key");
  id.baseline_key = Text(j, "baseline_key");
  id.repetitions = Int(j, "repetitions");
  id.warmup = Int(j, "warmup");
  id.threads_used = Int(j, "threads_used");
  id.prompts = Int(j, "prompts");
  id.iterations = Int(j, "iterations");
  id.kernel_isa = Text(j, "kernel_isa");
  id.kernels = Get<std::map<std::string, std::string>>(j, "kernels");
  id.host = j.contains("host") ? j["host"] : json();
  id.host_busy = Bool(j, "busy");
  id.prompt_sha256 = Text(j, "prompt_sha256");
  id.experiment_sha256 = Text(j, "experiment_sha256");
  id.draft_tokenizer = Text(j, "draft_tokenizer");
  try {
    id.model_files = ModelFilesFromJson(j);
  } catch (const json::exception&) {
  }  // malformed: check reports it (IdentityMismatch), tables and plots do without
  id.target_types = Get<std::map<std::string, int>>(j, "target_types");
  id.draft_types = Get<std::map<std::string, int>>(j, "draft_types");
  id.ReadParams();
  return id;
}

void RecordIdentity::ReadParams() {
  speculative = FieldText(params, "decoder") != "ar";
  draft_label = DraftLabelOf(params);
  draft.reset();
  try {
    draft = ParseDraftSpec(draft_label, "draft");
  } catch (const Error&) {
  }  // a draft this version does not know, or a label noting a partial quant type
}

double RecordStatistics::Mean(const std::string& metric) const {
  for (auto& [name, s] : metrics)
    if (name == metric) return s.mean;
  return NAN;
}

void RecordStatistics::ToJson(json& out) const {
  for (auto& [name, s] : metrics) {
    out[name] = NumOrNull(s.mean);
    out[name + "_median"] = NumOrNull(s.median);
    out[name + "_std"] = NumOrNull(s.std);
  }
  // Google Benchmark's time fields: mean wall time of one generation.
  out["real_time"] = NumOrNull(Mean("total_s") * 1e3);
  out["cpu_time"] = out["real_time"];
  out["time_unit"] = "ms";
  out["per_prompt_prompt_tokens"] = per_prompt_prompt_tokens;
  if (!per_prompt_category.empty()) out["per_prompt_category"] = per_prompt_category;
  if (!prompt_set.is_null() && !prompt_set.empty()) out["prompt_set"] = prompt_set;
  out["per_prompt_tokens_per_s"] = per_prompt_tokens_per_s;
  out["per_prompt_mean_next_token_latency_s"] = per_prompt_mean_next_token_latency_s;
  out["per_prompt_acceptance_rate"] = per_prompt_acceptance_rate;
  out["per_prompt_mean_accepted_length"] = per_prompt_mean_accepted_length;
  out["per_prompt_generated_tokens"] = per_prompt_generated_tokens;
}

RecordStatistics RecordStatistics::FromJson(const json& j) {
  RecordStatistics s;
  for (const std::string& name : StatisticNames())
    if (j.contains(name))
      s.metrics.push_back(
          {name, {Num(j, name.c_str()), Num(j, (name + "_median").c_str()), Num(j, (name + "_std").c_str())}});
  s.per_prompt_prompt_tokens = Get<std::vector<int>>(j, "per_prompt_prompt_tokens");
  s.per_prompt_category = Get<std::vector<std::string>>(j, "per_prompt_category");
  s.prompt_set = j.contains("prompt_set") ? j["prompt_set"] : json();
  s.per_prompt_tokens_per_s = Nums(j, "per_prompt_tokens_per_s");
  s.per_prompt_mean_next_token_latency_s = Nums(j, "per_prompt_mean_next_token_latency_s");
  s.per_prompt_acceptance_rate = Nums(j, "per_prompt_acceptance_rate");
  s.per_prompt_mean_accepted_length = Nums(j, "per_prompt_mean_accepted_length");
  s.per_prompt_generated_tokens = Nums(j, "per_prompt_generated_tokens");
  return s;
}

void PositionAcceptance::ToJson(json& out) const {
  out["drafted_at_pos"] = drafted_at_pos;
  out["accepted_at_pos"] = accepted_at_pos;
  out["acceptance_at_pos"] = acceptance_at_pos;
  out["acceptance_at_pos_conditional"] = acceptance_at_pos_conditional;
  out["accepted_length_distribution"] = accepted_length_distribution;
  out["draft_time_per_call_s"] = NumOrNull(draft_time_per_call_s);
}

PositionAcceptance PositionAcceptance::FromJson(const json& j) {
  PositionAcceptance p;
  p.drafted_at_pos = Get<std::vector<int64_t>>(j, "drafted_at_pos");
  p.accepted_at_pos = Get<std::vector<int64_t>>(j, "accepted_at_pos");
  p.acceptance_at_pos = Nums(j, "acceptance_at_pos");
  p.acceptance_at_pos_conditional = Nums(j, "acceptance_at_pos_conditional");
  p.accepted_length_distribution = Get<std::vector<int64_t>>(j, "accepted_length_distribution");
  p.draft_time_per_call_s = Num(j, "draft_time_per_call_s");
  return p;
}

void CostModel::ToJson(json& out) const {
  out["target_time_s"] = NumOrNull(target_time_s);
  out["target_time_by_n_s"] = target_time_by_n_s;
  if (verify_cost_fit)
    out["verify_cost_fit"] = {{"intercept_s", verify_cost_fit->intercept_s},
                              {"slope_s", verify_cost_fit->slope_s},
                              {"knee", verify_cost_fit->knee},
                              {"max_residual_rel", verify_cost_fit->max_residual_rel},
                              {"points", verify_cost_fit->points}};
  out["draft_time_s"] = NumOrNull(draft_time_s);
  out["draft_catch_up_time_s"] = NumOrNull(draft_catch_up_time_s);
  if (!draft_tree_time_by_n_s.empty()) {  // a model's token tree: its calls by size
    out["draft_time_by_n_s"] = draft_time_by_n_s;
    out["draft_tree_time_by_n_s"] = draft_tree_time_by_n_s;
  }
  if (!speculative) return;
  out["verify_time_s"] = NumOrNull(speculative->verify_time_s);
  out["speedup_bound"] = NumOrNull(speculative->speedup_bound);
  out["cost_ratio"] = NumOrNull(speculative->cost_ratio);
  out["predicted_speedup"] = NumOrNull(speculative->predicted_speedup);
  out["predicted_speedup_leviathan"] = NumOrNull(speculative->predicted_speedup_leviathan);
}

CostModel CostModel::FromJson(const json& j) {
  CostModel c;
  c.target_time_s = Num(j, "target_time_s");
  c.target_time_by_n_s = Nums(j, "target_time_by_n_s");
  if (j.contains("verify_cost_fit") && j["verify_cost_fit"].is_object()) {
    const json& f = j["verify_cost_fit"];
    c.verify_cost_fit =
        CostFit{Num(f, "intercept_s"), Num(f, "slope_s"), Int(f, "knee"), Num(f, "max_residual_rel"), Int(f, "points")};
  }
  c.draft_time_s = Num(j, "draft_time_s");
  c.draft_catch_up_time_s = Num(j, "draft_catch_up_time_s");
  c.draft_time_by_n_s = Nums(j, "draft_time_by_n_s");
  c.draft_tree_time_by_n_s = Nums(j, "draft_tree_time_by_n_s");
  if (j.contains("speedup_bound") || j.contains("predicted_speedup"))
    c.speculative = Speculative{Num(j, "verify_time_s"), Num(j, "speedup_bound"), Num(j, "cost_ratio"),
                                Num(j, "predicted_speedup"), Num(j, "predicted_speedup_leviathan")};
  return c;
}

void BaselineComparison::ToJson(json& out) const {
  out["baseline_tokens_per_s"] = NumOrNull(baseline_tokens_per_s);
  PutInterval(out, "speedup", speedup);
  out["speedup_median"] = NumOrNull(speedup_median);
  out["speedup_std"] = NumOrNull(speedup_std);
  out["per_prompt_speedup"] = per_prompt_speedup;
  out["spec_bench_speedup"] = NumOrNull(spec_bench_speedup);
  // Agreement of the verify-cost model with the measurement (1 = exact).
  out["predicted_over_measured"] = NumOrNull(predicted_over_measured);
  PutInterval(out, "latency_speedup", latency_speedup);
  out["suspect"] = suspect;
  out["wide_ci"] = wide_ci;
  out["busy"] = busy;
  out["outputs_match_baseline"] = NumOrNull(outputs_match_baseline);
}

BaselineComparison BaselineComparison::FromJson(const json& j) {
  BaselineComparison b;
  b.baseline_tokens_per_s = Num(j, "baseline_tokens_per_s");
  b.speedup = GetInterval(j, "speedup");
  b.speedup_median = Num(j, "speedup_median");
  b.speedup_std = Num(j, "speedup_std");
  b.per_prompt_speedup = Nums(j, "per_prompt_speedup");
  b.spec_bench_speedup = Num(j, "spec_bench_speedup");
  b.predicted_over_measured = Num(j, "predicted_over_measured");
  b.latency_speedup = GetInterval(j, "latency_speedup");
  b.suspect = Bool(j, "suspect");
  b.wide_ci = Bool(j, "wide_ci");
  b.busy = Bool(j, "busy");
  b.outputs_match_baseline = Num(j, "outputs_match_baseline");
  return b;
}

void BatchFigures::ToJson(json& out) const {
  out["batch"] = batch;  // a number here; the point's params hold it as text when not 1
  if (batch == 1) return;
  out["batch_target_calls"] = NumOrNull(batch_target_calls);
  out["per_sequence_next_token_latency_s"] = NumOrNull(per_sequence_next_token_latency_s);
  out["per_sequence_next_token_latency_min_s"] = NumOrNull(per_sequence_next_token_latency_min_s);
  out["per_sequence_next_token_latency_max_s"] = NumOrNull(per_sequence_next_token_latency_max_s);
  out["per_sequence_acceptance_min"] = NumOrNull(per_sequence_acceptance_min);
  out["per_sequence_acceptance_max"] = NumOrNull(per_sequence_acceptance_max);
  out["batch_occupancy"] = NumOrNull(batch_occupancy);
}

BatchFigures BatchFigures::FromJson(const json& j) {
  BatchFigures b;
  const std::string text = FieldText(j, "batch");  // a number, or the params' text of an unaggregated form
  b.batch = text.empty() ? 1 : std::max(1, std::atoi(text.c_str()));
  b.batch_target_calls = Num(j, "batch_target_calls");
  b.per_sequence_next_token_latency_s = Num(j, "per_sequence_next_token_latency_s");
  b.per_sequence_next_token_latency_min_s = Num(j, "per_sequence_next_token_latency_min_s");
  b.per_sequence_next_token_latency_max_s = Num(j, "per_sequence_next_token_latency_max_s");
  b.per_sequence_acceptance_min = Num(j, "per_sequence_acceptance_min");
  b.per_sequence_acceptance_max = Num(j, "per_sequence_acceptance_max");
  b.batch_occupancy = Num(j, "batch_occupancy");
  return b;
}

json AggregateRecord::ToJson() const {
  json out = json::object();
  identity.ToJson(out);
  statistics.ToJson(out);
  positions.ToJson(out);
  cost.ToJson(out);
  if (comparison) comparison->ToJson(out);  // its busy includes the baseline's
  batch.ToJson(out);
  return out;
}

AggregateRecord AggregateRecord::FromJson(const json& j) {
  AggregateRecord r;
  r.identity = RecordIdentity::FromJson(j);
  r.statistics = RecordStatistics::FromJson(j);
  r.positions = PositionAcceptance::FromJson(j);
  r.cost = CostModel::FromJson(j);
  if (j.contains("speedup") || j.contains("suspect") || j.contains("wide_ci"))
    r.comparison = BaselineComparison::FromJson(j);
  r.batch = BatchFigures::FromJson(j);
  r.flat = j;
  return r;
}

const json& AggregateRecord::operator[](const char* field) const {
  static const json absent;
  return flat.contains(field) ? flat[field] : absent;
}

std::string FieldText(const AggregateRecord& r, const std::string& field) {
  // Records from before batching have no batch field: they ran at batch 1, and say so to
  // tables and filters beside newer ones.
  if (field == "batch" && !r.flat.contains("batch")) return std::to_string(r.batch.batch);
  return FieldText(r.flat, field);
}
double FieldNumber(const AggregateRecord& r, const std::string& field) { return FieldNumber(r.flat, field); }
std::string KLabelOf(const AggregateRecord& r) { return KLabelOf(r.flat); }
std::string AcceptanceCaptionOf(const AggregateRecord& r) { return AcceptanceCaptionOf(r.flat); }
bool IsReplayed(const AggregateRecord& r) { return IsReplayed(r.flat); }

std::vector<AggregateRecord> RecordsFromJson(const std::vector<json>& flat) {
  std::vector<AggregateRecord> out;
  for (const json& j : flat) out.push_back(AggregateRecord::FromJson(j));
  return out;
}

std::vector<json> RecordsToJson(const std::vector<AggregateRecord>& records) {
  std::vector<json> out;
  for (const AggregateRecord& r : records) out.push_back(r.flat);
  return out;
}

}  // namespace specsweep
