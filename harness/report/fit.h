// Least-squares fits of the cost model (Eigen3). The verify cost T(n), one target call
// on n tokens, is measured for n = 1..K+1 only; replayed K's, token trees and adaptive
// policies need T at sizes that were not measured. On a CPU a call streams the weights
// once (fixed cost) and does work per token (linear cost), so T(n) ~ a + b n over the
// verification range; the fit uses every measured point rather than the last two.
#pragma once
#include <cmath>
#include <vector>

namespace specsweep {

struct CostFit {
  double intercept_s = NAN;        // a: the cost of a call independent of its size
  double slope_s = NAN;            // b: the cost of each further token
  double max_residual_rel = NAN;   // max over the fitted n of |T(n) - fit(n)| / T(n)
  int points = 0;                  // measured sizes fitted (n = 1..points)
  bool ok() const { return points >= 2 && std::isfinite(intercept_s) && std::isfinite(slope_s); }
  double At(int n) const { return intercept_s + slope_s * n; }  // predicted T(n), seconds
};

// Least squares of t[i] = T(i + 1) on a + b n; needs two or more finite positive
// values, else returns a fit that is not ok().
CostFit FitVerifyCost(const std::vector<double>& t);

}  // namespace specsweep
