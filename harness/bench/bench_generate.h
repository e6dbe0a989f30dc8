// `bench-forward MODEL --vs-generate N`: does generate decode as fast as bench-forward
// says a Forward call takes? Child processes in rounds, the order alternating: `generate
// -n N --no-eos --json --bandwidth` (its decode time per token split into the Forward call
// and the time outside it) and `bench-forward --loop --n 1` at generate's mean context
// position, so both meet the same minutes. Reports per round and medians (ranges) over all
// rounds and over the rounds of each memory phase, split over all rounds' probe readings.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench/bench_forward.h"
#include "harness/bench/memory_phase.h"

namespace specsweep {

// One round's readings of the two children.
struct GenerateVsForwardRound {
  bool generate_first = true;
  int prompt_tokens = 0, forward_calls = 0, bench_ctx = 0;
  double forward_ms = 0, outside_ms = 0, total_ms = 0;  // generate, per decode token
  double forward_median_ms = 0;                         // generate's median Forward call
  double bw_before = 0, bw_after = 0;                   // generate's probe, GB/s
  double ready_s = 0;                                   // generate's start-up
  double t1_ms = 0, bw_during = 0, load_s = 0;          // bench-forward --loop T(1)
  std::vector<double> bench_readings;                   // bench-forward's probe readings around its repetitions
  // Every probe reading of the round (generate's and bench-forward's).
  std::vector<double> Readings() const;
};

// The round's memory phase under the split of all rounds' readings (memory_phase.h): the
// phase all its readings fall in; kMixed when they fall in two or, under one phase, when
// they differ by kPhaseGapRatio or more (a round spans two processes and ~10 s: readings
// spread without a clear gap still say the bandwidth changed within it).
MemoryPhase RoundPhase(const GenerateVsForwardRound& r, const PhaseSplit& s);

// The round's readings from generate's --json output and bench-forward's --json file.
GenerateVsForwardRound ReadGenerateVsForward(const nlohmann::json& generate, const nlohmann::json& bench);

// Runs the rounds and prints them and the summary (and writes --json).
void RunGenerateVsForward(const BenchForwardArgs& a);

}  // namespace specsweep
