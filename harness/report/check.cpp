#include "harness/report/check.h"

#include <cmath>
#include <map>

#include "harness/store/results.h"
#include "base/error.h"

using nlohmann::json;

namespace specsweep {

namespace {

// How two records with the same key differ in identity ("" if they do not): the same
// key measured on other prompts or other model files (by content, not path) is another point.
std::string IdentityMismatch(const json& base, const json& cur) {
  if (base.contains("prompt_sha256") &&
      (!cur.contains("prompt_sha256") || cur["prompt_sha256"] != base["prompt_sha256"]))
    return "prompt_sha256 differs";
  const ModelFiles was = ModelFilesFromJson(base);
  if (was.empty()) return "";
  return ModelFilesDifference(was, ModelFilesFromJson(cur));
}

}  // namespace

CheckReport CheckRegressions(const std::vector<AggregateRecord>& current, const std::vector<AggregateRecord>& baseline,
                             double sampled_tolerance, const std::string& what) {
  if (!(sampled_tolerance >= 0.0 && sampled_tolerance < 1.0))
    Fail("check: --tolerance: must be in [0, 1), got {}", sampled_tolerance);
  std::map<std::string, const AggregateRecord*> by_key;
  for (auto& r : current) by_key[FieldText(r, "key")] = &r;
  CheckReport rep;
  for (auto& b : baseline) {
    // AR points carry no acceptance figures; their presence is implied by the speedups.
    if (!b.Speculative()) continue;
    if (IsReplayed(b)) {
      ++rep.replayed;
      continue;
    }
    ++rep.baseline_points;
    const std::string name = FieldText(b, "name");
    for (const char* m : {"acceptance_rate", "mean_accepted_length"})
      if (!std::isfinite(FieldNumber(b, m)))
        Fail("{}: point {}: {}: not a number, so nothing could be gated", what, name, m);
    const bool greedy = FieldNumber(b, "temperature") == 0.0;
    const double tol = greedy ? 0.0 : sampled_tolerance;
    auto it = by_key.find(FieldText(b, "key"));
    if (it == by_key.end()) {
      rep.failures.push_back({name, "missing", NAN, NAN, tol});
      continue;
    }
    if (IsReplayed(*it->second)) {  // the same key is the same source: only a hand-edited file gets here
      rep.failures.push_back({name, "replayed in the results", NAN, NAN, tol});
      continue;
    }
    if (std::string id = IdentityMismatch(b.flat, it->second->flat); !id.empty()) {
      rep.failures.push_back({name, "identity: " + id, NAN, NAN, tol});
      continue;
    }
    ++rep.compared;
    for (const char* m : {"acceptance_rate", "mean_accepted_length"}) {
      const double base = FieldNumber(b, m), cur = FieldNumber(*it->second, m);
      // The 1e-9 absorbs the JSON round trip of identical values.
      if (!std::isfinite(cur) || cur < base * (1.0 - tol) - 1e-9) rep.failures.push_back({name, m, base, cur, tol});
    }
  }
  if (rep.baseline_points == 0)
    Fail("{}: no speculative points with measured acceptance{}: a gate on acceptance needs at least one", what,
         rep.replayed ? fmt::format(" ({} replayed ones are not gated)", rep.replayed) : "");
  if (rep.compared == 0)
    Fail("{}: none of its {} speculative points is in the results (different experiment or models?)", what,
         rep.baseline_points);
  return rep;
}

Table CheckReport::AsTable() const {
  Table t;
  t.title = fmt::format("Regressions: {} of {} compared points", failures.size(), compared);
  t.header = {"point", "metric", "baseline", "current", "change", "tolerance"};
  t.label_cols = 2;
  for (auto& f : failures) {
    if (f.metric == "missing" || f.metric.starts_with("identity") || f.metric.starts_with("replayed")) {
      t.rows.push_back({f.name, f.metric == "missing" ? "missing point" : f.metric, "", "", "", ""});
      continue;
    }
    t.rows.push_back({f.name, f.metric, fmt::format("{:.4f}", f.baseline), fmt::format("{:.4f}", f.current),
                      std::isfinite(f.current) && f.baseline != 0
                          ? fmt::format("{:+.2f}%", 100.0 * (f.current - f.baseline) / f.baseline)
                          : "-",
                      fmt::format("{:g}", f.tolerance)});
  }
  return t;
}

}  // namespace specsweep
