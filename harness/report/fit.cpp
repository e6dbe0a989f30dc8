#include "harness/report/fit.h"

#include <Eigen/Dense>
#include <algorithm>

namespace specsweep {

CostFit FitVerifyCost(const std::vector<double>& t) {
  CostFit f;
  const int m = int(t.size());
  if (m < 2 || !std::all_of(t.begin(), t.end(), [](double x) { return std::isfinite(x) && x > 0; })) return f;
  Eigen::MatrixXd a(m, 2);  // [m][1, n]
  const Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(t.data(), m);  // [m] seconds
  for (int i = 0; i < m; ++i) a.row(i) << 1.0, double(i + 1);
  const Eigen::Vector2d c = a.colPivHouseholderQr().solve(y);
  f.intercept_s = c[0];
  f.slope_s = c[1];
  f.points = m;
  f.max_residual_rel = ((a * c - y).array() / y.array()).abs().maxCoeff();
  return f;
}

}  // namespace specsweep
