// `table --table spec-bench`: Spec-Bench's leaderboard (Leaderboard.md) over a question
// set's per-category records (report/category.h): one row per method (report/method_name.h),
// one speedup column per task group under Spec-Bench's headers, #Mean Accepted Tokens and
// Overall, rows by overall speedup.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "harness/report/aggregate.h"
#include "harness/report/category.h"
#include "harness/report/method_name.h"
#include "harness/report/parts.h"
#include "harness/report/table.h"
#include "harness/report/table_cells.h"
#include "harness/store/results.h"

namespace specsweep {

namespace {

// Spec-Bench's task groups in its column order, under the ids questions.cpp gives them
// (and the raw categories of Spec-Bench's question file, should a `groups` map keep them).
struct GroupHeader {
  std::vector<std::string> ids;
  const char* header;
};
const std::vector<GroupHeader>& SpecBenchGroups() {
  static const std::vector<GroupHeader> g = {
      {{"multi-turn conversation", "mt_bench"}, "Multi-turn Conversation"},
      {{"translation"}, "Translation"},
      {{"summarization"}, "Summarization"},
      {{"question answering", "qa"}, "Question Answering"},
      {{"math reasoning", "math_reasoning"}, "Mathematical Reasoning"},
      {{"RAG", "rag"}, "Retrieval-aug. Generation"},
  };
  return g;
}

// The run's groups in Spec-Bench's order with their headers; others after, as written.
std::vector<std::pair<std::string, std::string>> ColumnsOf(const std::vector<std::string>& groups) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> placed;
  for (auto& g : SpecBenchGroups())
    for (auto& id : g.ids)
      if (std::find(groups.begin(), groups.end(), id) != groups.end() && placed.insert(id).second)
        out.push_back({id, g.header});
  for (auto& id : groups)
    if (!placed.count(id)) out.push_back({id, id});
  return out;
}

Interval SpecBenchOf(const AggregateRecord& r) {
  return Interval{FieldNumber(r, "spec_bench_speedup"), FieldNumber(r, "spec_bench_speedup_ci_low"),
                  FieldNumber(r, "spec_bench_speedup_ci_high"), int(FieldNumber(r, "spec_bench_speedup_n"))};
}

// A speedup cell: "2.56x" ("2.56x [2.31, 2.80]" with intervals), † when the machine was
// busy, ‡ when the group's interval is WideInterval (aggregate.h); "suspect" (no number)
// for a point the main table calls suspect. `ci` null: no group record.
std::string SpeedupOnlyCell(const AggregateRecord& point, const Interval* ci, bool intervals, CellFlags& flags) {
  if (point.Suspect()) {
    flags.suspect = true;
    return "suspect";
  }
  if (!ci || !std::isfinite(ci->mean)) return "-";
  std::string c = FormatMetric("speedup", ci->mean);
  if (intervals && std::isfinite(ci->low) && std::isfinite(ci->high))
    c += fmt::format(" [{:.2f}, {:.2f}]", ci->low, ci->high);
  if (point.Busy()) c += "†", flags.busy = true;
  if (WideInterval(*ci)) c += "‡", flags.wide = true;
  return c;
}

// τ over every step of the point (the pooled mean_accepted_length), § when a replayed
// point realised another acceptance than its source declares.
std::string AcceptedCell(const AggregateRecord& point, CellFlags& flags) {
  std::string c = FormatMetric("mean_accepted_length", FieldNumber(point, "mean_accepted_length"));
  if (const auto f = ReplayFiguresOf(point); f && f->off) c += kTauMark, flags.tau_off = true;
  return c;
}

struct Row {
  const AggregateRecord* point;
  std::string name;
  std::map<std::string, Interval> groups;  // by group id, kOverallCategory included
};

// The overall speedup a row sorts by: suspect and unknown last.
double SortKey(const Row& r) {
  const auto it = r.groups.find(kOverallCategory);
  const double v = it == r.groups.end() ? NAN : it->second.mean;
  return r.point->Suspect() || !std::isfinite(v) ? -INFINITY : v;
}

std::vector<std::string> Notes(const std::vector<Row>& rows, const SpecBenchOptions& o, int min_n) {
  std::set<std::string> models, reps;
  for (auto& r : rows) models.insert(FieldText(*r.point, "model")), reps.insert(FieldText(*r.point, "repetitions"));
  std::vector<std::string> notes;
  notes.push_back(fmt::format(
      "target {}; speedup: Spec-Bench's estimator (evaluation/speed.py), the method's mean decode tokens/s over a "
      "group's questions divided by the autoregressive baseline's mean over the same questions, measured in the same "
      "rounds (a question's tokens/s: mean over {} repetitions); #Mean Accepted Tokens: tokens per target call over "
      "every step of every question, the target's own token included",
      fmt::join(models, ", "), fmt::join(reps, "/")));
  if (o.intervals) notes.push_back("[low, high]: 95% bootstrap interval over the group's questions");
  if (!o.long_names) {
    std::string spec;
    for (auto& r : rows) spec += (spec.empty() ? "" : "; ") + r.name + ": " + MethodSpec(*r.point);
    notes.push_back("methods: " + spec);
  }
  if (min_n < 10) notes.push_back(fmt::format("a group holds as few as {} question(s)", min_n));
  return notes;
}

using GroupColumns = std::vector<std::pair<std::string, std::string>>;  // group id, header

Table LeaderboardTable(const std::vector<Row>& rows, const GroupColumns& columns, const SpecBenchOptions& o,
                       int min_n) {
  Table t;
  t.title = "Spec-Bench: speedup over autoregressive decoding per task group";
  t.header = {"Models"};
  for (auto& c : columns) t.header.push_back(c.second);
  t.header.insert(t.header.end(), {"#Mean Accepted Tokens", "Overall"});
  t.label_cols = 1;
  CellFlags flags;
  bool bridged = false, replayed = false;
  for (auto& r : rows) {
    auto cell = [&](const std::string& id) {
      const auto it = r.groups.find(id);
      return SpeedupOnlyCell(*r.point, it == r.groups.end() ? nullptr : &it->second, o.intervals, flags);
    };
    std::vector<std::string> line = {r.name};
    for (auto& c : columns) line.push_back(cell(c.first));
    line.push_back(AcceptedCell(*r.point, flags));
    line.push_back(cell(kOverallCategory));
    bridged = bridged || Bridged(*r.point);
    replayed = replayed || IsReplayed(*r.point);
    t.rows.push_back(std::move(line));
  }
  t.notes = Notes(rows, o, min_n);
  if (replayed) t.notes.push_back(kReplayNote);
  if (bridged) t.notes.push_back(kBridgedNote);
  AddFlagNotes(flags, t);
  return t;
}

}  // namespace

