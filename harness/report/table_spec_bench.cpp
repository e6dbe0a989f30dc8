// `table --table spec-bench`: Spec-Bench's leaderboard layout over a question set's
// per-category records (report/category.h).
#include <algorithm>
#include <cmath>
#include <map>

#include "harness/report/aggregate.h"
#include "harness/report/category.h"
#include "harness/report/table.h"
#include "harness/report/table_cells.h"
#include "harness/store/results.h"
#include "base/error.h"

namespace specsweep {

namespace {

// "1.45x [1.32, 1.58]" or "2.31 [2.10, 2.50]"; no interval from fewer than two questions.
std::string WithInterval(const AggregateRecord& r, const std::string& metric) {
  const double mean = FieldNumber(r, metric), lo = FieldNumber(r, metric + "_ci_low"),
               hi = FieldNumber(r, metric + "_ci_high");
  std::string c = FormatMetric(metric, mean);
  if (std::isfinite(lo) && std::isfinite(hi)) c += fmt::format(" [{:.2f}, {:.2f}]", lo, hi);
  return c;
}

// A group's cell: speedup and τ with their intervals, † and ‡ (noted in `busy`, `wide`).
std::string GroupCell(const AggregateRecord& r, bool& busy, bool& wide) {
  std::string s = WithInterval(r, "speedup") + " · τ " + WithInterval(r, "mean_accepted_length");
  if (r.Busy()) s += "†", busy = true;
  if (r.WideCi()) s += "‡", wide = true;
  return s;
}

}  // namespace

Table SpecBenchTable(const std::vector<AggregateRecord>& records, const Filters& filters) {
  const std::vector<AggregateRecord> kept = Filter(records, filters);
  const std::vector<std::string> groups = CategoryOrder(kept);
  if (groups.empty())
    Fail(
        "table: --table spec-bench: the records carry no prompt categories (run a question set: "
        "prompts.file: a .jsonl, see docs/spec-bench.md)");
  std::vector<AggregateRecord> spec;
  for (auto& r : SplitByCategory(kept))
    if (r.Speculative() && r.flat.contains("category")) spec.push_back(r);
  if (spec.empty()) Fail("table: --table spec-bench: no speculative points in the results");

  // Rows: what varies among the configurations (the name when nothing does).
  std::vector<std::string> label = Varying(spec, {"category", "decoder", "prompt_category"});
  if (label.empty()) label = {"name"};
  const bool bridged = ShowBridgedDraft(spec, label);
  std::vector<std::string> columns = groups;
  columns.push_back(kOverallCategory);
  std::vector<std::vector<std::string>> row_keys;
  std::map<std::vector<std::string>, std::map<std::string, AggregateRecord>> cell;
  for (auto& r : spec) {
    std::vector<std::string> key;
    for (auto& f : label) key.push_back(f == "k" ? KLabelOf(r) : LabelText(r, f));
    if (!cell.count(key)) row_keys.push_back(key);
    cell[key][FieldText(r, "category")] = r;
  }

  Table t;
  t.title = "Spec-Bench: speedup and mean accepted tokens per task group";
  t.header = label;
  for (auto& c : columns) t.header.push_back(c);
  t.label_cols = label.size();
  bool busy = false, wide = false;
  int min_n = 1 << 30;
  for (auto& key : row_keys) {
    std::vector<std::string> row = key;
    for (auto& c : columns) {
      auto it = cell[key].find(c);
      if (it == cell[key].end()) {
        row.push_back("-");
        continue;
      }
      min_n = std::min(min_n, it->second.identity.prompts);
      row.push_back(GroupCell(it->second, busy, wide));
    }
    t.rows.push_back(row);
  }
  t.notes.push_back(
      "speedup: geometric mean over a group's rounds of the point's tokens/s over autoregressive "
      "decoding's in the same round (every table's estimator, docs/metrics.md); τ: mean accepted tokens per "
      "target call, bonus token included; [low, high]: 95% bootstrap interval over questions (log space for "
      "speedup)");
  if (min_n < 10)
    t.notes.push_back(
        fmt::format("a group holds as few as {} question(s): its interval says little, and none "
                    "is shown for one question",
                    min_n));
  if (bridged) t.notes.push_back(kBridgedNote);
  if (busy) t.notes.push_back("† other processes used the machine while this group was measured");
  if (wide) t.notes.push_back(fmt::format("‡ speedup interval wider than ±{:.0f}% of the mean", 100 * kWideInterval));
  return t;
}

}  // namespace specsweep
