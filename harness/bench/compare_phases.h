// bench-forward --compare's memory phases (harness/bench/memory_phase.h): the children's
// readings split into phases together, each child's repetitions paired by phase with the
// first variant's in the same round, and the per-phase ratios, counts and records.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench/bench_compare.h"
#include "harness/bench/memory_phase.h"

namespace specsweep {

// One child's results: record key ("f16/n:1") -> median ms and roofline fraction, and
// each repetition's ms with the probe readings around the repetitions.
struct ChildRun {
  std::map<std::string, double> ms, roofline;
  std::map<std::string, std::vector<double>> rep_ms;  // key -> [reps]; empty from a build before schema 7
  std::vector<double> readings;  // [reps + 1] GB/s, before and after each repetition (older: during min, max)
  nlohmann::json context;
};

// The memory phases over every child's readings together, so that a phase means the same
// bandwidth in every round and variant (a child alone may have met one phase only).
struct PooledPhases {
  PhaseSplit split;
  bool per_rep = true;                // every child reports its repetitions (else whole runs are paired)
  std::vector<MemoryPhase> reported;  // slow and fast, or one
};
PooledPhases PoolPhases(const std::vector<std::vector<ChildRun>>& runs, const std::vector<std::string>& keys);

// Variant i's units (repetitions, or whole runs) at `key` paired with the first variant's,
// round by round and phase by phase.
PhasePairs PairsOf(const std::string& key, size_t i, const std::vector<std::vector<ChildRun>>& runs,
                   const PooledPhases& p);
// Variant i's median ms per phase over all its units at `key`, for its record.
nlohmann::json PhaseTimes(const std::string& key, size_t i, const std::vector<std::vector<ChildRun>>& runs,
                          const PooledPhases& p);
// The ratio record of variant i to the first at `key`.
nlohmann::json RatioRecord(const CompareArgs& a, const std::string& key, size_t i, const PhasePairs& pp,
                           const PooledPhases& p);
// The table's ratio cells of one variant and record: per phase the median (range) and pairs.
void PrintRatioCells(const PhasePairs& pp, const PooledPhases& p);
// The phases line above the table, and the pairs and unpaired units per variant below it.
void PrintPooledPhases(const PooledPhases& p);
void PrintPairing(const CompareArgs& a, const std::string& key, const std::vector<std::vector<ChildRun>>& runs,
                  const PooledPhases& p);
// The context's memory_phases.
nlohmann::json PooledPhasesJson(const PooledPhases& p);

}  // namespace specsweep
