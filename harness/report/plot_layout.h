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

// `text` split at "; " into lines of at most `width` characters (a part longer than that
// gets a line of its own), joined with "\n".
std::string WrapParts(const std::string& text, size_t width);

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

}  // namespace specsweep
