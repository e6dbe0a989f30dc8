#include "decoders/draft_policy.h"

#include <algorithm>

#include "base/error.h"

namespace specsweep {
namespace {

class ConstantPolicy : public DraftPolicy {
 public:
  explicit ConstantPolicy(int k) : k_(k) {}
  int NextK() const override { return k_; }

 private:
  int k_;
};

class HeuristicPolicy : public DraftPolicy {
 public:
  explicit HeuristicPolicy(int k) : k_(k) {}
  int NextK() const override { return k_; }
  void Update(int drafted, int accepted) override {
    // HF compares with num_assistant_tokens; we compare with what was actually drafted,
    // which differs only when context clipping shortened the step.
    if (drafted > 0 && accepted == drafted)
      k_ += 2;
    else
      k_ = std::max(1, k_ - 1);
  }

 private:
  int k_;
};

class ThresholdPolicy : public DraftPolicy {
 public:
  ThresholdPolicy(int k, float p_min) : k_(k), p_min_(p_min) {}
  int NextK() const override { return k_; }
  bool UsesTopProb() const override { return true; }
  DraftAction OnDraft(int, float top_prob) override {
    return top_prob < p_min_ ? DraftAction::DropAndStop : DraftAction::Keep;
  }

 private:
  int k_;
  float p_min_;
};

}  // namespace

DraftAction AdaptivePolicy::OnDraft(int n, float top_prob) {
  return (top_prob < th_ && n >= std::min(kMinSteps, max_k_)) ? DraftAction::KeepAndStop : DraftAction::Keep;
}

void AdaptivePolicy::Update(int drafted, int accepted) {
  if (drafted <= 0) return;
  matchness_ = 0.5 * matchness_ + 0.5 * (static_cast<double>(accepted) / drafted);
  double th_new = th_;
  if (matchness_ < 0.9)
    th_new = th_ + 0.01;
  else if (drafted != max_k_)
    th_new = th_ - 0.01;
  th_ = 0.9 * th_ + 0.1 * th_new;
}

std::unique_ptr<DraftPolicy> MakeConstantPolicy(int k) { return std::make_unique<ConstantPolicy>(k); }
std::unique_ptr<DraftPolicy> MakeHeuristicPolicy(int k) { return std::make_unique<HeuristicPolicy>(k); }
std::unique_ptr<DraftPolicy> MakeThresholdPolicy(int k, float p_min) {
  return std::make_unique<ThresholdPolicy>(k, p_min);
}

std::unique_ptr<DraftPolicy> MakeDraftPolicy(const DecoderOptions& o) {
  switch (o.k_policy) {
    case KPolicy::Constant: return MakeConstantPolicy(o.k);
    case KPolicy::Heuristic: return MakeHeuristicPolicy(o.k);
    case KPolicy::Threshold: return MakeThresholdPolicy(o.k, o.draft_p_min);
    case KPolicy::Adaptive: return std::make_unique<AdaptivePolicy>(o.k);
  }
  Fail("decoder: k_policy: unknown value {}", static_cast<int>(o.k_policy));
}

}  // namespace specsweep
