// Baseline: one prompt Forward, then one token per target Forward.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "decoders/autoregressive.h"
#include "decoders/batch.h"
#include "decoders/common.h"
#include "decoders/sampler.h"
#include "decoders/speculative.h"
#include "base/error.h"
#include "models/forward.h"

namespace specsweep {

ArLane::ArLane(const ModelConfig& c, const DecoderOptions& o, std::span<const int> p, uint64_t seed)
    : prompt(p), cache(c, 0, 0, o.kv_type), rng(seed), first{Clock::now(), 1}, n_seq(static_cast<int>(p.size())) {
  cache.Reserve(static_cast<int>(std::min<int64_t>(c.max_seq_len, int64_t(p.size()) + o.max_new_tokens)));
  res.stats.prompt_tokens = n_seq;
  // No reallocation between tokens (at most the context's room).
  const int64_t room = std::max<int64_t>(0, std::min<int64_t>(o.max_new_tokens, c.max_seq_len - int64_t(p.size())));
  res.tokens.reserve(room);
  forward_times.reserve(room);
}

bool AdvanceAr(ArLane& l, std::span<const float> logits, const DecoderOptions& o, const ModelConfig& c,
               const TokenCallback& cb) {
  GenerationStats& st = l.res.stats;
  if (st.generated_tokens >= o.max_new_tokens || l.n_seq >= c.max_seq_len) return false;
  const auto t0 = Clock::now();
  int tok;
  if (o.sampling.greedy()) {
    tok = Argmax(logits);
  } else {
    ComputeProbs(logits, o.sampling, l.probs);
    tok = SampleFromProbs(l.probs, l.rng);
  }
  st.verify_s += Seconds(t0, Clock::now());
  if (o.stop_at_eos && c.IsStop(tok)) {
    st.stopped_at_eos = true;
    return false;
  }
  l.res.tokens.push_back(tok);
  ++l.n_seq;
  if (++st.generated_tokens == 1) l.first.at = Clock::now();
  if (cb) cb(std::span<const int>(&l.res.tokens.back(), 1));
  // The last token needs no Forward: nothing will be sampled after it.
  return st.generated_tokens < o.max_new_tokens && l.n_seq < c.max_seq_len;
}

// The prefill yields the first token, so it is a target call like every later one
// (mean accepted length: tokens per token-yielding target call, exactly 1 here).
void CountArCall(ArLane& l, std::span<const float> logits, const LoadedModel& target) {
  CheckLogits(logits, target.model->config.vocab_size, target.name, l.n_seq - 1, l.res.stats.target_calls);
  ++l.res.stats.target_calls;
}

void RecordArDecodeCall(ArLane& l, double forward_s) {
  GenerationStats& st = l.res.stats;
  st.verify_s += forward_s;
  st.decode_forward_s += forward_s;
  l.forward_times.push_back(forward_s);
  ++st.decode_forward_calls;
}

GenerationResult FinishAr(ArLane& l, const LoadedModel& target, Clock::time_point start) {
  FinishStats(l.res.stats, start, l.first, l.end);
  if (!l.forward_times.empty()) l.res.stats.decode_forward_median_s = MedianOf(l.forward_times);
  l.res.text = DecodeGenerated(target.tokenizer.get(), l.prompt, l.res.tokens);
  return std::move(l.res);
}

namespace {

class AutoregressiveDecoder : public Decoder {
 public:
  AutoregressiveDecoder(const LoadedModel& target, const DecoderOptions& o, const Runtime& rt)
      : target_(target), opt_(o), rt_(rt) {}
  const DecoderOptions& options() const override { return opt_; }
  CallCosts MeasureCallCosts(std::span<const int> prompt, int target_n_max, int reps, const DecoderState&,
                             int batch) const override {
    CallCosts c;
    // Verification scores every position (all logits), as the speculative loop does.
    if (target_n_max > 0)
      c.target_s =
          TimeForwardCalls(rt_, *target_.model, 0, opt_.kv_type, prompt, target_n_max, reps, true, false, {}, batch);
    return c;
  }

  using Decoder::Generate;
  GenerationResult Generate(std::span<const int> prompt, DecoderState&, const TokenCallback& cb) const override {
    const Model& m = *target_.model;
    CheckPrompt(prompt, m.config.vocab_size, m.config.max_seq_len, target_.name);
    ArLane l(m.config, opt_, prompt, opt_.sampling.seed);
    const auto start = Clock::now();
    l.first = {start, 1};

    auto t0 = Clock::now();
    std::span<const float> logits = Forward(rt_, m, prompt, 0, l.cache, /*all_logits=*/false);  // [1][vocab]
    l.res.stats.prefill_s = Seconds(t0, Clock::now());
    CountArCall(l, logits, target_);
    while (AdvanceAr(l, logits, opt_, m.config, cb)) {
      t0 = Clock::now();
      logits = Forward(rt_, m, std::span<const int>(&l.res.tokens.back(), 1), l.n_seq - 1, l.cache, false);
      RecordArDecodeCall(l, Seconds(t0, Clock::now()));
      CountArCall(l, logits, target_);
    }
    l.end = Clock::now();
    return FinishAr(l, target_, start);
  }
  std::vector<GenerationResult> GenerateBatch(std::span<const std::vector<int>> prompts, DecoderState&,
                                              GenerationStats& aggregate) const override {
    return GenerateAutoregressiveBatch(target_, opt_, rt_, prompts, aggregate);
  }

 private:
  LoadedModel target_;
  DecoderOptions opt_;
  Runtime rt_;
};

}  // namespace

std::unique_ptr<Decoder> MakeAutoregressiveDecoder(const LoadedModel& target, const DecoderOptions& o,
                                                   const Runtime& rt) {
  if (!target.model) Fail("decoder: target: no model loaded");
  if (o.max_new_tokens < 0) Fail("decoder: max_new_tokens: must be >= 0, got {}", o.max_new_tokens);
  ValidateSampling(o.sampling, "decoder");
  return std::make_unique<AutoregressiveDecoder>(target, o, rt);
}

}  // namespace specsweep
