// What a pivot leaves out and what its "*" cells average over (PivotTable, table.cpp).
#include <algorithm>
#include <cstdint>

#include <fmt/ranges.h>

#include "harness/report/table_cells.h"
#include "harness/store/results.h"

namespace specsweep {

void PivotAverages::Add(const std::vector<const AggregateRecord*>& cell, const std::vector<std::string>& shown) {
  if (cell.size() < 2) return;
  std::vector<AggregateRecord> recs;
  for (auto* r : cell) recs.push_back(*r);
  for (auto& f : Varying(recs, shown)) {
    if (std::find(fields_.begin(), fields_.end(), f) == fields_.end()) fields_.push_back(f);
    for (auto& r : recs) values_[f].insert(FieldText(r, f));
  }
  min_ = std::min(min_, cell.size());
  max_ = std::max(max_, cell.size());
}

std::string PivotAverages::Note() const {
  if (max_ == 0) return "";
  const std::string n = min_ == max_ ? fmt::format("{}", min_) : fmt::format("{}-{}", min_, max_);
  if (fields_.empty())
    return fmt::format("* mean (for speedups the geometric mean) of {} points with the same parameters", n);
  std::vector<std::string> over;
  for (auto& f : fields_) {
    std::vector<std::string> v(values_.at(f).begin(), values_.at(f).end());
    std::sort(v.begin(), v.end(), [&](auto& a, auto& b) { return ValueLess(f, a, b); });
    if (v.size() > 6) v.resize(6), v.back() = "...";
    over.push_back(fmt::format("{} ({})", f, fmt::join(v, ", ")));
  }
  return fmt::format(
      "* mean (for speedups the geometric mean) of {} points averaged over {}, which label neither rows nor columns "
      "(--cols {} shows them apart)",
      n, fmt::join(over, " and "), fields_[0]);
}

bool LeaveOutBaseline(std::vector<AggregateRecord>& recs, const PivotSpec& spec) {
  auto axis = [&](const std::string& f) {
    return std::find(spec.rows.begin(), spec.rows.end(), f) != spec.rows.end() ||
           std::find(spec.cols.begin(), spec.cols.end(), f) != spec.cols.end();
  };
  const bool over_k = axis("k") || axis("k_label") || axis("k_policy");
  const bool relative = std::all_of(spec.metrics.begin(), spec.metrics.end(), [](const std::string& m) {
    return m.starts_with("speedup") || m.starts_with("latency_speedup") || m.starts_with("predicted");
  });
  const auto ar = [](const AggregateRecord& r) { return !r.Speculative(); };
  if (!(over_k || relative) || std::all_of(recs.begin(), recs.end(), ar) || std::none_of(recs.begin(), recs.end(), ar))
    return false;
  recs.erase(std::remove_if(recs.begin(), recs.end(), ar), recs.end());
  return true;
}

const char* const kBaselineLeftOutNote =
    "autoregressive decoding (k=0) is the baseline every speedup here is measured against: its points are no row "
    "or column of their own";

}  // namespace specsweep
