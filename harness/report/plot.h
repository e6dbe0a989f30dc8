// Plots of sweep results: the data goes to .dat files (gnuplot index blocks, one per
// series, each headed by its title) and the parameterised scripts in plots/*.gp turn
// them into PNG and SVG.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/record.h"

namespace specsweep {

struct Series {
  std::string title;                          // the point's main-table row name (RowName), and what else varies
  std::vector<std::pair<double, double>> xy;  // [n_points] (x, y), sorted by x; y NaN: a gap (0/0)
  std::vector<std::pair<double, double>> ci;  // [n_points] (low, high) of y, or empty
  std::vector<std::string> labels;            // [n_points] point labels (K: PointKeys), or empty
  std::vector<std::string> marks;             // [n_points] the tables' marks († ‡, kSuspectMark), or empty
  std::vector<std::string> suspects;          // where its suspect points are ("k=4"), named in the plot's note
  bool ar = false;                            // autoregressive decoding: black, a colour no other series gets
};
// The mark of a suspect point in a plot's data (drawn hollow, named in SuspectNote).
extern const char* const kSuspectMark;  // "suspect"

// Series data of each plot (records as in Results::records).
std::vector<Series> SpeedupVsK(const std::vector<AggregateRecord>& records);
std::vector<Series> AcceptanceVsK(const std::vector<AggregateRecord>& records);         // alpha
std::vector<Series> AcceptedLengthVsK(const std::vector<AggregateRecord>& records);     // tau
std::vector<Series> LatencyVsInputLength(const std::vector<AggregateRecord>& records);  // ms vs prompt tokens
std::vector<Series> AcceptancePerPosition(const std::vector<AggregateRecord>& records);
std::vector<Series> PredictedVsMeasured(const std::vector<AggregateRecord>& records);
// Speedup against batch size (plot_batch.cpp): per draft configuration (BatchCurvesOf) a
// measured series (x = batch, its intervals and marks) followed by its prediction, titled
// the same plus kPredictedSuffix: series 2j and 2j+1 are one configuration.
std::vector<Series> SpeedupVsBatch(const std::vector<AggregateRecord>& records);
extern const char* const kPredictedSuffix;  // " (predicted)"
// Per-category records (SplitByCategory) as grouped bars: one series per method (its
// main-table row name), x = the group's index (kOverallCategory last) plus the bar's
// offset in the group, labels = the group; speedup or mean accepted length τ.
std::vector<Series> SpeedupByCategory(const std::vector<AggregateRecord>& records);
std::vector<Series> AcceptedLengthByCategory(const std::vector<AggregateRecord>& records);
// The task groups of per-category records in plot order, kOverallCategory last.
std::vector<std::string> PlotCategories(const std::vector<AggregateRecord>& records);
// Width of one bar of `methods` bars sharing a group of width 0.8.
double BarWidth(size_t methods);
// 95% Wilson interval of k successes in n trials; {NaN, NaN} when n is 0.
std::pair<double, double> WilsonInterval(double k, double n);

// gnuplot data text: "# title" comment, then per series a quoted title line and
// "x y low high \"label\" \"marks\"" lines (low/high = y without an interval), series
// separated by two blank lines (addressed with `index i`). A point whose y is NaN (0/0)
// is a "# x: no data" comment and one blank line: the curve is broken there, not drawn at 0.
std::string DatText(const std::string& title, const std::vector<Series>& series);
// The key entries explaining the hollow points of a plot, one per mark present, "|"
// between them ("hollow: † host busy while measured|hollow: ‡ 95% CI wider than ±15% or of < 5 rounds"),
// "" when none is marked.
std::string MarksKey(const std::vector<Series>& series);
// The note under a plot naming its suspect points ("suspect, drawn hollow: speedup above
// ... (no result); SERIES at k=4; ..."), "" when none is.
std::string SuspectNote(const std::vector<Series>& series);

struct PlotOptions {
  std::string out_dir = "plots";
  std::string scripts_dir;   // "": <source tree>/plots
  std::string gnuplot;       // "": found in PATH
  std::string subtitle;      // second title line (PlotSubtitle, plot_layout.h), "" for none
  std::string caption;       // the title's last line (PlotCaption: date, n, max_new_tokens), "" for none
  bool by_category = false;  // records split by category: the grouped-bar plots instead of the others
};

// One plot before gnuplot runs: its data and the settings its script reads (gnuplot -e
// assignments, values as gnuplot literals: 'text' or a number), or why it is skipped.
struct PlotFigure {
  std::string name;     // "speedup_vs_k", ...
  std::string skipped;  // why no image ("" if drawn)
  std::vector<Series> series;
  std::string dat;                                        // DatText of the series
  std::vector<std::pair<std::string, std::string>> vars;  // name, gnuplot literal
  std::string Var(const std::string& name) const;         // the literal, "" when unset
};
// Every plot's figure (no file written, no gnuplot run); the .dat path goes in `datafile`
// and `outbase` under o.out_dir.
std::vector<PlotFigure> PlotFigures(const std::vector<AggregateRecord>& records, const PlotOptions& o);

struct PlotOutput {
  std::string name;                 // "speedup_vs_k", ...
  std::string dat;                  // data file written
  std::vector<std::string> images;  // PNG, SVG and PDF (EPS without pdfcairo) written
  std::string skipped;              // why no image ("" if drawn)
  std::string note;                 // what was not written and why ("no PDF: ...")
};

// Path of the gnuplot executable in PATH, or "".
std::string FindGnuplot();
// Writes every plot; Error if gnuplot is missing or a script fails.
std::vector<PlotOutput> MakePlots(const std::vector<AggregateRecord>& records, const PlotOptions& o);

}  // namespace specsweep
