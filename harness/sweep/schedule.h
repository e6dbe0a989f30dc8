// Schedule: which points are measured together and in what order. A group is a
// baseline (autoregressive) point and the speculative points compared against it; its
// points run in rotating order within each round (A B C, B C A, ...), one round per
// (repetition, prompt), so a slow spell on the host hits all of them alike and every
// speedup is a ratio of two runs of the same round.
#pragma once
#include <vector>

#include "harness/sweep/experiment.h"

namespace specsweep {

struct Group {
  std::vector<const Point*> points;  // [0] is the baseline
  const Point& baseline() const { return *points[0]; }
};

// Groups in order of first appearance (LoadExperiment puts each baseline first).
std::vector<Group> MakeGroups(const std::vector<Point>& points);

// Indices into a group's points in the order round `round` runs them.
std::vector<int> RoundOrder(int n_points, int round);

}  // namespace specsweep
