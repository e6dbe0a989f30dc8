#include "decoders/verifier.h"

#include <algorithm>

namespace specsweep {
namespace {

DraftView View(const DraftBlock& d) { return DraftView{d.tokens, d.parents, d.probs}; }

class GreedyVerifier : public Verifier {
 public:
  explicit GreedyVerifier(int vocab) : vocab_(vocab) {}
  Verdict Verify(const StepToVerify& s) const override { return VerifyGreedy(View(s.draft), s.target_logits, vocab_); }

 private:
  int vocab_;
};

class SamplingVerifier : public Verifier {
 public:
  SamplingVerifier(int vocab, const SamplingParams& sp, AcceptRule rule) : vocab_(vocab), sp_(sp), rule_(rule) {}
  Verdict Verify(const StepToVerify& s) const override {
    return VerifySampling(View(s.draft), s.target_logits, vocab_, sp_, s.rng, rule_);
  }

 private:
  int vocab_;
  SamplingParams sp_;
  AcceptRule rule_;
};

// Replay along a chain: the first Accepted(kd) draft tokens.
class ReplayedChainVerifier : public Verifier {
 public:
  ReplayedChainVerifier(int vocab, const SamplingParams& sp) : vocab_(vocab), sp_(sp) {}
  Verdict Verify(const StepToVerify& s) const override {
    const int kd = static_cast<int>(s.draft.tokens.size());
    return VerifyReplayed(s.replay->Accepted(kd), s.target_logits, vocab_, sp_, s.rng);
  }

 private:
  int vocab_;
  SamplingParams sp_;
};

// Replay on a model's token tree: the recorded path, or the first-child path, cut at the
// replayed count (an empty draft: the same as a chain's, no token accepted).
class ReplayedTreeVerifier : public Verifier {
 public:
  ReplayedTreeVerifier(int vocab, const SamplingParams& sp) : vocab_(vocab), sp_(sp) {}
  Verdict Verify(const StepToVerify& s) const override {
    return VerifyReplayedPath(ReplayedPath(s.draft, s.recorded, *s.replay), s.target_logits, vocab_, sp_, s.rng);
  }

 private:
  int vocab_;
  SamplingParams sp_;
};

}  // namespace

std::vector<int> ReplayedPath(const DraftBlock& d, const TreeStep* recorded, AcceptanceReplay& replay) {
  const int kd = static_cast<int>(d.tokens.size());
  std::vector<int> path;
  if (recorded) {
    for (int i : recorded->path)
      if (i < kd) path.push_back(i);
  } else {
    for (int u = -1;;) {
      const auto c = std::find(d.parents.begin(), d.parents.end(), u);
      if (c == d.parents.end()) break;
      path.push_back(u = static_cast<int>(c - d.parents.begin()));
    }
  }
  path.resize(std::min<size_t>(path.size(), replay.Accepted(static_cast<int>(path.size()))));
  return path;
}

// A replayed source on a tree draft is a model's tree (ValidateSpeculativeOptions), whose
// every non-empty step is a tree.
std::unique_ptr<Verifier> MakeVerifier(const DecoderOptions& o, int vocab, AcceptRule rule) {
  if (o.acceptance_source.replayed() && o.draft.IsTree())
    return std::make_unique<ReplayedTreeVerifier>(vocab, o.sampling);
  if (o.acceptance_source.replayed()) return std::make_unique<ReplayedChainVerifier>(vocab, o.sampling);
  if (o.sampling.greedy()) return std::make_unique<GreedyVerifier>(vocab);
  return std::make_unique<SamplingVerifier>(vocab, o.sampling, rule);
}

}  // namespace specsweep
