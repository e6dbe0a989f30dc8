// `bench-forward MODEL --vs-generate N`: does generate decode as fast as bench-forward
// says a Forward call takes? Child processes in rounds, the order alternating: `generate
// -n N --no-eos --json --bandwidth` (its decode time per token split into the Forward call
// and the time outside it) and `bench-forward --loop --n 1` at generate's mean context
// position, so both meet the same minutes and, where the read probes agree, the same
// memory phase. Reports per round and medians (ranges) over rounds.
#pragma once
#include <nlohmann/json.hpp>

#include "harness/bench/bench_forward.h"

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
  // Both children's probes within 15% of each other: one memory phase.
  bool SamePhase() const;
};

// The round's readings from generate's --json output and bench-forward's --json file.
GenerateVsForwardRound ReadGenerateVsForward(const nlohmann::json& generate, const nlohmann::json& bench);

// Runs the rounds and prints them and the summary (and writes --json).
void RunGenerateVsForward(const BenchForwardArgs& a);

}  // namespace specsweep
