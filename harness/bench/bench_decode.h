// bench-forward's decode-loop mode: the plain autoregressive loop against speculative
// loops whose draft is the target itself (same weights, its own cache), so greedy
// acceptance is 1.0 and the time per emitted token shows only what a speculative step
// costs beyond its Forward work (the draft and verify calls' per-call overhead).
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "models/loader.h"
#include "quant/runtime.h"

namespace specsweep {

// Runs, in rotating order within each of `reps` repetitions (after one warm-up round),
// greedy generation of `tokens` tokens from `prompt` with the AR decoder and with the
// same-weights speculative decoder at each K in ks. Prints time per emitted token, the
// per-repetition ratio to AR (median, range) and the mean accepted length; appends one
// record per decoder to `records`.
void RunDecodeLoopBench(const Runtime& rt, const LoadedModel& target, const std::vector<int>& prompt,
                        const std::vector<int>& ks, int tokens, int reps, nlohmann::json& records);

}  // namespace specsweep
