#include "harness/report/fit.h"

#include <Eigen/Dense>
#include <algorithm>

namespace specsweep {

CostFit FitVerifyCost(const std::vector<double>& t) {
  CostFit best;
  const int m = int(t.size());
  if (m < 2 || !std::all_of(t.begin(), t.end(), [](double x) { return std::isfinite(x) && x > 0; })) return best;
  const Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(t.data(), m);  // [m] seconds
  double best_sse = INFINITY;
  for (int knee = 1; knee == 1 || knee <= m - 2; ++knee) {
    Eigen::MatrixXd a(m, 2);  // [m][1, max(n, knee)]
    for (int i = 0; i < m; ++i) a.row(i) << 1.0, double(std::max(i + 1, knee));
    const Eigen::Vector2d c = a.colPivHouseholderQr().solve(y);
    const Eigen::VectorXd r = a * c - y;        // [m] residuals
    if (r.squaredNorm() >= best_sse) continue;  // a later knee must fit strictly better
    best_sse = r.squaredNorm();
    best = CostFit{c[0], c[1], knee, (r.array() / y.array()).abs().maxCoeff(), m};
  }
  return best;
}

}  // namespace specsweep
