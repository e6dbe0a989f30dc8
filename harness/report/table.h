// Paper-style tables from flat result records: a generic pivot (rows x cols -> metric)
// and three presets (speedup/accepted length per decoder x K, next-token latency with
// and without speculation, acceptance vs quantization level).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/record.h"

namespace specsweep {

enum class TableFormat { Markdown, Latex, Csv };
TableFormat ParseTableFormat(std::string_view s);  // "md", "latex", "csv"

struct Table {
  std::string title;
  std::vector<std::string> header;             // [n_cols]
  std::vector<std::vector<std::string>> rows;  // [n_rows][n_cols]
  size_t label_cols = 0;                       // leading columns that label a row (left-aligned)
  std::vector<std::string> notes;              // footnotes
  std::string kind;                            // "main", "latency", ...: its LaTeX \label, tab:<kind>-<experiment>
};
struct RenderOptions {
  // 95% intervals in the cells ("±0.08", "[0.83, 1.11]"); unset: shown in Markdown and CSV,
  // left out of LaTeX, where they would double a table's width (the ‡ mark stays).
  std::optional<bool> intervals;
  std::string experiment;  // the experiment's name, in the LaTeX label
};
std::string RenderTable(const Table& t, TableFormat f, const RenderOptions& o = {});
// LaTeX (booktabs) for pdflatex in a plain article (table_latex.cpp): caption, label,
// symbols in math mode, scaled down to \linewidth when wider, notes below in \footnotesize.
std::string RenderLatex(const Table& t, const RenderOptions& o);
// A cell without its interval (" ±0.08", " [0.83, 1.11]"); true in `dropped` when it had one.
std::string WithoutInterval(const std::string& cell, bool& dropped);

struct PivotSpec {
  std::vector<std::string> rows;     // record fields labelling rows ({}: every varying parameter)
  std::vector<std::string> cols;     // record fields spreading columns ({}: one value column)
  std::vector<std::string> metrics;  // numeric fields shown in each cell, joined by " / "
  std::vector<std::pair<std::string, std::string>> filters;  // field == value
  std::string title;
};
// Throws Error naming the field when a row/col/metric field exists in no record.
Table PivotTable(const std::vector<AggregateRecord>& records, const PivotSpec& spec);

// Presets; `filters` restrict the records first.
using Filters = std::vector<std::pair<std::string, std::string>>;
// `context`: the results' context block, for the caption (machine, kernels).
// --where filters checked against the records: a field no record has is an Error
// listing the fields (and the closest one); a value no record has lists the values
// that exist for that field.
void CheckFilters(const std::vector<AggregateRecord>& records, const Filters& filters);
Table MainTable(const std::vector<AggregateRecord>& records, const Filters& filters = {},
                const nlohmann::json& context = {}, const std::vector<std::string>& metrics = {});
// The main table's data in long form, one numeric value per column (CSV).
Table MainTableLong(const std::vector<AggregateRecord>& records, const Filters& filters = {});
Table LatencyTable(const std::vector<AggregateRecord>& records, const Filters& filters = {});
// One row per replayed speculative point: declared source, realised acceptance per
// position, realised and expected τ (marked when more than 3% apart). Error when no point
// is replayed; ReplayedAny says whether one is.
Table ReplayTable(const std::vector<AggregateRecord>& records, const Filters& filters = {});
bool ReplayedAny(const std::vector<AggregateRecord>& records, const Filters& filters = {});
Table QuantTable(const std::vector<AggregateRecord>& records, const Filters& filters = {});
// Speedup against batch size (table_batch.cpp, docs/batching.md): a row pair per draft
// configuration (main-table row fields but the batch, and K), the measured speedup with
// its interval and the cost model's prediction per batch column, and each one's crossover
// batch (batch_curve.h). Error when no point is speculative.
Table BatchTable(const std::vector<AggregateRecord>& records, const Filters& filters = {},
                 const nlohmann::json& context = {});

// The records whose fields equal every filter's value.
std::vector<AggregateRecord> Filter(const std::vector<AggregateRecord>& recs, const Filters& filters);
// Parameter fields taking more than one value among the records, except `exclude` (row
// labels); a lookup draft's n-gram range is part of its draft label already.
std::vector<std::string> Varying(const std::vector<AggregateRecord>& recs, const std::vector<std::string>& exclude);
// Spec-Bench's leaderboard (report/category.h, docs/spec-bench.md): one row per method
// (MethodNames), one column per task group under Spec-Bench's header and in its order, then
// #Mean Accepted Tokens and Overall; cells Spec-Bench's speedup (spec_bench_speedup) with the
// marks of every table; rows by overall speedup, descending. `intervals` adds each cell's
// 95% interval; `long_names` puts each method's spec in its row instead of a note. Error
// when the records carry no per-prompt categories.
struct SpecBenchOptions {
  bool intervals = false, long_names = false;
};
Table SpecBenchTable(const std::vector<AggregateRecord>& records, const Filters& filters = {},
                     const SpecBenchOptions& options = {});

// A metric value as shown in tables (speedup "1.23x", seconds as ms, NaN as "-").
std::string FormatMetric(const std::string& metric, double v);

}  // namespace specsweep
