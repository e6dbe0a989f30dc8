// `specsweep table RESULTS [--format md|latex|csv] [--table main|latency|quant|batch|spec-bench|all]
//  [--rows a,b --cols c --metric m[,m2]] [--where field=value]... [--by category] [--intervals|--no-intervals]
//  [--long]`: paper-style tables.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include "harness/report/category.h"
#include "harness/report/load.h"
#include "harness/cli/commands.h"
#include "harness/store/results.h"
#include "harness/report/table.h"
#include "base/error.h"

namespace specsweep {
namespace {

struct TableArgs {
  std::string results, format = "md", table = "main", by;
  std::vector<std::string> rows, cols, metrics, where;
  bool intervals = false, no_intervals = false, long_names = false;
};

// The spec-bench table has Spec-Bench's fixed layout: a pivot option would be ignored.
void CheckSpecBenchOptions(const TableArgs& a) {
  if (a.table != "spec-bench") {
    if (a.long_names) FailUsage("table: --long applies to --table spec-bench only (--table {})", a.table);
    return;
  }
  for (auto [name, given] : {std::pair{"--metric", !a.metrics.empty()}, std::pair{"--rows", !a.rows.empty()},
                             std::pair{"--cols", !a.cols.empty()}})
    if (given)
      FailUsage(
          "table: {} does not apply to --table spec-bench (Spec-Bench's layout: methods x task groups, its "
          "speedup); leave out --table for a pivot",
          name);
}

// The experiment's name for LaTeX labels: the results' context, else the file's stem.
std::string ExperimentName(const LoadedRecords& res, const std::string& path) {
  if (res.context.is_object() && res.context.contains("experiment") && res.context["experiment"].is_string())
    return res.context["experiment"].get<std::string>();
  return std::filesystem::path(path).stem().string();
}

// The options' values, checked before the results are read (usage errors, exit 2).
Filters CheckTableOptions(const TableArgs& a) {
  static const std::set<std::string> kTables = {"main", "latency", "quant", "batch", "spec-bench", "all"};
  if (!kTables.contains(a.table))
    FailUsage("table: --table: unknown table '{}' (expected main, latency, quant, batch, spec-bench, all)", a.table);
  if (!a.by.empty() && a.by != "category") FailUsage("table: --by: '{}' (expected category)", a.by);
  CheckSpecBenchOptions(a);
  Filters filters;
  for (auto& w : a.where) {
    auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0) FailUsage("table: --where: '{}' is not field=value", w);
    filters.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  return filters;
}

// The records were measured at more than one batch size.
bool BatchVaries(const std::vector<AggregateRecord>& records) {
  std::set<int> batches;
  for (const AggregateRecord& r : records) batches.insert(r.batch.batch);
  return batches.size() > 1;
}

void TableCommand(const TableArgs& a) {
  TableFormat f = AsUsage([&] { return ParseTableFormat(a.format); });
  const Filters filters = CheckTableOptions(a);
  LoadedRecords res = LoadRecords(a.results);
  for (auto& w : res.warnings) std::fprintf(stderr, "warning: %s, skipped\n", w.c_str());
  if (!res.speedup_note.empty()) std::fprintf(stderr, "note: %s\n", res.speedup_note.c_str());
  if (res.records.empty()) Fail("{}: no records", a.results);
  if (a.by == "category" && a.table != "spec-bench") {  // the spec-bench table splits by category itself
    if (CategoryOrder(res.records).empty()) FailUsage("table: --by category: the records carry no prompt categories");
    res.records = SplitByCategory(res.records);
  }
  CheckFilters(res.records, filters);
  std::vector<Table> tables;
  if (!a.metrics.empty() && a.rows.empty() && a.cols.empty() && f != TableFormat::Csv) {
    // Other metrics in the main table's layout: speculative points, K columns, caption.
    tables.push_back(MainTable(res.records, filters, res.context, a.metrics));
  } else if (!a.metrics.empty() || !a.rows.empty() || !a.cols.empty()) {
    PivotSpec p;
    p.rows = a.rows;
    p.cols = a.cols;
    p.metrics = a.metrics.empty() ? std::vector<std::string>{"speedup"} : a.metrics;
    p.filters = filters;
    tables.push_back(PivotTable(res.records, p));
  } else if (a.table == "main") {
    tables.push_back(f == TableFormat::Csv ? MainTableLong(res.records, filters)
                                           : MainTable(res.records, filters, res.context));
    // Replayed points: their declared and realised acceptance (the long form has it in columns).
    if (f != TableFormat::Csv && ReplayedAny(res.records, filters)) tables.push_back(ReplayTable(res.records, filters));
  } else if (a.table == "latency") {
    tables.push_back(LatencyTable(res.records, filters));
  } else if (a.table == "quant") {
    tables.push_back(QuantTable(res.records, filters));
  } else if (a.table == "batch") {
    tables.push_back(BatchTable(res.records, filters, res.context));
  } else if (a.table == "spec-bench") {
    tables.push_back(SpecBenchTable(res.records, filters, {a.intervals, a.long_names}));
  } else if (a.table == "all") {
    tables = {MainTable(res.records, filters, res.context), LatencyTable(res.records, filters),
              QuantTable(res.records, filters)};
    if (ReplayedAny(res.records, filters)) tables.insert(tables.begin() + 1, ReplayTable(res.records, filters));
    if (BatchVaries(Filter(res.records, filters))) tables.push_back(BatchTable(res.records, filters, res.context));
  }
  RenderOptions options{std::nullopt, ExperimentName(res, a.results)};
  if (a.intervals || a.no_intervals) options.intervals = a.intervals;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (tables[i].kind.empty()) tables[i].kind = a.table;
    if (i) std::printf("\n");
    std::fputs(RenderTable(tables[i], f, options).c_str(), stdout);
  }
}

const CommandRegistrar kRegister(41, [](CLI::App& app) {
  auto a = std::make_shared<TableArgs>();
  auto* cmd = app.add_subcommand("table", "Print tables from sweep results (.json or .jsonl)");
  cmd->add_option("results", a->results, "Results file")->required();
  cmd->add_option("--format", a->format, "md, latex or csv");
  cmd->add_option("--table", a->table,
                  "Preset: main (speedup / accepted length per decoder x K), latency "
                  "(next-token latency vs AR), quant (acceptance vs draft quant), batch (speedup, "
                  "measured and predicted, per batch size and the crossover, docs/batching.md), spec-bench "
                  "(speedup and accepted tokens per task group, docs/spec-bench.md), all");
  cmd->add_option("--rows", a->rows, "Row fields (comma separated; default: every varying parameter)")->delimiter(',');
  cmd->add_option("--cols", a->cols, "Column fields (comma separated)")->delimiter(',');
  cmd->add_option("--metric", a->metrics, "Metric field(s) shown in each cell (comma separated)")->delimiter(',');
  cmd->add_option("--where", a->where, "Keep records with field=value (repeatable)");
  cmd->add_option("--by", a->by, "category: one record per prompt category and overall (question sets)");
  auto* with = cmd->add_flag("--intervals", a->intervals,
                             "95% intervals in the cells (default: in md and csv, not in latex, where they double "
                             "the width; spec-bench: none unless given)");
  cmd->add_flag("--no-intervals", a->no_intervals, "No 95% intervals in the cells, in any format")->excludes(with);
  cmd->add_flag("--long", a->long_names, "spec-bench: each method's spec (draft, K) in its row, not in a note");
  cmd->callback([a] { TableCommand(*a); });
});

}  // namespace
}  // namespace specsweep
