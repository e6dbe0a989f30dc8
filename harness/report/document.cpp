#include "harness/report/document.h"

#include <fmt/format.h>

#include "harness/report/aggregate.h"

using nlohmann::json;

namespace specsweep {

json ResultsDocument(const json& context, const std::vector<RawRecord>& records) {
  json doc;
  doc["context"] = context;
  doc["benchmarks"] = AggregateAll(records);
  return doc;
}

namespace {

// Numbers as the flat record holds them: absent or null is 0.
double Shown(double v) { return std::isfinite(v) ? v : 0.0; }

std::string SummaryText(const AggregateRecord& agg) {
  const RecordStatistics& st = agg.statistics;
  std::string s = fmt::format("{:.1f} tok/s", Shown(st.Mean("tokens_per_s")));
  if (!agg.Speculative()) return s;
  s += fmt::format(", accept {:.3f}, tau {:.2f}", Shown(st.Mean("acceptance_rate")),
                   Shown(st.Mean("mean_accepted_length")));
  if (!agg.comparison) return s;
  const Interval& sp = agg.comparison->speedup;
  if (std::isfinite(sp.mean)) s += fmt::format(", speedup {:.2f}x [{:.2f}, {:.2f}]", sp.mean, sp.low, sp.high);
  if (agg.Suspect())
    s += fmt::format(" SUSPECT: above the bound {:.2f}x", Shown(agg.cost.speculative->speedup_bound));
  else if (agg.WideCi())
    s += " (interval wider than +-15%)";
  return s;
}

}  // namespace

std::string PointSummary(const RawRecord& r, const RawRecord* baseline) {
  return SummaryText(AggregateTyped(r, baseline));
}

}  // namespace specsweep
