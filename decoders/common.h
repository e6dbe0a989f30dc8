// Helpers shared by the autoregressive and speculative decoders.
#pragma once
#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "decoders/decoder.h"

namespace specsweep {

using Clock = std::chrono::steady_clock;
inline double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Adds s's counts, times and per-position arrays into `into` and appends its steps;
// the derived rates and latencies are left for the caller (pooled runs, conversations).
void AddStats(GenerationStats& into, const GenerationStats& s);

// Throws Error unless 1 <= prompt.size() <= context and every id is in the vocabulary.
void CheckPrompt(std::span<const int> prompt, int vocab_size, int context, const std::string& model);

// Throws Error naming the model, the position and the decoding step when a row of
// logits holds a NaN or infinity (a forward pass that overflowed, weights that hold
// them): a token picked from such a row, and any acceptance measured with it, is garbage.
// rows: [n][vocab]; position: the sequence position of row 0; step: target calls so far.
void CheckLogits(std::span<const float> rows, int vocab, const std::string& model, int position, int step);

// Generated text: Decode(prompt + tokens) minus Decode(prompt) when the latter is a
// prefix (keeps SentencePiece's leading space right), else Decode(tokens); "" without
// a tokenizer (synthetic models).
std::string DecodeGenerated(const Tokenizer* tok, std::span<const int> prompt, std::span<const int> tokens);

// Median time of `reps` Forward calls of n = 1..n_max positions of `model` (its first
// `layers` blocks; 0: all) right after `prompt` was prefilled: [n_max] seconds. Calls of
// different n alternate, so a slow spell hits them alike. tree: the n positions are tree
// nodes below the prompt's last token (siblings, every node's logits), as a draft tree's
// calls run them. `work`, when given, runs on each call's logits inside the timing (the
// drafter's own work on the rows a call returns; its result only keeps it from being
// optimised away). batch > 1: each call runs `batch` copies of the prompt's sequence
// with n positions each in one ForwardBatch (T(B x n)); `work` then sees each one's rows.
std::vector<double> TimeForwardCalls(const Runtime& rt, const Model& model, int layers, KvType kv,
                                     std::span<const int> prompt, int n_max, int reps, bool all_logits,
                                     bool tree = false, const std::function<double(std::span<const float>)>& work = {},
                                     int batch = 1);

// Median of a sample (the upper of the two middle values for an even count; 0 for none).
double MedianOf(std::vector<double> v);

// When the first new tokens came out and how many came together (a speculative step's first
// verify emits its accepted drafts with the first token).
struct FirstEmission {
  Clock::time_point at;
  int tokens = 0;
};

// Fills total/other/latency/throughput fields from the timers already set. The next-token
// latency is the time after the first emission over the tokens after it: the tokens that
// came with the first one took no time after it, so counting them would credit the first
// step's accepted drafts to the decode without its time.
void FinishStats(GenerationStats& s, Clock::time_point start, FirstEmission first, Clock::time_point end);

}  // namespace specsweep
