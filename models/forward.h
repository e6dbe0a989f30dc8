// The one forward contract every decoder uses.
#pragma once
#include <span>

#include "models/kv_cache.h"
#include "models/model.h"

namespace specsweep {

// Runs tokens[n] at positions start_pos .. start_pos+n-1 through the first
// cache.n_layers() blocks, appending their keys/values to the cache.
// Requires cache.length() == start_pos (Truncate first to roll back).
// Returns logits [n][vocab] (all_logits) or [1][vocab] for the last position only,
// in cache-owned scratch valid until the next call on that cache.
// A position's logits are bit-identical whatever n and the thread count.
std::span<const float> Forward(const Model& model, std::span<const int> tokens, int start_pos,
                               KVCache& cache, bool all_logits = true);

// Sets the OpenMP thread count used by Forward and MatMul (<= 0: all cores).
// n = 0: all cores; n outside [0, MaxThreads()] is an Error.
void SetNumThreads(int n);
int MaxThreads();
int NumThreads();

}  // namespace specsweep
