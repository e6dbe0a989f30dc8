// Layout of the plots' text, decided before gnuplot runs so no text overlaps: the
// subtitle, wrapped to the plot's width, the canvas grown to hold the legend's rows, and
// the point keys (K) that the predicted-vs-measured plot draws as marker shapes instead
// of text beside each point (text beside near-coincident points overlaps).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/plot.h"

namespace specsweep {

// "models A, B; prompts tinystories.txt; CPU; kernels avx512; 2 threads; error bars: 95%
// bootstrap CI" from a results file's context and records.
std::string PlotSubtitle(const nlohmann::json& context, const std::vector<AggregateRecord>& records);

// The caption line of every plot: when the results were run, n (repetitions x prompts)
// and max_new_tokens: "2026-11-29 04:30 UTC; n = 5 repetitions x 8 prompts;
// max_new_tokens 64" (values that differ between records joined by "/").
std::string PlotCaption(const nlohmann::json& context, const std::vector<AggregateRecord>& records);

// `text` split at "; " into lines of at most `width` characters (a part longer than that
// gets a line of its own), joined with "\n".
std::string WrapParts(const std::string& text, size_t width);
// A legend title gnuplot can place: one longer than a below-the-plot key column of the
// base canvas holds (a replayed trace names its file and point) makes gnuplot drop the
// whole key, so its middle gives way to "…"; the tables keep the full name.
std::string FitKeyTitle(const std::string& title);

// The distinct point labels of the series ("k=2", "k<=8 adaptive", ...), numbers in
// them compared as numbers (k=2 before k=12), "" left out.
std::vector<std::string> PointKeys(const std::vector<Series>& series);

// The legend's entries and its longest title in characters: the series, the point
// keys, the hollow marks' entries ("|"-separated, MarksKey) and `extra` short ones.
struct KeyText {
  size_t entries = 0, longest = 0;
};
KeyText KeyTextOf(const std::vector<Series>& series, const std::string& marks, const std::vector<std::string>& keys,
                  int extra);

// Pixel size of a plot's canvas, grown from a base size to hold the legend beyond the
// rows the base holds, so the plot keeps its size.
struct Canvas {
  int width = 1100, height = 650;
};
// A legend below the plot (common.gp: font 9, columns as wide as the longest title).
Canvas CanvasForKeyBelow(Canvas base, KeyText key);
// A legend right of the plot, one entry a line.
Canvas CanvasForKeyRight(Canvas base, KeyText key);
// Whether a legend right of a square plot leaves the plot most of the canvas: titles of
// at most 45 characters, and no more entries than fit a canvas 1.5 times the base height.
bool KeyFitsRight(Canvas base, KeyText key);

// How series are told apart: colour, dash pattern, point shape (gnuplot pt, filled; the
// open form is one less). AR is black (solid, then dashed for a second model's AR); the
// others take kPalette in order, a new
// dash pattern and shape each time the palette comes round, so no colour is reused with
// the same line and AR's black is never reused.
struct SeriesStyle {
  std::string colour;
  int dash = 1, shape = 7;
};
// Okabe-Ito's colour-blind-safe colours without black (AR's) and its orange and yellow
// (orange is too near vermillion, yellow too light on white), and Tol's dark yellow.
extern const std::vector<std::string> kPalette;
std::vector<SeriesStyle> SeriesStyles(const std::vector<Series>& series);
// Whether the positive y values of the series span more than a decade (max > 10 min): a
// log axis then keeps the small ones readable.
bool SpansDecade(const std::vector<Series>& series);

}  // namespace specsweep
