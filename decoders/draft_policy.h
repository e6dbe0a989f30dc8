// Draft-length policies: how many tokens to draft in the next step, and when to stop
// drafting early on low draft confidence.
#pragma once
#include <memory>

#include "decoders/decoder.h"

namespace specsweep {

// What to do with the token the draft is about to propose.
enum class DraftAction {
  Keep,         // propose it and keep drafting (up to the step's K)
  KeepAndStop,  // propose it, then stop this step
  DropAndStop,  // do not propose it; stop this step
};

class DraftPolicy {
 public:
  virtual ~DraftPolicy() = default;
  // Upper bound on the tokens to draft in the coming step (before context clipping).
  virtual int NextK() const = 0;
  // Called before proposing draft token number n (1-based) of the step, with the
  // draft's top probability at that position: max of q (sampling mode, after
  // temperature/top-k/top-p) or of the temperature-1 softmax (greedy mode).
  virtual DraftAction OnDraft(int n, float top_prob) { return DraftAction::Keep; }
  // Whether OnDraft reads top_prob: if not, greedy decoding skips computing it (a
  // softmax over the vocabulary per draft call, ~8% of a tiny model's speculative step).
  virtual bool UsesTopProb() const { return false; }
  // Called after verification: `drafted` tokens were proposed, `accepted` kept.
  virtual void Update(int drafted, int accepted) {}
};

// Constant: K every step.
std::unique_ptr<DraftPolicy> MakeConstantPolicy(int k);
// Hugging Face "heuristic" num_assistant_tokens schedule: start at k; after each step
// +2 if every drafted token was accepted, else -1 (never below 1). No upper cap (as HF):
// only the context and max_new_tokens clip it.
std::unique_ptr<DraftPolicy> MakeHeuristicPolicy(int k);
// llama.cpp --draft-p-min: draft up to k tokens; stop (without proposing it) at the first
// token whose draft top probability is below p_min.
std::unique_ptr<DraftPolicy> MakeThresholdPolicy(int k, float p_min);

// ipex-llm speculative.py / Draft&Verify (Zhang et al. 2023) adaptive stop threshold,
// bounded by the point's k (ipex-llm's max_step_draft, 8 there).
//  Drafting: up to max_k tokens; a token is proposed, and drafting stops after it when
//  its top probability < th and at least min(kMinSteps, max_k) tokens were drafted.
//  After each step, with a = accepted / drafted (skipped when nothing was drafted):
//    matchness  = 0.5 * matchness + 0.5 * a                (matchness starts at 0)
//    th_new     = th + 0.01  if matchness < 0.9
//               = th         else if drafted == max_k
//               = th - 0.01  otherwise
//    th         = 0.9 * th + 0.1 * th_new                  (th starts at 0.8)
//  i.e. auto_parameters = [1, 0.5, 0.9, 1e-2, 0.9] of ipex-llm.
class AdaptivePolicy : public DraftPolicy {
 public:
  static constexpr int kMinSteps = 3;
  explicit AdaptivePolicy(int max_k) : max_k_(max_k) {}
  int NextK() const override { return max_k_; }
  DraftAction OnDraft(int n, float top_prob) override;
  bool UsesTopProb() const override { return true; }
  void Update(int drafted, int accepted) override;
  double threshold() const { return th_; }
  double matchness() const { return matchness_; }

 private:
  int max_k_;
  double th_ = 0.8, matchness_ = 0.0;
};

std::unique_ptr<DraftPolicy> MakeDraftPolicy(const DecoderOptions& o);

}  // namespace specsweep
