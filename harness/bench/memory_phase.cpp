#include "harness/bench/memory_phase.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "harness/report/statistics.h"

namespace specsweep {

const char* MemoryPhaseName(MemoryPhase p) {
  switch (p) {
    case MemoryPhase::kOne: return "one";
    case MemoryPhase::kSlow: return "slow";
    case MemoryPhase::kFast: return "fast";
    case MemoryPhase::kMixed: return "mixed";
  }
  return "?";
}

MemoryPhase ParseMemoryPhase(const std::string& name, const std::string& what) {
  for (MemoryPhase p : {MemoryPhase::kOne, MemoryPhase::kSlow, MemoryPhase::kFast, MemoryPhase::kMixed})
    if (name == MemoryPhaseName(p)) return p;
  Fail("{}: '{}' is not a memory phase (one, slow, fast, mixed)", what, name);
}

namespace {

PhaseGroup GroupOf(std::span<const double> sorted) {
  if (sorted.empty()) return {};
  return {static_cast<int>(sorted.size()), sorted.front(), Median(sorted), sorted.back()};
}

// Sum of squared deviations from the mean of sorted[lo, hi), from prefix sums.
double Scatter(const std::vector<double>& sum, const std::vector<double>& sq, size_t lo, size_t hi) {
  const double n = double(hi - lo), s = sum[hi] - sum[lo];
  return (sq[hi] - sq[lo]) - s * s / n;
}

// The d-th decile (0..10) of sorted readings by nearest rank, rounded outward from the
// median: the lowest and highest reading in groups of up to 10.
double Decile(std::span<const double> sorted, int d) {
  const double pos = d * double(sorted.size() - 1) / 10;
  return sorted[static_cast<size_t>(d < 5 ? std::floor(pos) : std::ceil(pos))];
}

}  // namespace

PhaseSplit SplitPhases(std::span<const double> readings_gbs) {
  std::vector<double> x(readings_gbs.begin(), readings_gbs.end());
  std::sort(x.begin(), x.end());
  PhaseSplit s;
  s.slow = GroupOf(x);
  if (x.size() < 2) return s;
  std::vector<double> sum(x.size() + 1, 0.0), sq(x.size() + 1, 0.0);  // prefix sums
  for (size_t i = 0; i < x.size(); ++i) sum[i + 1] = sum[i] + x[i], sq[i + 1] = sq[i] + x[i] * x[i];
  size_t cut = 1;  // in 1-D the best two-means split is a cut of the sorted readings
  double best = Scatter(sum, sq, 0, 1) + Scatter(sum, sq, 1, x.size());
  for (size_t k = 2; k < x.size(); ++k) {
    const double w = Scatter(sum, sq, 0, k) + Scatter(sum, sq, k, x.size());
    if (w < best) best = w, cut = k;
  }
  // The slow group's upper and the fast group's lower decile: up to a tenth of either may
  // sit in the gap (readings taken during a switch or a neighbour's busy spell).
  const std::span<const double> lo(x.data(), cut), hi(x.data() + cut, x.size() - cut);
  const double lo_top = Decile(lo, 9), hi_bottom = Decile(hi, 1);
  const double widest = std::max(lo_top - Decile(lo, 1), Decile(hi, 9) - hi_bottom);
  if (hi_bottom < kPhaseGapRatio * lo_top || hi_bottom - lo_top <= widest) return s;
  s.two_phases = true;
  s.split_gbs = (x[cut - 1] + x[cut]) / 2;
  s.slow = GroupOf(lo);
  s.fast = GroupOf(hi);
  return s;
}

MemoryPhase PhaseOf(const PhaseSplit& s, double reading_gbs) {
  if (!s.two_phases) return MemoryPhase::kOne;
  return reading_gbs >= s.split_gbs ? MemoryPhase::kFast : MemoryPhase::kSlow;
}

MemoryPhase RepetitionPhase(const PhaseSplit& s, double before_gbs, double after_gbs) {
  const MemoryPhase a = PhaseOf(s, before_gbs), b = PhaseOf(s, after_gbs);
  return a == b ? a : MemoryPhase::kMixed;
}

void PairByPhase(std::span<const double> num_ms, std::span<const MemoryPhase> num_phase, std::span<const double> den_ms,
                 std::span<const MemoryPhase> den_phase, PhasePairs& out) {
  if (num_ms.size() != num_phase.size() || den_ms.size() != den_phase.size())
    Fail("PairByPhase: {} times with {} phases, {} with {}", num_ms.size(), num_phase.size(), den_ms.size(),
         den_phase.size());
  for (MemoryPhase p : {MemoryPhase::kOne, MemoryPhase::kSlow, MemoryPhase::kFast}) {
    std::vector<double> a, b;  // this phase's times, in repetition order
    for (size_t i = 0; i < num_ms.size(); ++i)
      if (num_phase[i] == p) a.push_back(num_ms[i]);
    for (size_t i = 0; i < den_ms.size(); ++i)
      if (den_phase[i] == p) b.push_back(den_ms[i]);
    const size_t n = std::min(a.size(), b.size());
    for (size_t k = 0; k < n; ++k) out.ratios[p].push_back(a[k] / b[k]);
    out.unpaired_num += static_cast<int>(a.size() - n);
    out.unpaired_den += static_cast<int>(b.size() - n);
  }
  const int mixed_num = static_cast<int>(std::count(num_phase.begin(), num_phase.end(), MemoryPhase::kMixed));
  const int mixed_den = static_cast<int>(std::count(den_phase.begin(), den_phase.end(), MemoryPhase::kMixed));
  out.mixed_num += mixed_num, out.mixed_den += mixed_den;
  out.unpaired_num += mixed_num, out.unpaired_den += mixed_den;
}

}  // namespace specsweep
