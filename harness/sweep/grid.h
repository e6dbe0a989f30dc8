// Grid expansion: one decoder entry of an experiment into its points (the cartesian
// product of its axes, drafts made concrete), and the grid's order into groups.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/sweep/point.h"
#include "harness/sweep/questions.h"
#include "harness/sweep/schema.h"

namespace specsweep {

// Grids are counted before they are expanded: a few lines of axes can multiply to
// millions of points, each costing memory before anything is measured.
inline constexpr int64_t kDefaultMaxPoints = 100000;
struct PointBudget {
  int64_t max_points = kDefaultMaxPoints;  // the experiment's max_points
  std::string where;                       // where it was set, for the error ("max_points" or "the default")
};

// Expands decoder entry `d` (a name or a map at `dp`) over `models` on top of the
// global axes; appends autoregressive points to `ar`, speculative ones to `spec`.
void ExpandDecoderEntry(const schema::Ctx& c, const nlohmann::json& doc, const nlohmann::json& d, const std::string& dp,
                        const schema::Axes& global, const std::vector<std::string>& models,
                        const std::string& prompt_category, const std::string& models_dir, std::vector<Point>& ar,
                        std::vector<Point>& spec, const PointBudget& budget);

// Each baseline (explicit AR point or added) followed by its speculative points, groups
// in order of first appearance; duplicates dropped.
std::vector<Point> OrderIntoGroups(const std::vector<Point>& ar, const std::vector<Point>& spec);

// Each group of `points` (OrderIntoGroups' order) once per part of a question set, its
// points' `part` set; points of cut passages (input_length > 0) stay whole, as they are.
std::vector<Point> SplitIntoParts(const std::vector<Point>& points, const std::vector<QuestionPart>& parts);

}  // namespace specsweep
