// Pearson's chi-square test of sampled counts against a distribution, shared by the
// tests that check speculative sampling keeps the target's distribution.
#pragma once
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

namespace specsweep::chi {

// Pearson chi-square of observed counts against probabilities p. Bins with expected
// count < 5 are pooled into one bin (the usual validity rule). Returns {stat, df}.
inline std::pair<double, int> ChiSquare(const std::vector<int>& counts, const std::vector<double>& p) {
  const double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  double stat = 0.0, pool_e = 0.0, pool_o = 0.0;
  int bins = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = n * p[i];
    if (e < 5.0) {
      pool_e += e;
      pool_o += counts[i];
      continue;
    }
    stat += (counts[i] - e) * (counts[i] - e) / e;
    ++bins;
  }
  if (pool_e > 0.0) {
    // An observed count in a bin of expected ~0 is itself evidence: keep it, floored at 1.
    const double e = std::max(pool_e, 1.0);
    stat += (pool_o - e) * (pool_o - e) / e;
    ++bins;
  }
  return {stat, bins - 1};
}

// Upper 0.1% point of chi-square with df degrees of freedom (Wilson-Hilferty).
inline double Critical(int df) {
  const double z = 3.090232, d = df;
  const double t = 1.0 - 2.0 / (9.0 * d) + z * std::sqrt(2.0 / (9.0 * d));
  return d * t * t * t;
}

}  // namespace specsweep::chi
