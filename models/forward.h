// The one forward contract every decoder uses.
#pragma once
#include <span>
#include <vector>

#include "models/kv_cache.h"
#include "models/model.h"
#include "quant/runtime.h"

namespace specsweep {

// Runs tokens[n] at positions start_pos .. start_pos+n-1 through the first
// cache.n_layers() blocks, appending their keys/values to the cache, on rt's threads
// (ForwardTeamSize) and kernels.
// Requires cache.length() == start_pos (Truncate first to roll back).
// Returns logits [n][vocab] (all_logits) or [1][vocab] for the last position only,
// in cache-owned scratch valid until the next call on that cache.
// A position's logits are bit-identical whatever n and the thread count.
// Token trees (SpecInfer's tree attention): with `parents` [n], token i goes to cache slot
// start_pos + i as a child of slot parents[i] (the slot before the tree, or an earlier
// tree node, of this call or an earlier one); its position is its depth below the tree
// and it attends to the sequence before the tree and its own ancestors only
// (KVCache::AddTreeNodes). Its logits are bit-identical to those of its path run as a
// sequence. A cache holding a tree takes only tree calls (parents empty: a chain
// continuing the last node) until KeepPath or Truncate makes it a sequence again.
std::span<const float> Forward(const Runtime& rt, const Model& model, std::span<const int> tokens, int start_pos,
                               KVCache& cache, bool all_logits = true, std::span<const int> parents = {});

// One sequence's part of a batched call (ForwardBatch): its tokens at start_pos..,
// its own cache (caller-owned, distinct per sequence), as Forward's arguments.
struct SequenceCall {
  std::span<const int> tokens;
  int start_pos = 0;
  KVCache* cache = nullptr;
  bool all_logits = true;
  std::span<const int> parents = {};
};

// B independent sequences in one pass: the matrix products see the rows of every
// sequence at once (sum of n_i rows), attention runs per sequence over its own cache.
// Each sequence's logits ([n_i][vocab], or [1][vocab] without all_logits) are
// bit-identical to those of the same call alone through Forward, on every kernel
// family and thread count. Returns them in call order, in `scratch` (caller-owned),
// valid until its next use. Forward is ForwardBatch of one sequence on its cache's scratch.
std::vector<std::span<const float>> ForwardBatch(const Runtime& rt, const Model& model,
                                                 std::span<const SequenceCall> calls, KVCache::Scratch& scratch);

// Multiply-adds of one layer per call (n x the layer's product sizes + attention)
// from which a team is used under TeamPolicy::kAuto (quant/runtime.h).
inline constexpr double kTeamLayerMacs = 4e6;
// Threads Forward uses for n positions after start_pos under rt's policy, at most rt.threads.
int ForwardTeamSize(const Runtime& rt, const Model& model, int n, int start_pos);

}  // namespace specsweep
