// Verification of a block of K draft tokens against the target's K+1 logit rows
// (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2).
#pragma once
#include <span>

#include "decoders/sampler.h"

namespace specsweep {

struct Verdict {
  int n_accepted = 0;  // draft tokens kept, a prefix of the draft
  int next = -1;       // the target's token after them (correction or bonus)
};

// Greedy: longest prefix with draft[i] == argmax(target row i), then the target's
// argmax at the first mismatch (or row K when all K match).
// target_logits: [K+1][vocab].
Verdict VerifyGreedy(std::span<const int> draft, std::span<const float> target_logits, int vocab);

// Acceptance rule of speculative sampling. Only Exact is correct; AlwaysAccept exists
// so the distribution test can prove it detects a broken rule.
enum class AcceptRule { Exact, AlwaysAccept };

// Speculative sampling: accept draft[i] with probability min(1, p_i(x)/q_i(x)); on the
// first rejection sample from norm(max(0, p_i - q_i)) over the whole vocabulary; when all
// K are accepted sample the bonus token from p_K. p_i = ComputeProbs(target row i, sp), so
// temperature/top-k/top-p are applied to p exactly as the caller applied them to q.
// draft_probs: [K][vocab] (the q each draft token was sampled from);
// target_logits: [K+1][vocab]. Consumes one Uniform() per examined token plus one draw.
Verdict VerifySampling(std::span<const int> draft, std::span<const float> draft_probs,
                       std::span<const float> target_logits, int vocab, const SamplingParams& sp,
                       Rng& rng, AcceptRule rule = AcceptRule::Exact);

// Speculative sampling for a deterministic draft (prompt lookup, or any proposal that
// is a function of the sequence alone): q_i is one-hot at d_i, and the rule above
// becomes
//   accept d_i with probability min(1, p_i(d_i) / 1) = p_i(d_i);
//   on rejection sample from norm(max(0, p_i - onehot(d_i))) = p_i with d_i removed,
//   i.e. p_i(v) / (1 - p_i(d_i)) for v != d_i.
// Exactness, per position (the prefix before it being fixed):
//   P(emit d_i)      = p_i(d_i)                                          (accepted)
//   P(emit v != d_i) = (1 - p_i(d_i)) * p_i(v) / (1 - p_i(d_i)) = p_i(v)  (rejected, resampled)
// so the emitted token follows p_i; a rejection is impossible when p_i(d_i) = 1. Same
// random draws as VerifySampling given one-hot rows, and the same token for each.
Verdict VerifySamplingOneHot(std::span<const int> draft, std::span<const float> target_logits, int vocab,
                             const SamplingParams& sp, Rng& rng, AcceptRule rule = AcceptRule::Exact);

// Acceptance replay (acceptance_source.h): the step accepts the first `n_accepted` draft
// tokens whatever they are, and the target's token at the next position follows, drawn
// from row n_accepted as the target would draw it (argmax when greedy). So the caches
// hold what a real step with that many acceptances would leave.
// target_logits: [K+1][vocab], n_accepted in [0, K].
Verdict VerifyReplayed(int n_accepted, std::span<const float> target_logits, int vocab, const SamplingParams& sp,
                       Rng& rng);

}  // namespace specsweep
