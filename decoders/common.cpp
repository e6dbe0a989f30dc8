#include "decoders/common.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/error.h"
#include "decoders/sampler.h"
#include "models/forward.h"

namespace specsweep {

void CheckPrompt(std::span<const int> prompt, int vocab_size, int context, const std::string& model) {
  if (prompt.empty()) Fail("{}: prompt: empty (need at least one token, e.g. BOS)", model);
  if (static_cast<int>(prompt.size()) > context)
    Fail("{}: prompt: {} tokens is longer than the context of {}", model, prompt.size(), context);
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab_size)
      Fail("{}: prompt: token {} at position {} outside vocabulary of {}", model, prompt[i], i, vocab_size);
}

std::string DecodeGenerated(const Tokenizer* tok, std::span<const int> prompt, std::span<const int> tokens) {
  if (!tok) return "";
  std::vector<int> all(prompt.begin(), prompt.end());  // [prompt + generated]
  all.insert(all.end(), tokens.begin(), tokens.end());
  const std::string full = tok->Decode(all), head = tok->Decode(prompt);
  if (full.compare(0, head.size(), head) == 0) return full.substr(head.size());
  return tok->Decode(tokens);
}

void CheckLogits(std::span<const float> rows, int vocab, const std::string& model, int position, int step) {
  const int i = FirstNonFinite(rows);
  if (i < 0) return;
  Fail(
      "{}: logits: non-finite value {} at position {} (token id {}), decoding step {}: the forward pass "
      "overflowed or the weights hold NaN/Inf",
      model, rows[i], position + i / vocab, i % vocab, step);
}

std::vector<double> TimeForwardCalls(const Runtime& rt, const Model& model, int layers, KvType kv,
                                     std::span<const int> prompt, int n_max, int reps, bool all_logits, bool tree,
                                     const std::function<double(std::span<const float>)>& work, int batch) {
  const int len = static_cast<int>(prompt.size());
  CheckPrompt(prompt, model.config.vocab_size, model.config.max_seq_len - n_max, "cost model");
  if (batch < 1) Fail("cost model: batch: {} (need at least 1)", batch);
  std::vector<KVCache> caches;  // [batch] each holding the prompt
  caches.reserve(batch);
  for (int b = 0; b < batch; ++b) {
    caches.emplace_back(model.config, layers, len + n_max, kv);
    Forward(rt, model, prompt, 0, caches.back(), false);
  }
  std::vector<int> tokens(n_max);  // [n_max] any valid ids: the prompt's, cycled
  for (int i = 0; i < n_max; ++i) tokens[i] = prompt[i % len];
  const std::vector<int> parents(tree ? n_max : 0, len - 1);  // [n_max] siblings
  std::vector<SequenceCall> calls(batch);                     // [batch] the same n positions each
  std::vector<std::vector<double>> t(n_max);                  // [n_max][reps] seconds
  volatile double sink = 0;
  for (int r = 0; r < reps; ++r)
    for (int j = 0; j < n_max; ++j) {
      const int n = 1 + (j + r) % n_max;  // rotate the order every repetition
      for (int b = 0; b < batch; ++b)
        calls[b] = {std::span<const int>(tokens).first(n), len, &caches[b], all_logits || tree,
                    std::span<const int>(parents).first(tree ? n : 0)};
      const auto t0 = Clock::now();
      // One sequence: Forward itself (ForwardBatch on its cache's scratch).
      for (std::span<const float> l : ForwardBatch(rt, model, calls, caches[0].scratch))
        if (work) sink = sink + work(l);
      t[n - 1].push_back(Seconds(t0, Clock::now()));
      for (KVCache& c : caches) c.Truncate(len);
    }
  std::vector<double> med(n_max);
  for (int n = 0; n < n_max; ++n) med[n] = MedianOf(std::move(t[n]));
  return med;
}

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

void FinishStats(GenerationStats& s, Clock::time_point start, FirstEmission first, Clock::time_point end) {
  s.total_s = Seconds(start, end);
  s.other_s = std::max(0.0, s.total_s - s.prefill_s - s.draft_s - s.verify_s);
  s.first_token_latency_s = s.generated_tokens > 0 ? Seconds(start, first.at) : 0.0;
  const int after_first = s.generated_tokens - std::max(1, first.tokens);
  s.mean_next_token_latency_s = after_first > 0 ? (s.total_s - s.first_token_latency_s) / after_first : 0.0;
  const double decode_s = s.total_s - s.prefill_s;
  s.tokens_per_s = decode_s > 0 ? s.generated_tokens / decode_s : 0.0;
}

void AddStats(GenerationStats& into, const GenerationStats& s) {
  into.prompt_tokens += s.prompt_tokens;
  into.generated_tokens += s.generated_tokens;
  into.target_calls += s.target_calls;
  into.draft_calls += s.draft_calls;
  into.drafted += s.drafted;
  into.accepted += s.accepted;
  for (auto [to, from] :
       {std::pair{&into.drafted_at_pos, &s.drafted_at_pos}, std::pair{&into.accepted_at_pos, &s.accepted_at_pos},
        std::pair{&into.draft_calls_by_size, &s.draft_calls_by_size},
        std::pair{&into.draft_tree_calls_by_size, &s.draft_tree_calls_by_size}}) {
    if (to->size() < from->size()) to->resize(from->size());
    for (size_t i = 0; i < from->size(); ++i) (*to)[i] += (*from)[i];
  }
  into.k_per_step.insert(into.k_per_step.end(), s.k_per_step.begin(), s.k_per_step.end());
  into.accepted_per_step.insert(into.accepted_per_step.end(), s.accepted_per_step.begin(), s.accepted_per_step.end());
  into.tree_per_step.insert(into.tree_per_step.end(), s.tree_per_step.begin(), s.tree_per_step.end());
  into.prefill_s += s.prefill_s;
  into.draft_s += s.draft_s;
  into.verify_s += s.verify_s;
  into.other_s += s.other_s;
  into.retokenize_s += s.retokenize_s;
  into.decode_forward_calls += s.decode_forward_calls;
  into.decode_forward_s += s.decode_forward_s;
  into.total_s += s.total_s;
}

}  // namespace specsweep
