#include "harness/bench/compare_phases.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/report/statistics.h"

namespace specsweep {
namespace {

// A child's timed units at `key` with their phases: its repetitions (each between two
// readings), or its whole run (its median, between its extreme readings).
struct Units {
  std::vector<double> ms;
  std::vector<MemoryPhase> phase;
};
Units UnitsOf(const ChildRun& c, const std::string& key, const PooledPhases& p) {
  Units u;
  if (p.per_rep) {
    u.ms = c.rep_ms.at(key);
    for (size_t r = 0; r < u.ms.size(); ++r)
      u.phase.push_back(RepetitionPhase(p.split, c.readings[r], c.readings[r + 1]));
  } else {
    const auto [lo, hi] = std::minmax_element(c.readings.begin(), c.readings.end());
    u.ms = {c.ms.at(key)};
    u.phase = {RepetitionPhase(p.split, *lo, *hi)};
  }
  return u;
}

}  // namespace

PooledPhases PoolPhases(const std::vector<std::vector<ChildRun>>& runs, const std::vector<std::string>& keys) {
  PooledPhases p;
  std::vector<double> all;
  for (const auto& rv : runs)
    for (const ChildRun& c : rv) {
      all.insert(all.end(), c.readings.begin(), c.readings.end());
      for (const std::string& key : keys) p.per_rep &= c.rep_ms.count(key) > 0;
    }
  p.split = SplitPhases(all);
  p.reported = p.split.two_phases ? std::vector<MemoryPhase>{MemoryPhase::kSlow, MemoryPhase::kFast}
                                  : std::vector<MemoryPhase>{MemoryPhase::kOne};
  return p;
}

// Variant i's units paired with the first variant's, round by round and phase by phase.
PhasePairs PairsOf(const std::string& key, size_t i, const std::vector<std::vector<ChildRun>>& runs,
                   const PooledPhases& p) {
  PhasePairs pp;
  for (size_t r = 0; r < runs[i].size(); ++r) {
    const Units num = UnitsOf(runs[i][r], key, p), den = UnitsOf(runs[0][r], key, p);
    PairByPhase(num.ms, num.phase, den.ms, den.phase, pp);
  }
  return pp;
}

// Variant i's median ms per phase over all its units at `key`, for the record.
nlohmann::json PhaseTimes(const std::string& key, size_t i, const std::vector<std::vector<ChildRun>>& runs,
                          const PooledPhases& p) {
  std::map<MemoryPhase, std::vector<double>> ms;
  for (const ChildRun& c : runs[i]) {
    const Units u = UnitsOf(c, key, p);
    for (size_t k = 0; k < u.ms.size(); ++k) ms[u.phase[k]].push_back(u.ms[k]);
  }
  nlohmann::json j = nlohmann::json::object();
  for (MemoryPhase ph : p.reported)
    if (ms.count(ph)) j[MemoryPhaseName(ph)] = {{"real_time", Median(ms[ph])}, {"units", ms[ph].size()}};
  return j;
}

// The ratio record of variant i to the first: per phase the median and range over the
// pairs; the headline ratio is the phase with the most pairs (never a mix of phases).
nlohmann::json RatioRecord(const CompareArgs& a, const std::string& key, size_t i, const PhasePairs& pp,
                           const PooledPhases& p) {
  const auto& vs = a.variants;
  nlohmann::json phases = nlohmann::json::object();
  nlohmann::json rec = {{"name", fmt::format("bench_forward_compare/ratio/{}:{}/{}", vs[i].label, vs[0].label, key)},
                        {"run_type", "aggregate"},
                        {"aggregate_name", "median"},
                        {"record", key},
                        {"ratio", nullptr},
                        {"ratio_min", nullptr},
                        {"ratio_max", nullptr},
                        {"phase", nullptr},
                        {"pairs", 0},
                        {"rounds", a.rounds},
                        {"unpaired", {{vs[i].label, pp.unpaired_num}, {vs[0].label, pp.unpaired_den}}}};
  size_t most = 0;
  for (MemoryPhase ph : p.reported) {
    const auto it = pp.ratios.find(ph);
    if (it == pp.ratios.end() || it->second.empty()) continue;
    const Spread s = Summarize(it->second);
    phases[MemoryPhaseName(ph)] = {{"ratio", s.median},
                                   {"ratio_min", s.min},
                                   {"ratio_max", s.max},
                                   {"pairs", it->second.size()}};
    if (it->second.size() > most) {
      most = it->second.size();
      rec["ratio"] = s.median, rec["ratio_min"] = s.min, rec["ratio_max"] = s.max;
      rec["phase"] = MemoryPhaseName(ph), rec["pairs"] = most;
    }
  }
  rec["phases"] = phases;
  return rec;
}

void PrintRatioCells(const PhasePairs& pp, const PooledPhases& p) {
  for (MemoryPhase ph : p.reported) {
    const auto it = pp.ratios.find(ph);
    if (it == pp.ratios.end() || it->second.empty()) {
      fmt::print(" {:>28}", "- (0 pairs)");
      continue;
    }
    const Spread s = Summarize(it->second);
    fmt::print(" {:>28}", fmt::format("{:.3f} ({:.2f}..{:.2f}) {}", s.median, s.min, s.max, it->second.size()));
  }
}

// The phases of the children's readings, above the table.
void PrintPooledPhases(const PooledPhases& p) {
  const PhaseSplit& s = p.split;
  if (s.two_phases)
    fmt::print(
        "memory phases over the children's readings: two, slow {:.1f}..{:.1f} GB/s ({} readings) and fast "
        "{:.1f}..{:.1f} GB/s ({} readings), split at {:.1f} GB/s\n",
        s.slow.min_gbs, s.slow.max_gbs, s.slow.readings, s.fast.min_gbs, s.fast.max_gbs, s.fast.readings, s.split_gbs);
  else
    fmt::print(
        "memory phase over the children's readings: one ({:.1f}..{:.1f} GB/s over {} readings; two phases need a "
        "gap of {:.2f}x)\n",
        s.slow.min_gbs, s.slow.max_gbs, s.slow.readings, kPhaseGapRatio);
  if (!p.per_rep)
    fmt::print(
        "a variant's build writes no per-repetition readings: whole rounds are paired by phase (a round whose "
        "readings span both phases stays unpaired)\n");
}

// Per variant, how many pairs each phase gave and how many units were left unpaired (the
// same for every record: a unit's phase is its child's, whatever the record).
void PrintPairing(const CompareArgs& a, const std::string& key, const std::vector<std::vector<ChildRun>>& runs,
                  const PooledPhases& p) {
  const auto& vs = a.variants;
  const char* unit = p.per_rep ? "repetitions" : "rounds";
  for (size_t i = 1; i < vs.size(); ++i) {
    const PhasePairs pp = PairsOf(key, i, runs, p);
    std::string per_phase;
    size_t pairs = 0;
    for (MemoryPhase ph : p.reported) {
      const size_t n = pp.ratios.count(ph) ? pp.ratios.at(ph).size() : 0;
      per_phase += fmt::format("{}{} {}", per_phase.empty() ? "" : ", ", MemoryPhaseName(ph), n);
      pairs += n;
    }
    fmt::print("{}/{}: {} pairs of {} ({}); unpaired: {} {} of {} and {} of {} ({} and {} across a phase switch)\n",
               vs[i].label, vs[0].label, pairs, unit, per_phase, pp.unpaired_num, unit, vs[i].label, pp.unpaired_den,
               vs[0].label, pp.mixed_num, pp.mixed_den);
  }
}

nlohmann::json PooledPhasesJson(const PooledPhases& p) {
  const PhaseSplit& s = p.split;
  nlohmann::json phases = {{"two_phases", s.two_phases},
                           {"gap_ratio", kPhaseGapRatio},
                           {"paired", p.per_rep ? "repetitions" : "rounds"},
                           {"readings", s.slow.readings + s.fast.readings}};
  if (s.two_phases) {
    phases["split_gbs"] = s.split_gbs;
    phases["slow_gbs"] = {s.slow.min_gbs, s.slow.max_gbs};
    phases["fast_gbs"] = {s.fast.min_gbs, s.fast.max_gbs};
  }
  return phases;
}

}  // namespace specsweep
