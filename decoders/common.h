// Helpers shared by the autoregressive and speculative decoders.
#pragma once
#include <chrono>
#include <span>
#include <string>

#include "decoders/decoder.h"

namespace specsweep {

using Clock = std::chrono::steady_clock;
inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Throws Error unless 1 <= prompt.size() <= context and every id is in the vocabulary.
void CheckPrompt(std::span<const int> prompt, int vocab_size, int context, const std::string& model);

// Generated text: Decode(prompt + tokens) minus Decode(prompt) when the latter is a
// prefix (keeps SentencePiece's leading space right), else Decode(tokens); "" without
// a tokenizer (synthetic models).
std::string DecodeGenerated(const Tokenizer* tok, std::span<const int> prompt, std::span<const int> tokens);

// Fills total/other/latency/throughput fields from the timers already set.
void FinishStats(GenerationStats& s, Clock::time_point start, Clock::time_point first_token,
                 Clock::time_point end);

}  // namespace specsweep
