#include "harness/report/parts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "harness/report/aggregate.h"
#include "harness/report/statistics.h"
#include "harness/store/sha256.h"

using nlohmann::json;

namespace specsweep {

std::string KeyWithoutPart(const std::string& key) {
  const size_t at = key.rfind(";part=");  // Point::Key writes the part last
  return at == std::string::npos ? key : key.substr(0, at);
}

std::string NameWithoutPart(const std::string& name) {
  const size_t at = name.rfind("/part=");
  return at == std::string::npos ? name : name.substr(0, at);
}

namespace {

json NumOrNull(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// Counts that add up over parts (the others are means or settings).
bool Summed(const std::string& f) {
  static const std::set<std::string> s = {"prompts", "iterations", "drafted_at_pos", "accepted_at_pos",
                                          "accepted_length_distribution"};
  return s.count(f) || f.ends_with("_n");
}

// Numbers of `vals` (null and non-numbers left out) merged: summed, or their mean
// weighted by `w`; null when none is finite.
json MergeNumbers(const std::vector<const json*>& vals, const std::vector<double>& w, bool sum) {
  double total = 0, weight = 0;
  for (size_t i = 0; i < vals.size(); ++i)
    if (vals[i]->is_number() && std::isfinite(vals[i]->get<double>()))
      total += (sum ? 1.0 : w[i]) * vals[i]->get<double>(), weight += w[i];
  if (weight == 0) return nullptr;
  if (sum && std::all_of(vals.begin(), vals.end(), [](const json* v) { return v->is_number_integer(); }))
    return int64_t(std::llround(total));
  return NumOrNull(sum ? total : total / weight);
}

// One field over the parts (`vals[i]` the part i's, null when absent).
json MergeField(const std::string& f, const std::vector<const json*>& vals, const std::vector<double>& w) {
  if (f.starts_with("per_prompt_")) {  // one entry per question: the parts' in order
    json all = json::array();
    for (const json* v : vals)
      if (v->is_array()) all.insert(all.end(), v->begin(), v->end());
    return all;
  }
  const bool equal = std::all_of(vals.begin(), vals.end(), [&](const json* v) { return *v == *vals[0]; });
  if (equal && !Summed(f)) return *vals[0];
  if (f.ends_with("_median") || f.ends_with("_std")) return nullptr;  // over rounds: not kept
  auto all = [&](bool (json::*is)() const noexcept) {
    return std::all_of(vals.begin(), vals.end(), [&](const json* v) { return (v->*is)() || v->is_null(); });
  };
  if (all(&json::is_boolean)) {  // flags: any part's
    return std::any_of(vals.begin(), vals.end(), [](const json* v) { return v->is_boolean() && v->get<bool>(); });
  }
  if (all(&json::is_number)) {
    // Integers that differ and do not add up (the shard a part ran in) have no one value.
    if (!Summed(f) && std::all_of(vals.begin(), vals.end(), [](const json* v) { return v->is_number_integer(); }))
      return nullptr;
    return MergeNumbers(vals, w, Summed(f));
  }
  if (all(&json::is_array)) {  // element-wise: per position, per batch size
    size_t n = 0;
    for (const json* v : vals) n = std::max(n, v->is_array() ? v->size() : 0);
    json out = json::array();
    const json null;
    for (size_t i = 0; i < n; ++i) {
      std::vector<const json*> at;
      for (const json* v : vals) at.push_back(v->is_array() && i < v->size() ? &(*v)[i] : &null);
      if (!std::all_of(at.begin(), at.end(), [](const json* x) { return x->is_number() || x->is_null(); }))
        return *vals[0];
      out.push_back(MergeNumbers(at, w, Summed(f)));
    }
    return out;
  }
  return *vals[0];  // text, objects: the first part's
}

// The prompt sets of the parts as one: question ids and raw categories in order, and the
// parts' names.
json MergePromptSets(const std::vector<const AggregateRecord*>& parts) {
  json out = parts[0]->flat.value("prompt_set", json::object());
  json ids = json::array(), cats = json::array(), names = json::array();
  for (const AggregateRecord* p : parts) {
    const json set = p->flat.value("prompt_set", json::object());
    for (auto [f, all] : {std::pair{"question_ids", &ids}, std::pair{"categories", &cats}})
      if (set.contains(f) && set[f].is_array()) all->insert(all->end(), set[f].begin(), set[f].end());
    names.push_back(p->flat.value("part", ""));
  }
  if (!out.is_object()) return out;
  out.erase("part");
  out["question_ids"] = ids;
  out["categories"] = cats;
  out["parts"] = names;
  return out;
}

// The speedup over every question, its flags and what follows from it.
void PutSpeedup(const std::vector<const AggregateRecord*>& parts, json& out) {
  std::vector<double> v;
  for (const json& x : out.value("per_prompt_speedup", json::array()))
    if (x.is_number() && std::isfinite(x.get<double>())) v.push_back(x.get<double>());
  if (v.empty()) return;
  const Interval ci = Speedup(v, SeedOf(out.value("key", "")));
  out["speedup"] = NumOrNull(ci.mean);
  out["speedup_ci_low"] = NumOrNull(ci.low);
  out["speedup_ci_high"] = NumOrNull(ci.high);
  out["speedup_n"] = ci.n;
  out["wide_ci"] = WideInterval(ci);
  const double bound = out.value("speedup_bound", json()).is_number() ? out["speedup_bound"].get<double>() : NAN;
  const double predicted =
      out.value("predicted_speedup", json()).is_number() ? out["predicted_speedup"].get<double>() : NAN;
  out["predicted_over_measured"] = NumOrNull(predicted / ci.mean);
  out["suspect"] = std::any_of(parts.begin(), parts.end(), [](const AggregateRecord* p) { return p->Suspect(); }) ||
                   (std::isfinite(bound) && ci.mean > bound * (1.0 + kSuspectMargin));
}

json MergeRecord(const std::vector<const AggregateRecord*>& parts) {
  std::vector<double> w;
  for (const AggregateRecord* p : parts)
    w.push_back(std::max<double>(1, double(p->statistics.per_prompt_tokens_per_s.size())));
  std::vector<std::string> fields;  // the first part's order, then fields only later parts have
  for (const AggregateRecord* p : parts)
    for (auto& [f, v] : p->flat.items())
      if (std::find(fields.begin(), fields.end(), f) == fields.end()) fields.push_back(f);
  json out = json::object();
  const json null;
  for (const std::string& f : fields) {
    std::vector<const json*> vals;
    for (const AggregateRecord* p : parts) vals.push_back(p->flat.contains(f) ? &p->flat[f] : &null);
    out[f] = MergeField(f, vals, w);
  }
  out.erase("part");
  out["key"] = KeyWithoutPart(out.value("key", ""));
  out["baseline_key"] = KeyWithoutPart(out.value("baseline_key", ""));
  for (const char* f : {"name", "run_name"}) out[f] = NameWithoutPart(out.value(f, ""));
  if (out.contains("prompt_set")) out["prompt_set"] = MergePromptSets(parts);
  std::string shas;
  for (const AggregateRecord* p : parts) shas += p->identity.prompt_sha256;
  out["prompt_sha256"] = Sha256Hex(shas);
  if (out.contains("drafted_at_pos") && out.contains("accepted_at_pos")) {  // from the summed counts
    json rates = json::array();
    for (size_t i = 0; i < out["drafted_at_pos"].size() && i < out["accepted_at_pos"].size(); ++i) {
      const double d = out["drafted_at_pos"][i].get<double>(), a = out["accepted_at_pos"][i].get<double>();
      rates.push_back(d > 0 ? a / d : 0.0);
    }
    out["acceptance_at_pos"] = rates;
  }
  PutSpeedup(parts, out);
  return out;
}

// Spec-Bench's speedup of a merged point against its merged baseline: the same questions.
void PutSpecBenchSpeedup(const std::map<std::string, const json*>& baselines, json& point) {
  if (!point.contains("spec_bench_speedup")) return;
  point["spec_bench_speedup"] = nullptr;
  const auto it = baselines.find(point.value("baseline_key", ""));
  if (it == baselines.end()) return;
  const json& base = *it->second;
  auto ids = [](const json& r) { return r.value("prompt_set", json::object()).value("question_ids", json()); };
  if (ids(point) != ids(base)) return;  // not the same questions
  const std::vector<double> p = point["per_prompt_tokens_per_s"].get<std::vector<double>>(),
                            b = base.value("per_prompt_tokens_per_s", json::array()).get<std::vector<double>>();
  point["spec_bench_speedup"] = NumOrNull(SpecBenchSpeedup(p, b));
}

}  // namespace

std::vector<AggregateRecord> MergeQuestionParts(const std::vector<AggregateRecord>& records) {
  std::vector<std::string> part_order;  // parts by first appearance: every method's parts in one order
  for (const AggregateRecord& r : records)
    if (const std::string p = r.flat.value("part", ""); !p.empty())
      if (std::find(part_order.begin(), part_order.end(), p) == part_order.end()) part_order.push_back(p);
  if (part_order.empty()) return records;
  std::vector<std::string> order;  // methods (and whole records, by index) in first-appearance order
  std::map<std::string, std::map<size_t, const AggregateRecord*>> methods;  // key -> part rank -> record
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string part = records[i].flat.value("part", "");
    const std::string key = part.empty() ? "#" + std::to_string(i) : KeyWithoutPart(records[i].identity.key);
    if (!methods.count(key)) order.push_back(key);
    const size_t rank =
        part.empty() ? 0 : size_t(std::find(part_order.begin(), part_order.end(), part) - part_order.begin());
    methods[key].try_emplace(rank, &records[i]);  // a part given twice: the first
  }
  std::vector<json> merged;
  std::vector<bool> whole;
  for (const std::string& key : order) {
    std::vector<const AggregateRecord*> parts;
    for (auto& [rank, r] : methods[key]) parts.push_back(r);
    whole.push_back(key.starts_with("#"));
    merged.push_back(whole.back() ? parts[0]->flat : MergeRecord(parts));
  }
  std::map<std::string, const json*> baselines;
  for (size_t i = 0; i < merged.size(); ++i)
    if (!whole[i] && merged[i].value("decoder", "") == "ar") baselines[merged[i].value("key", "")] = &merged[i];
  for (size_t i = 0; i < merged.size(); ++i)
    if (!whole[i]) PutSpecBenchSpeedup(baselines, merged[i]);
  std::vector<AggregateRecord> out;
  for (size_t i = 0; i < merged.size(); ++i)
    out.push_back(whole[i] ? records[std::stoul(order[i].substr(1))] : AggregateRecord::FromJson(merged[i]));
  return out;
}

}  // namespace specsweep
