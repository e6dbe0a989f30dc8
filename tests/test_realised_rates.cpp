// Realised conditional acceptance per draft position (harness/report/aggregate.cpp
// BuildPositions): a chain's per-step traces count the steps that reached each position
// exactly, so a generation's clipped last steps do not pull the later positions down.
#include <gtest/gtest.h>

#include "decoders/decoder.h"
#include "harness/report/aggregate_parts.h"

namespace specsweep {
namespace {

// Ten full steps of K = 4 (accepted 4,4,4,4,4,3,2,1,0,0) and five clipped last steps that
// drafted one token and accepted it.
GenerationStats FullAndClippedSteps() {
  GenerationStats s;
  s.k_per_step = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1, 1, 1, 1, 1};
  s.accepted_per_step = {4, 4, 4, 4, 4, 3, 2, 1, 0, 0, 1, 1, 1, 1, 1};
  s.drafted_at_pos = {15, 10, 10, 10};
  s.accepted_at_pos = {13, 7, 6, 5};
  return s;
}

TEST(RealisedRates, ChainCountsTheStepsThatReachedEachPosition) {
  const PositionAcceptance p = BuildPositions(FullAndClippedSteps(), true);
  ASSERT_EQ(p.acceptance_at_pos_conditional.size(), 4u);
  EXPECT_DOUBLE_EQ(p.acceptance_at_pos_conditional[0], 13.0 / 15);
  EXPECT_DOUBLE_EQ(p.acceptance_at_pos_conditional[1], 7.0 / 8);  // not 7 / 10: five steps drafted no position 2
  EXPECT_DOUBLE_EQ(p.acceptance_at_pos_conditional[2], 6.0 / 7);
  EXPECT_DOUBLE_EQ(p.acceptance_at_pos_conditional[3], 5.0 / 6);
  EXPECT_DOUBLE_EQ(p.acceptance_at_pos[1], 7.0 / 10);  // unconditional: as before
}

// A tree's steps count nodes, not a chain's positions: the bound from the per-position
// counts stays (and so does a record without traces).
TEST(RealisedRates, TreesAndRecordsWithoutTracesKeepTheBound) {
  EXPECT_DOUBLE_EQ(BuildPositions(FullAndClippedSteps(), false).acceptance_at_pos_conditional[1], 7.0 / 10);
  GenerationStats no_traces = FullAndClippedSteps();
  no_traces.k_per_step.clear();
  no_traces.accepted_per_step.clear();
  EXPECT_DOUBLE_EQ(BuildPositions(no_traces, true).acceptance_at_pos_conditional[1], 7.0 / 10);
}

}  // namespace
}  // namespace specsweep
