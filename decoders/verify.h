// Verification of a draft (a chain of K tokens, or a tree of K nodes) against the
// target's K+1 logit rows: Leviathan et al. 2023, Algorithm 1; Chen et al. 2023,
// Algorithm 2; for trees SpecInfer (Miao et al. 2024), Algorithm 2 (multi-step
// speculative sampling). A chain is the tree in which node i's parent is i-1; one walk
// (verify.cpp) serves both.
#pragma once
#include <span>
#include <vector>

#include "decoders/sampler.h"

namespace specsweep {

struct Verdict {
  int n_accepted = 0;     // draft tokens kept: the accepted path's length
  int next = -1;          // the target's token after them (correction or bonus)
  std::vector<int> path;  // [n_accepted] the accepted nodes, root's child first (chain: 0..n-1)
};

// A draft as verification sees it. Node i is token tokens[i], a child of node
// parents[i] < i (-1: of the last accepted token, target row 0); node i's target row is
// i + 1. parents empty: a chain. probs: [K][vocab] the distribution q node i was drawn
// from (siblings drawn i.i.d. from the same q), or empty: the draft is a deterministic
// function of the sequence (q one-hot at each token).
struct DraftView {
  std::span<const int> tokens, parents;
  std::span<const float> probs;
};

// Greedy: from the root, follow the child whose token is the target's argmax at the
// current node, as long as there is one; next = the argmax where it stops. On a chain:
// the longest prefix with draft[i] == argmax(target row i). target_logits: [K+1][vocab].
Verdict VerifyGreedy(const DraftView& draft, std::span<const float> target_logits, int vocab);
inline Verdict VerifyGreedy(std::span<const int> draft, std::span<const float> target_logits, int vocab) {
  return VerifyGreedy(DraftView{draft, {}, {}}, target_logits, vocab);
}

// Acceptance rule of speculative sampling. Only Exact is correct; AlwaysAccept exists
// so the distribution test can prove it detects a broken rule.
enum class AcceptRule { Exact, AlwaysAccept };

// Speculative sampling over a chain or a tree (recursive rejection sampling). At node u
// with target distribution p_u = ComputeProbs(target row u, sp) (temperature/top-k/top-p
// applied to p exactly as the caller applied them to q), its children c_1..c_m in index
// order are tried in turn, r starting at p_u:
//   accept c_j with probability min(1, r(x_j) / q_j(x_j));
//   on rejection r <- norm(max(0, r - q_j)) and try c_{j+1};
// an accepted child becomes u; when every child is rejected (or u is a leaf) the next
// token is drawn from r. Exactness: each trial is one speculative-sampling step whose
// target is the current r and whose draft x_j ~ q_j is independent of the earlier trials
// (siblings i.i.d. from q_u), so its outcome -- x_j, or a draw from the residual, which
// here is the next trial -- is distributed as r; by induction the emitted token follows
// p_u (SpecInfer, Theorem 4.2). On a chain (m = 1) this is Leviathan's rule.
// One-hot q (deterministic drafts: prompt lookup, top-k trees; siblings distinct):
// accept x_j with probability r(x_j) and r <- r without x_j, renormalised, so
//   P(emit x_j) = prod_{i<j}(1 - R_i) * p(x_j) / prod_{i<j}(1 - R_i) = p(x_j),
//   P(emit v not a candidate) = (1 - sum_j p(x_j)) p(v) / (1 - sum_j p(x_j)) = p(v)
// with R_i the mass removed before trial i: sampling without replacement, exact, and a
// rejection is impossible when p(x_j) = 1. Consumes one Uniform() per tried child plus
// one draw; given one-hot rows the general and one-hot forms take the same draws and
// give the same tokens.
Verdict VerifySampling(const DraftView& draft, std::span<const float> target_logits, int vocab,
                       const SamplingParams& sp, Rng& rng, AcceptRule rule = AcceptRule::Exact);
// Chains (draft_probs [K][vocab]; the one-hot form without them).
inline Verdict VerifySampling(std::span<const int> draft, std::span<const float> draft_probs,
                              std::span<const float> target_logits, int vocab, const SamplingParams& sp, Rng& rng,
                              AcceptRule rule = AcceptRule::Exact) {
  return VerifySampling(DraftView{draft, {}, draft_probs}, target_logits, vocab, sp, rng, rule);
}
inline Verdict VerifySamplingOneHot(std::span<const int> draft, std::span<const float> target_logits, int vocab,
                                    const SamplingParams& sp, Rng& rng, AcceptRule rule = AcceptRule::Exact) {
  return VerifySampling(DraftView{draft, {}, {}}, target_logits, vocab, sp, rng, rule);
}

// Acceptance replay (acceptance_source.h): the step accepts the first `n_accepted` draft
// tokens whatever they are, and the target's token at the next position follows, drawn
// from row n_accepted as the target would draw it (argmax when greedy). So the caches
// hold what a real step with that many acceptances would leave.
// target_logits: [K+1][vocab], n_accepted in [0, K].
Verdict VerifyReplayed(int n_accepted, std::span<const float> target_logits, int vocab, const SamplingParams& sp,
                       Rng& rng);
// The same on a tree: the step accepts `path` (node indices, each a child of the one
// before, the first a child of the root), and the target's token follows at the row of
// its last node (row 0 when empty).
Verdict VerifyReplayedPath(std::vector<int> path, std::span<const float> target_logits, int vocab,
                           const SamplingParams& sp, Rng& rng);

}  // namespace specsweep
