#include "decoders/verify.h"

#include <algorithm>
#include <vector>

#include "base/error.h"

namespace specsweep {
namespace {

void CheckShapes(std::span<const int> draft, std::span<const float> target_logits, int vocab) {
  const size_t rows = draft.size() + 1;
  if (target_logits.size() < rows * vocab)
    Fail("verify: target_logits: {} values, need [{}][{}]", target_logits.size(), rows, vocab);
  for (int t : draft)
    if (t < 0 || t >= vocab) Fail("verify: draft: token {} outside vocabulary of {}", t, vocab);
}

}  // namespace

Verdict VerifyGreedy(std::span<const int> draft, std::span<const float> target_logits, int vocab) {
  CheckShapes(draft, target_logits, vocab);
  const int k = static_cast<int>(draft.size());
  for (int i = 0; i <= k; ++i) {
    const int best = Argmax(target_logits.subspan(static_cast<size_t>(i) * vocab, vocab));
    if (i == k || draft[i] != best) return {i, best};
  }
  return {};  // unreachable: the loop returns at i == k
}

Verdict VerifySampling(std::span<const int> draft, std::span<const float> draft_probs,
                       std::span<const float> target_logits, int vocab, const SamplingParams& sp,
                       Rng& rng, AcceptRule rule) {
  CheckShapes(draft, target_logits, vocab);
  const int k = static_cast<int>(draft.size());
  if (draft_probs.size() < static_cast<size_t>(k) * vocab)
    Fail("verify: draft_probs: {} values, need [{}][{}]", draft_probs.size(), k, vocab);
  std::vector<float> p;  // [vocab] target distribution at the current row
  for (int i = 0; i < k; ++i) {
    ComputeProbs(target_logits.subspan(static_cast<size_t>(i) * vocab, vocab), sp, p);
    std::span<const float> q = draft_probs.subspan(static_cast<size_t>(i) * vocab, vocab);
    const int x = draft[i];
    // u < p/q written as u*q < p: no division, and q(x) > 0 since x was drawn from q.
    const bool accept = rule == AcceptRule::AlwaysAccept ||
                        rng.Uniform() * static_cast<double>(q[x]) < static_cast<double>(p[x]);
    if (accept) continue;
    // Residual distribution max(0, p - q); it has mass whenever a rejection is possible
    // (p(x) < q(x) implies some other token has p > q).
    std::vector<float> r(vocab);  // [vocab]
    double mass = 0.0;
    for (int v = 0; v < vocab; ++v) mass += r[v] = std::max(0.0f, p[v] - q[v]);
    return {i, SampleFromProbs(mass > 0.0 ? std::span<const float>(r) : std::span<const float>(p), rng)};
  }
  ComputeProbs(target_logits.subspan(static_cast<size_t>(k) * vocab, vocab), sp, p);
  return {k, SampleFromProbs(p, rng)};
}

Verdict VerifySamplingOneHot(std::span<const int> draft, std::span<const float> target_logits, int vocab,
                             const SamplingParams& sp, Rng& rng, AcceptRule rule) {
  CheckShapes(draft, target_logits, vocab);
  const int k = static_cast<int>(draft.size());
  std::vector<float> p;  // [vocab] target distribution at the current row
  for (int i = 0; i < k; ++i) {
    ComputeProbs(target_logits.subspan(static_cast<size_t>(i) * vocab, vocab), sp, p);
    const int x = draft[i];
    if (rule == AcceptRule::AlwaysAccept || rng.Uniform() < static_cast<double>(p[x])) continue;
    p[x] = 0.0f;  // the residual: p without the draft token (SampleFromProbs renormalises)
    return {i, SampleFromProbs(p, rng)};
  }
  ComputeProbs(target_logits.subspan(static_cast<size_t>(k) * vocab, vocab), sp, p);
  return {k, SampleFromProbs(p, rng)};
}

Verdict VerifyReplayed(int n_accepted, std::span<const float> target_logits, int vocab, const SamplingParams& sp,
                       Rng& rng) {
  if (n_accepted < 0 || target_logits.size() < (static_cast<size_t>(n_accepted) + 1) * vocab)
    Fail("verify: replayed: {} accepted tokens, but target_logits has {} values of [K+1][{}]", n_accepted,
         target_logits.size(), vocab);
  std::span<const float> row = target_logits.subspan(static_cast<size_t>(n_accepted) * vocab, vocab);
  if (sp.greedy()) return {n_accepted, Argmax(row)};
  std::vector<float> p;  // [vocab]
  ComputeProbs(row, sp, p);
  return {n_accepted, SampleFromProbs(p, rng)};
}

}  // namespace specsweep
