// Token trees proposed by a draft model (SpecInfer/Sequoia static trees, EAGLE-2
// dynamic trees) and by lookup (every matching continuation merged into a trie).
#pragma once
#include <span>
#include <vector>

#include "decoders/drafter.h"
#include "models/forward.h"

namespace specsweep {

// The shape of a draft tree. branching non-empty: static, node count at depth d the
// product of branching[0..d]; budget > 0: dynamic, the `budget` nodes of highest
// cumulative draft probability. Both empty: a chain.
struct TreeShape {
  std::vector<int> branching;  // children per node at depth 1, 2, ... (e.g. 4,2,2,1)
  int budget = 0;              // dynamic tree: nodes kept
  bool is_tree() const { return !branching.empty() || budget > 0; }
};

// Children each node of a dynamic tree is expanded with, and how many of the best new
// nodes are expanded at the next depth (EAGLE-2's top-k; its paper uses 10 at budgets of
// 60; 4 suits the budgets of at most ~32 a CPU verifies cheaply).
inline constexpr int kDynamicTopK = 4;

// Grows a tree with `model` below the last token of seq, into `out` (tokens, parents;
// probs in sampling mode), at most k nodes. The cache holds seq's first cache.length()
// tokens; it catches up on the rest, adds the tree's nodes level by level (one Forward
// per depth with the tree mask) and is truncated back to |seq| at the end.
//   static greedy: each node's children are the draft's top-b tokens (b = branching at
//     its depth), distinct, q one-hot (probs left empty);
//   static sampling: b children drawn i.i.d. from the node's q (SpecInfer's expansion),
//     probs [n][vocab] each child's q, for multi-step speculative sampling;
//   dynamic (EAGLE-2): every expanded node gets its top-kDynamicTopK children scored by
//     cumulative draft probability; the kDynamicTopK best new nodes are expanded at the
//     next depth; growth stops when no frontier node can beat the budget-th best score;
//     the `budget` best nodes are kept (a child never outscores its parent, so they form
//     a tree). Deterministic given seq: probs empty in both modes.
void ProposeModelTree(const Model& model, KVCache& cache, std::span<const int> seq, int k, const TreeShape& shape,
                      const SamplingParams& sampling, Rng& rng, DraftBlock& out, GenerationStats& st);

// Prompt lookup as a tree: every earlier occurrence of seq's longest recurring suffix
// n-gram (n = max_ngram down to min_ngram; most recent first) contributes the tokens that
// followed it, merged breadth first into a trie of at most k nodes. parents empty when
// the trie is a chain. Deterministic: q one-hot.
void LookupTree(std::span<const int> seq, int k, int max_ngram, int min_ngram, DraftBlock& out);

}  // namespace specsweep
