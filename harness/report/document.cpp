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

std::string SummaryText(const json& agg) {
  std::string s = fmt::format("{:.1f} tok/s", agg.value("tokens_per_s", 0.0));
  if (agg.value("decoder", "ar") == "ar") return s;
  s += fmt::format(", accept {:.3f}, tau {:.2f}", agg.value("acceptance_rate", 0.0),
                   agg.value("mean_accepted_length", 0.0));
  if (agg["speedup"].is_number())
    s += fmt::format(", speedup {:.2f}x [{:.2f}, {:.2f}]", FieldNumber(agg, "speedup"),
                     FieldNumber(agg, "speedup_ci_low"), FieldNumber(agg, "speedup_ci_high"));
  if (agg.value("suspect", false))
    s += fmt::format(" SUSPECT: above the bound {:.2f}x", agg.value("speedup_bound", 0.0));
  else if (agg.value("wide_ci", false))
    s += " (interval wider than +-15%)";
  return s;
}

}  // namespace

std::string PointSummary(const RawRecord& r, const RawRecord* baseline) {
  return SummaryText(Aggregate(r, baseline));
}

}  // namespace specsweep
