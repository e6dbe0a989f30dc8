#include "harness/report/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>
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

std::pair<double, double> BootstrapPercentiles(size_t n,
                                               const std::function<double(std::span<const size_t>)>& statistic,
                                               uint64_t seed, double level, int resamples) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (n < 2) return {kNaN, kNaN};
  // mt19937_64 and an explicit index draw (not uniform_int_distribution, whose
  // algorithm the standard leaves open) give the same interval on every platform.
  std::mt19937_64 gen(seed);
  std::vector<size_t> idx(n);
  std::vector<double> stats;
  stats.reserve(size_t(resamples));
  for (int b = 0; b < resamples; ++b) {
    for (size_t& i : idx) i = gen() % n;
    if (const double x = statistic(idx); std::isfinite(x)) stats.push_back(x);
  }
  if (stats.empty()) return {kNaN, kNaN};
  std::sort(stats.begin(), stats.end());
  auto at = [&](double q) {
    const double pos = q * double(stats.size() - 1);
    const size_t i = size_t(pos);
    const double f = pos - double(i);
    return i + 1 < stats.size() ? stats[i] * (1 - f) + stats[i + 1] * f : stats[i];
  };
  return {at((1.0 - level) / 2.0), at((1.0 + level) / 2.0)};
}

Interval BootstrapMean(std::span<const double> v, uint64_t seed, double level, int resamples) {
  std::vector<double> x;
  for (double a : v)
    if (std::isfinite(a)) x.push_back(a);
  Interval r;
  r.n = int(x.size());
  r.mean = Mean(x);
  const auto mean_of = [&x](std::span<const size_t> idx) {
    double s = 0;
    for (size_t i : idx) s += x[i];
    return s / double(idx.size());
  };
  std::tie(r.low, r.high) = BootstrapPercentiles(x.size(), mean_of, seed, level, resamples);
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

Spread Summarize(std::span<const double> v) {
  if (v.empty()) return {};
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {Median(v), *lo, *hi};
}

}  // namespace specsweep
