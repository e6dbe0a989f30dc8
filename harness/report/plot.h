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
  std::string title;
  std::vector<std::pair<double, double>> xy;  // [n_points] (x, y), sorted by x
  std::vector<std::pair<double, double>> ci;  // [n_points] (low, high) of y, or empty
  std::vector<std::string> labels;            // [n_points] point labels (K: PointKeys), or empty
  std::vector<std::string> marks;             // [n_points] the tables' marks († ‡, PointMarks), or empty
};

// Series data of each plot (records as in Results::records).
std::vector<Series> SpeedupVsK(const std::vector<AggregateRecord>& records);
std::vector<Series> AcceptanceVsK(const std::vector<AggregateRecord>& records);         // alpha
std::vector<Series> AcceptedLengthVsK(const std::vector<AggregateRecord>& records);     // tau
std::vector<Series> LatencyVsInputLength(const std::vector<AggregateRecord>& records);  // ms vs prompt tokens
std::vector<Series> AcceptancePerPosition(const std::vector<AggregateRecord>& records);
std::vector<Series> PredictedVsMeasured(const std::vector<AggregateRecord>& records);

// gnuplot data text: "# title" comment, then per series a quoted title line and
// "x y low high \"label\" \"marks\"" lines (low/high = y without an interval), series
// separated by two blank lines (addressed with `index i`).
std::string DatText(const std::string& title, const std::vector<Series>& series);
// The key entries explaining the hollow points of a plot, one per mark present, "|"
// between them ("hollow: † host busy while measured|hollow: ‡ 95% CI wider than ±15%"),
// "" when none is marked.
std::string MarksKey(const std::vector<Series>& series);

struct PlotOptions {
  std::string out_dir = "plots";
  std::string scripts_dir;  // "": <source tree>/plots
  std::string gnuplot;      // "": found in PATH
  std::string subtitle;     // second title line (PlotSubtitle, plot_layout.h), "" for none
};

struct PlotOutput {
  std::string name;                 // "speedup_vs_k", ...
  std::string dat;                  // data file written
  std::vector<std::string> images;  // PNG and SVG written ("" skipped)
  std::string skipped;              // why no image ("" if drawn)
};

// Path of the gnuplot executable in PATH, or "".
std::string FindGnuplot();
// Writes every plot; Error if gnuplot is missing or a script fails.
std::vector<PlotOutput> MakePlots(const std::vector<AggregateRecord>& records, const PlotOptions& o);

}  // namespace specsweep
