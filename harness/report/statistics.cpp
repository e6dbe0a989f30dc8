#include "harness/report/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace specsweep {

double Mean(std::span<const double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

double Median(std::span<const double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> s(v.begin(), v.end());
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double StdDev(std::span<const double> v) {
  if (v.size() < 2) return 0.0;
  double m = Mean(v), ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / double(v.size() - 1));
}

double Interval::half_width_rel() const { return (high - low) / 2.0 / mean; }

Interval BootstrapMean(std::span<const double> v, uint64_t seed, double level, int resamples) {
  std::vector<double> x;
  for (double a : v)
    if (std::isfinite(a)) x.push_back(a);
  Interval r;
  r.n = int(x.size());
  r.mean = Mean(x);
  r.low = r.high = std::numeric_limits<double>::quiet_NaN();
  if (x.size() < 2) return r;
  // mt19937_64 and an explicit index draw (not uniform_int_distribution, whose
  // algorithm the standard leaves open) give the same interval on every platform.
  std::mt19937_64 gen(seed);
  std::vector<double> means(resamples);
  const uint64_t n = x.size();
  for (int b = 0; b < resamples; ++b) {
    double s = 0;
    for (uint64_t i = 0; i < n; ++i) s += x[gen() % n];
    means[b] = s / double(n);
  }
  std::sort(means.begin(), means.end());
  auto at = [&](double q) {
    const double pos = q * double(resamples - 1);
    const size_t i = size_t(pos);
    const double f = pos - double(i);
    return i + 1 < means.size() ? means[i] * (1 - f) + means[i + 1] * f : means[i];
  };
  r.low = at((1.0 - level) / 2.0);
  r.high = at((1.0 + level) / 2.0);
  return r;
}

namespace {

std::vector<double> Logs(std::span<const double> v) {
  std::vector<double> out;
  for (double x : v)
    if (std::isfinite(x) && x > 0) out.push_back(std::log(x));
  return out;
}

}  // namespace

double GeometricMean(std::span<const double> v) { return std::exp(Mean(Logs(v))); }

Interval Speedup(std::span<const double> round_ratios, uint64_t seed) {
  const Interval log_ci = BootstrapMean(Logs(round_ratios), seed);
  // exp keeps NaN (fewer than two ratios) and the order of the percentiles.
  return Interval{std::exp(log_ci.mean), std::exp(log_ci.low), std::exp(log_ci.high), log_ci.n};
}

uint64_t SeedOf(std::string_view key) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace specsweep
