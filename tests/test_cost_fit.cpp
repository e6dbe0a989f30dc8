// The verify-cost fit (harness/report/fit.h) and its use beyond the measured sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/report/fit.h"

namespace specsweep {
namespace {

TEST(CostFit, RecoversALineAndItsResiduals) {
  std::vector<double> t;
  for (int n = 1; n <= 9; ++n) t.push_back(0.004 + 0.0005 * n);
  const CostFit f = FitVerifyCost(t);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR(f.intercept_s, 0.004, 1e-12);
  EXPECT_NEAR(f.slope_s, 0.0005, 1e-12);
  EXPECT_NEAR(f.At(17), 0.004 + 0.0005 * 17, 1e-12);
  EXPECT_LT(f.max_residual_rel, 1e-9);
  EXPECT_EQ(f.points, 9);
  EXPECT_EQ(f.knee, 1);  // a line fits exactly: no later knee fits strictly better
}

TEST(CostFit, FindsTheRooflineKnee) {
  // Flat while the weights' streaming dominates (n <= 3), then 2 ms per token: F16's
  // shape on the 134M model. A single line through n = 1..6 would miss the slope.
  const std::vector<double> t = {0.010, 0.010, 0.010, 0.012, 0.014, 0.016};
  const CostFit f = FitVerifyCost(t);
  EXPECT_EQ(f.knee, 3);
  EXPECT_NEAR(f.slope_s, 0.002, 1e-12);
  EXPECT_NEAR(f.intercept_s, 0.004, 1e-12);
  EXPECT_NEAR(f.At(2), 0.010, 1e-12);
  EXPECT_NEAR(f.At(16), 0.036, 1e-12);
}

TEST(CostFit, LeastSquaresNotTheLastTwoPoints) {
  // Noise on the last point moves the last-two slope by 100%, the fit's by far less.
  const std::vector<double> t = {1.0, 2.0, 3.0, 4.0, 6.0};
  const CostFit f = FitVerifyCost(t);
  EXPECT_EQ(f.knee, 1);  // knees 2 and 3 fit worse: the points rise from n = 1
  // n = 1..5: slope = sum (n - 3)(t - 3.2) / sum (n - 3)^2 = 12 / 10, intercept =
  // mean(t) - slope * 3 = 3.2 - 3.6; the largest relative residual is at n = 1 (0.8 vs 1).
  EXPECT_NEAR(f.slope_s, 1.2, 1e-12);
  EXPECT_NEAR(f.intercept_s, -0.4, 1e-12);
  EXPECT_NEAR(f.max_residual_rel, 0.2, 1e-12);
}

TEST(CostFit, TooFewOrBadPointsGiveNoFit) {
  EXPECT_FALSE(FitVerifyCost({}).ok());
  EXPECT_FALSE(FitVerifyCost({0.01}).ok());
  EXPECT_FALSE(FitVerifyCost({0.01, NAN, 0.03}).ok());
  EXPECT_FALSE(FitVerifyCost({0.01, 0.0}).ok());
}

}  // namespace
}  // namespace specsweep
