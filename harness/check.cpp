#include "harness/check.h"

#include <cmath>
#include <map>

#include "harness/results.h"
#include "models/error.h"

using nlohmann::json;

namespace specsweep {

CheckReport CheckRegressions(const std::vector<json>& current, const std::vector<json>& baseline,
                             double tolerance) {
  std::map<std::string, const json*> by_key;
  for (auto& r : current) by_key[FieldText(r, "key")] = &r;
  CheckReport rep;
  for (auto& b : baseline) {
    // AR points carry no acceptance figures; their presence is implied by the speedups.
    if (FieldText(b, "decoder") == "ar") continue;
    std::string name = FieldText(b, "name");
    auto it = by_key.find(FieldText(b, "key"));
    if (it == by_key.end()) {
      rep.failures.push_back({name, "missing", NAN, NAN});
      continue;
    }
    ++rep.compared;
    for (const char* m : {"acceptance_rate", "mean_accepted_length"}) {
      double base = FieldNumber(b, m), cur = FieldNumber(*it->second, m);
      if (!std::isfinite(base)) continue;
      // Relative tolerance; the 1e-9 absorbs JSON round-trip of identical values.
      if (!std::isfinite(cur) || cur < base * (1.0 - tolerance) - 1e-9) rep.failures.push_back({name, m, base, cur});
    }
  }
  return rep;
}

Table CheckReport::AsTable() const {
  Table t;
  t.title = fmt::format("Regressions: {} of {} compared points", failures.size(), compared);
  t.header = {"point", "metric", "baseline", "current", "change"};
  t.label_cols = 2;
  for (auto& f : failures) {
    if (f.metric == "missing") {
      t.rows.push_back({f.name, "missing point", "", "", ""});
      continue;
    }
    t.rows.push_back({f.name, f.metric, fmt::format("{:.4f}", f.baseline), fmt::format("{:.4f}", f.current),
                      std::isfinite(f.current) && f.baseline != 0
                          ? fmt::format("{:+.2f}%", 100.0 * (f.current - f.baseline) / f.baseline)
                          : "-"});
  }
  return t;
}

}  // namespace specsweep
