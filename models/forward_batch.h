// The bookkeeping of a batched forward call (models/forward.cpp): the sequences' checks,
// where each sequence's rows, scores and logits sit in the shared buffers, the buffers.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "models/attention.h"
#include "models/forward.h"

namespace specsweep {

// One sequence of a batch: its rows [row, row + n) of every [rows][..] buffer.
struct SequenceLayout {
  KVCache* cache;
  std::span<const int> tokens;
  int start_pos, n;
  int row;            // first batch row
  int first;          // first of its rows that gets logits (0, or n - 1)
  int logit_row;      // its first logits row
  int ctx;            // start_pos + n: the context its last query sees
  size_t scores;      // offset of its scores, [n][n_heads][ctx]
  size_t run0, run1;  // its query runs in BatchLayout::runs
};

struct BatchLayout {
  std::vector<SequenceLayout> seqs;
  int rows = 0, logit_rows = 0, max_ctx = 0, n_layers = 0;
  size_t scores = 0;           // floats of every sequence's scores
  std::vector<int> row_seq;    // [rows] the sequence of each batch row
  std::vector<QueryRun> runs;  // every sequence's query runs (rows local to the sequence)
};

// Checks every call (a one-line Error naming the sequence when there are several: a
// null or repeated cache, empty tokens, a start_pos that does not continue its cache,
// the context, the model's shape, the vocabulary, the tree parents), then reserves each
// cache's room and records tree nodes; on an Error no cache is changed. Lays the rows
// out in call order; query runs of at most G queries (GroupQueries), their tree
// ancestors' slots in `tails`.
BatchLayout PrepareBatch(const Model& model, std::span<const SequenceCall> calls, int G, std::vector<int>& tails);

// The buffers of one call, in the caller's scratch (shared by the team).
struct ForwardBuffers {
  float* q;         // [rows][n_heads*hd]
  float* k;         // [rows][kv_dim]
  float* v;         // [rows][kv_dim]
  float* att_out;   // [rows][n_heads*hd]
  float* ob;        // [rows][dim] output of wo, then of w2
  float* hb;        // [rows][hidden] gate, then SwiGLU
  float* hb2;       // [rows][hidden] up
  float* scores;    // per sequence [n][n_heads][ctx] (SequenceLayout::scores)
  float* rope_cos;  // [rows][hd/2]
  float* rope_sin;  // [rows][hd/2]
  float* logits;    // [logit_rows][vocab]
};

// Grows the scratch for the batch and `threads` threads' own residual streams.
ForwardBuffers GrowBuffers(KVCache::Scratch& s, const ModelConfig& c, const BatchLayout& batch, int threads);

// RoPE's cos and sin of each row's angles (a tree node's position is its depth below
// the tree), [rows][hd/2] each.
void RopeTables(const ModelConfig& c, const BatchLayout& batch, float* rope_cos, float* rope_sin);

}  // namespace specsweep
