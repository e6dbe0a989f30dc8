// Sample statistics of measured values: location, spread and a seeded bootstrap
// confidence interval, so the same raw data always gives the same interval.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <string_view>

namespace specsweep {

// NaN for an empty sample; StdDev uses n-1 and is 0 for fewer than two values.
double Mean(std::span<const double> v);
double Median(std::span<const double> v);
double StdDev(std::span<const double> v);

// Median, min and max of a sample (all 0 for an empty one).
struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread Summarize(std::span<const double> v);

struct Interval {
  double mean = 0, low = 0, high = 0;  // low/high: NaN when n < 2
  int n = 0;
  double half_width_rel() const;  // (high - low) / 2 / mean
};

// A bootstrap seed from text (FNV-1a, e.g. of a point's key): the same raw data always
// gives the same interval.
uint64_t SeedOf(std::string_view key);

// Percentile bootstrap of any statistic of n values (or pairs) by index: `resamples`
// resamples of the indices 0..n-1 with replacement, drawn by a generator seeded with
// `seed`; the [(1-level)/2, (1+level)/2] percentiles of `statistic` over them (non-finite
// results left out). NaN ends when n < 2 or no resample gives a finite statistic.
std::pair<double, double> BootstrapPercentiles(size_t n,
                                               const std::function<double(std::span<const size_t>)>& statistic,
                                               uint64_t seed, double level = 0.95, int resamples = 4000);

// Percentile bootstrap of the mean: `resamples` resamples with replacement drawn by a
// generator seeded with `seed`, interval [(1-level)/2, (1+level)/2] of their means.
// Non-finite values are left out (n counts the rest).
Interval BootstrapMean(std::span<const double> v, uint64_t seed, double level = 0.95, int resamples = 4000);

// exp(mean of log v): NaN when no value is finite and positive (the others are left out).
double GeometricMean(std::span<const double> v);

// THE speedup estimator (docs/metrics.md), behind every speedup a record, table, plot or
// progress line shows (`check` reads none): the geometric mean of paired per-round ratios (point over baseline in the
// same round), with a percentile bootstrap in log space (resample the ratios, mean of their logs, exp of the
// percentiles), so speedup(A, B) = 1 / speedup(B, A) and the interval is asymmetric around the point. A mean of ratios
// would be biased upward by noise and not symmetric. Non-finite and non-positive ratios are left out (n counts the
// rest).
Interval Speedup(std::span<const double> round_ratios, uint64_t seed);

}  // namespace specsweep
