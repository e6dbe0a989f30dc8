// The autoregressive loop's parts (autoregressive.cpp): one sequence's state and step,
// which Generate runs alone and GenerateBatch (autoregressive_batch.cpp) for B sequences
// in lockstep. Internal to decoders/.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "decoders/common.h"
#include "decoders/decoder.h"
#include "decoders/rng.h"
#include "models/kv_cache.h"

namespace specsweep {

// One sequence's generation: its cache, random source, result and decode call times.
struct ArLane {
  ArLane(const ModelConfig& c, const DecoderOptions& o, std::span<const int> prompt, uint64_t seed);
  std::span<const int> prompt;
  KVCache cache;
  Rng rng;
  GenerationResult res;
  FirstEmission first;
  Clock::time_point end;              // when it left the batch
  int n_seq = 0;                      // positions of the sequence (prompt + generated)
  std::vector<float> probs;           // [vocab] sampling
  std::vector<double> forward_times;  // [decode calls] seconds
};

// The next token from the logits at the sequence's end (greedy, or drawn from l.rng),
// emitted unless it is a stop token (EOS). True when the sequence goes on: the token
// needs a Forward (max_new_tokens and the context not reached).
bool AdvanceAr(ArLane& l, std::span<const float> logits, const DecoderOptions& o, const ModelConfig& c,
               const TokenCallback& cb);
// A target call's rows at the sequence's last position, checked; the call counted.
void CountArCall(ArLane& l, std::span<const float> logits, const LoadedModel& target);
// A decode call (after the prefill) of forward_s seconds.
void RecordArDecodeCall(ArLane& l, double forward_s);
// The result: FinishStats on the clock started at `start`, the median decode call, the text.
GenerationResult FinishAr(ArLane& l, const LoadedModel& target, Clock::time_point start);

// GenerateBatch of the autoregressive decoder (autoregressive_batch.cpp).
std::vector<GenerationResult> GenerateAutoregressiveBatch(const LoadedModel& target, const DecoderOptions& o,
                                                          const Runtime& rt, std::span<const std::vector<int>> prompts,
                                                          GenerationStats& aggregate);

}  // namespace specsweep
