// Baseline: one prompt Forward, then one token per target Forward.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "decoders/common.h"
#include "decoders/sampler.h"
#include "decoders/speculative.h"
#include "base/error.h"
#include "models/forward.h"

namespace specsweep {
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
    const ModelConfig& c = m.config;
    CheckPrompt(prompt, c.vocab_size, c.max_seq_len, target_.name);
    GenerationResult res;
    GenerationStats& st = res.stats;
    st.prompt_tokens = static_cast<int>(prompt.size());
    Rng rng(opt_.sampling.seed);
    KVCache cache(c, 0, 0, opt_.kv_type);
    cache.Reserve(static_cast<int>(std::min<int64_t>(c.max_seq_len, int64_t(prompt.size()) + opt_.max_new_tokens)));
    std::vector<float> probs;  // [vocab]
    // No reallocation between tokens (at most the context's room).
    const int64_t room =
        std::max<int64_t>(0, std::min<int64_t>(opt_.max_new_tokens, c.max_seq_len - int64_t(prompt.size())));
    res.tokens.reserve(room);
    std::vector<double> forward_times;  // [decode calls] seconds
    forward_times.reserve(room);
    const auto start = Clock::now();
    FirstEmission first{start, 1};

    auto t0 = Clock::now();
    std::span<const float> logits = Forward(rt_, m, prompt, 0, cache, /*all_logits=*/false);  // [1][vocab]
    st.prefill_s = Seconds(t0, Clock::now());
    int n_seq = static_cast<int>(prompt.size());
    // The prefill yields the first token, so it is a target call like every later one
    // (mean accepted length: tokens per token-yielding target call, exactly 1 here).
    CheckLogits(logits, c.vocab_size, target_.name, n_seq - 1, st.target_calls);
    ++st.target_calls;
    while (st.generated_tokens < opt_.max_new_tokens && n_seq < c.max_seq_len) {
      t0 = Clock::now();
      int tok;
      if (opt_.sampling.greedy()) {
        tok = Argmax(logits);
      } else {
        ComputeProbs(logits, opt_.sampling, probs);
        tok = SampleFromProbs(probs, rng);
      }
      st.verify_s += Seconds(t0, Clock::now());
      if (opt_.stop_at_eos && c.IsStop(tok)) {
        st.stopped_at_eos = true;
        break;
      }
      res.tokens.push_back(tok);
      ++n_seq;
      if (++st.generated_tokens == 1) first.at = Clock::now();
      if (cb) cb(std::span<const int>(&res.tokens.back(), 1));
      // The last token needs no Forward: nothing will be sampled after it.
      if (st.generated_tokens == opt_.max_new_tokens || n_seq == c.max_seq_len) break;
      t0 = Clock::now();
      logits = Forward(rt_, m, std::span<const int>(&res.tokens.back(), 1), n_seq - 1, cache, false);
      const double forward_s = Seconds(t0, Clock::now());
      st.verify_s += forward_s;
      st.decode_forward_s += forward_s;
      forward_times.push_back(forward_s);
      ++st.decode_forward_calls;
      CheckLogits(logits, c.vocab_size, target_.name, n_seq - 1, st.target_calls);
      ++st.target_calls;
    }
    FinishStats(st, start, first, Clock::now());
    if (!forward_times.empty()) {
      std::nth_element(forward_times.begin(), forward_times.begin() + forward_times.size() / 2, forward_times.end());
      st.decode_forward_median_s = forward_times[forward_times.size() / 2];
    }
    res.text = DecodeGenerated(target_.tokenizer.get(), prompt, res.tokens);
    return res;
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
