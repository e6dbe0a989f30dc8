// Least-squares fit of the verify cost (Eigen3). T(n), one target call on n tokens, is
// measured for n = 1..K+1 only; replayed K's, token trees and adaptive policies need T
// at sizes that were not measured. A call streams the weights once and computes per
// token, so T(n) is flat while streaming dominates and linear once the per-token work
// does (the roofline: F16 on the 134M shape turns at n ~ 4 on 2 Zen 4 cores, Q4_0 is
// linear from n = 1). The fit is that shape, T(n) = a + b max(n, knee), with the knee
// chosen among the measured sizes by least squares; past the measured range it is the
// line a + b n, so its slope is the marginal cost of the largest measured batches.
#pragma once
#include <cmath>
#include <vector>

namespace specsweep {

struct CostFit {
  double intercept_s = NAN;       // a
  double slope_s = NAN;           // b: seconds per further token past the knee
  int knee = 0;                   // T is flat (a + b knee) for n <= knee; 1: a line throughout
  double max_residual_rel = NAN;  // max over the fitted n of |T(n) - fit(n)| / T(n)
  int points = 0;                 // measured sizes fitted (n = 1..points)
  bool ok() const { return points >= 2 && std::isfinite(intercept_s) && std::isfinite(slope_s); }
  double At(int n) const { return intercept_s + slope_s * (n > knee ? n : knee); }  // seconds
};

// Least squares of t[i] = T(i + 1). Knees leave at least two sizes on the slope, so
// up to three points give a plain line. Needs two or more finite positive values, else
// returns a fit that is not ok().
CostFit FitVerifyCost(const std::vector<double>& t);

}  // namespace specsweep
