// Causal attention kernels of the forward pass (models/forward.cpp): one query head over
// one sequence's KV cache rows, queries in runs that share every key and value row.
#pragma once
#include <climits>
#include <cstddef>
#include <vector>

#include "models/kv_cache.h"

namespace specsweep {

// The cache slot holding the key/value a query sees at position t: t itself for a
// sequence; in a token tree, positions from `base` (the tree's first slot) on are the
// query's ancestors, tail[t - base] (ascending slots). Scores, softmax and sums run
// over positions, so a tree node's arithmetic is that of the same path run as a chain.
struct Rows {
  int base = INT_MAX;
  const int* tail = nullptr;
  int operator()(int t) const { return t < base ? t : tail[t - base]; }
};

// Queries attended together: rows [i0, i0 + c) of a sequence, each the previous one's
// child (a chain), the first at position p0; they see positions [0, p0 + g] through `rows`.
struct QueryRun {
  int i0, c, p0;
  Rows rows;
  int tail_at = -1;  // a tree run's first ancestor slot in the tails vector (AppendQueryRuns)
};

// Queries per run for head size hd (1 where no grouped kernel exists).
int GroupQueries(int hd);

// Appends the runs of n queries at start_pos of `cache` (rows 0..n-1 of the sequence),
// at most G queries each. A sequence: runs of G consecutive queries at their slots. A
// tree (cache.has_tree(), nodes already recorded): maximal parent-child chains of
// consecutive nodes cut at G, with their ancestors' slots appended to `tails` from
// tail_at on; FixTails points Rows::tail there once `tails` stops growing.
void AppendQueryRuns(const KVCache& cache, int start_pos, int n, int G, std::vector<QueryRun>& runs,
                     std::vector<int>& tails);
// Points each tree run's Rows::tail at its slots in the complete `tails`.
void FixTails(std::vector<QueryRun>& runs, const std::vector<int>& tails);

// One query head's rows of one sequence: row i's query q + i * q_stride [hd], its scores
// scores + i * s_stride [context], its output out + i * o_stride [hd].
struct HeadRows {
  const float* q;
  size_t q_stride;
  float* scores;
  size_t s_stride;
  float* out;
  size_t o_stride;
};

// Attends with one query head over the runs of a sequence, keys k and values v being
// one KV head's rows ([slots][hd] of element type E, contiguous in the head-major
// cache). Every score and output element is a fixed-order reduction over positions,
// whatever the runs. Returns the first row whose scores (or their softmax sum) were not
// finite, or -1.
template <class E>
int AttendRuns(const QueryRun* runs, size_t n_runs, const E* k, const E* v, int hd, const HeadRows& h);

}  // namespace specsweep
