// Token trees proposed by a draft model (SpecInfer/Sequoia static trees, EAGLE-2
// dynamic trees) and by lookup (every matching continuation merged into a trie).
#pragma once
#include <array>
#include <memory>
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

// A dynamic tree ranks nodes by the probability that verification accepts them (EAGLE-2's
// premise: its draft's confidence tracks the acceptance rate). Sampling: the draft's q at
// the sampling settings, its estimate of the target's p, which is what the one-hot rule
// accepts with. Greedy: the probability that the node is the target's argmax, which the
// draft's raw softmax understates (ranked by it, a q4_0 self-draft's tree fell below its
// own chain; docs/trees.md). Modelled as softmax(logits / tau), tau
// the maximum-likelihood fit over the steps of this generation (the target's token after
// each step's root is what the next step's sequence holds); 1 before the first.
struct TreeCalibration {
  static constexpr std::array<double, 10> kTaus = {0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5};
  std::array<double, kTaus.size()> loglik{};  // summed log softmax(row / tau)[target's token]
  int observed = 0;
  std::vector<float> row;  // [vocab] the draft's logits at the last step's root
  int row_pos = -1;        // that root's index in the sequence (-1: none)
  void Reset() { *this = TreeCalibration{}; }
  double Tau() const;
  // seq continues past the last root: its next token is the target's argmax there.
  void Learn(std::span<const int> seq);
  // One observation: the target's token t after a root whose draft logits are r.
  void Observe(std::span<const float> r, int t);
};

// The work a tree drafter does on one node's draft logits `row` (a node at `depth`, 0:
// the root): its candidate children `tokens` in rank order -- static greedy the top-b,
// dynamic the top kDynamicTopK with each one's chance of acceptance `pr` (at `tau` when
// greedy) -- or, for a static tree in sampling mode, q = the row's distribution, from
// which the caller draws the b children i.i.d. (tokens empty).
void NodeCandidates(std::span<const float> row, const TreeShape& shape, int depth, const SamplingParams& sampling,
                    double tau, std::vector<float>& q, std::vector<int>& tokens, std::vector<double>& pr);
// The cost model's copy of a model tree's per-node work on the rows [n][vocab] a draft
// call returned: NodeCandidates on each (and the i.i.d. draws), for `root` (a step's
// catch-up row) also a greedy dynamic tree's calibration update. Returns a value that
// depends on all of it, so that the timed work is not optimised away.
double TreeRowsWork(std::span<const float> rows, int vocab, bool root, const TreeShape& shape,
                    const SamplingParams& sampling, double tau);

// A draft model's token tree, as built: the model, the tree's shape and the sampling
// settings. (A ModelDrafter with a chain shape holds one too.)
struct TreeDraft {
  const Model& model;
  TreeShape shape;
  SamplingParams sampling;
  Runtime rt;  // the draft's Forward calls run on it
};

// A draft model's state through a run (ModelDrafter's DraftState): its cache -- a prefix
// of the sequence, then a step's tree until the step's Rollback -- the token of each
// tree slot, a greedy dynamic tree's calibration, and the chain's scratch q.
struct ModelDraftState : DraftState {
  std::unique_ptr<KVCache> cache;
  std::vector<int> tree_tokens;  // the token of each tree slot of cache (trees only)
  TreeCalibration calibration;   // greedy dynamic trees
  std::vector<float> q;          // [vocab]
};

// Grows a tree of `t` below the last token of r.seq into `out` (tokens, parents, ranks,
// expanded; probs in sampling mode), at most r.k nodes: the shape's static or dynamic
// tree, or with r.recorded (acceptance replay of a tree trace) the recorded tree (at most
// r.k nodes: ClipTree cuts a larger one) grown with the recorded draft calls. The cache
// holds a prefix of seq: the rest is caught up, then the tree's nodes are added level by
// level (one Forward per depth with the tree mask) and left in the cache for RollbackTree.
void ProposeModelTree(const TreeDraft& t, ModelDraftState& s, const DraftRequest& r, Rng& rng, DraftBlock& out,
                      GenerationStats& st);
// After verification: keeps the path of the cached tree that seq follows (the accepted
// tokens), drops the rest of the tree; nothing without one.
void RollbackTree(ModelDraftState& s, std::span<const int> seq);

// A recorded tree cut to its first k nodes as its drafter would cut it under that cap
// (the loop clips K near the context end and max_new_tokens): a static tree keeps the
// nodes it grows first (`grown_order`); a dynamic tree keeps its best, which the trace
// does not rank, so the accepted path's nodes first, then the others in grown order.
// The accepted path keeps its nodes that remain.
TreeStep ClipTree(const TreeStep& t, int k, bool grown_order);

// Prompt lookup as a tree: every earlier occurrence of seq's longest recurring suffix
// n-gram (n = max_ngram down to min_ngram; most recent first) contributes the tokens that
// followed it, merged breadth first into a trie of at most k nodes. parents empty when
// the trie is a chain. Deterministic: q one-hot.
void LookupTree(std::span<const int> seq, int k, int max_ngram, int min_ngram, DraftBlock& out);

}  // namespace specsweep