Table SpecBenchTable(const std::vector<AggregateRecord>& given, const Filters& filters,
                     const SpecBenchOptions& options) {
  // A method measured in parts is one row over all its questions (LoadRecords merges too).
  const std::vector<AggregateRecord> records = MergeQuestionParts(given);
  const std::vector<AggregateRecord> kept = Filter(records, filters);
  const std::vector<std::string> groups = CategoryOrder(kept);
  if (groups.empty())
    Fail(
        "table: --table spec-bench: the records carry no prompt categories (run a question set: "
        "prompts.file: a .jsonl, see docs/spec-bench.md)");
  std::vector<AggregateRecord> points;
  for (auto& r : kept)
    if (r.Speculative() && !r.statistics.per_prompt_category.empty()) points.push_back(r);
  if (points.empty()) Fail("table: --table spec-bench: no speculative points in the results");

  // Every record is split, so that a point's baseline is found whatever the filters kept.
  std::map<std::string, std::map<std::string, Interval>> by_key;
  for (auto& g : SplitByCategory(records))
    if (g.flat.contains("category")) by_key[g.identity.key][FieldText(g, "category")] = SpecBenchOf(g);
  const std::vector<std::string> names = MethodNames(points);
  std::vector<Row> rows;
  int min_n = 1 << 30;
  for (size_t i = 0; i < points.size(); ++i) {
    Row row{&points[i], names[i], by_key[points[i].identity.key]};
    // The point's own field where it has one (records aggregated before it was: the split's).
    if (const double v = FieldNumber(points[i], "spec_bench_speedup"); std::isfinite(v))
      row.groups.try_emplace(kOverallCategory, Interval{v, NAN, NAN, 0}).first->second.mean = v;
    if (options.long_names) row.name += " (" + MethodSpec(points[i]) + ")";
    for (auto& [g, ci] : row.groups)
      if (g != kOverallCategory && ci.n > 0) min_n = std::min(min_n, ci.n);
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return SortKey(a) > SortKey(b); });
  return LeaderboardTable(rows, ColumnsOf(groups), options, min_n);
}

}  // namespace specsweep
