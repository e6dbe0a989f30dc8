#include "models/forward_batch.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace specsweep {

namespace {

template <class Vec>
auto* Grow(Vec& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Fails unless the call's tokens at start_pos continue its cache (its length, the
// context, the model's shape and vocabulary, the parents' count). `where` names it.
void CheckCall(const Model& model, const SequenceCall& call, const std::string& where) {
  const ModelConfig& c = model.config;
  const KVCache& cache = *call.cache;
  const int n = static_cast<int>(call.tokens.size()), start_pos = call.start_pos;
  if (n <= 0) Fail("{}: tokens: empty batch", where);
  if (start_pos != cache.length())
    Fail("{}: start_pos: {} but the cache holds {} positions", where, start_pos, cache.length());
  if (c.sliding_window > 0 && start_pos + n > c.sliding_window)
    Fail(
        "{}: context: {} positions exceed the model's sliding_window {} (sliding-window attention is "
        "not supported; use a context of at most {})",
        where, start_pos + n, c.sliding_window, c.sliding_window);
  if (start_pos + n > cache.capacity())
    Fail("{}: context: {} positions exceed the context length {}", where, start_pos + n, cache.capacity());
  if (cache.n_kv_heads() != c.n_kv_heads || cache.head_dim() != c.head_dim() || cache.n_layers() > c.n_layers)
    Fail("{}: cache: built for another model shape", where);
  for (int t : call.tokens)
    if (t < 0 || t >= c.vocab_size) Fail("{}: token: id {} outside vocabulary [0, {})", where, t, c.vocab_size);
  if (!call.parents.empty() && call.parents.size() != size_t(n))
    Fail("{}: parents: {} for {} tokens", where, call.parents.size(), n);
}

// Reserves the call's room and, in tree mode, records its tokens as tree nodes (which
// validates the parents; the cache is unchanged when that fails).
void PrepareCache(const SequenceCall& call) {
  KVCache& cache = *call.cache;
  const int n = static_cast<int>(call.tokens.size());
  cache.Reserve(call.start_pos + n);
  if (call.parents.empty() && !cache.has_tree()) return;
  std::vector<int> chain;  // no parents on a tree cache: a chain continuing the last node
  if (call.parents.empty())
    for (int i = 0; i < n; ++i) chain.push_back(call.start_pos + i - 1);
  cache.AddTreeNodes(call.start_pos, call.parents.empty() ? std::span<const int>(chain) : call.parents);
}

// Checks every call and the batch as a whole (caches present, distinct, of one depth).
void CheckBatch(const Model& model, std::span<const SequenceCall> calls) {
  if (calls.empty()) Fail("forward: batch: no sequences");
  const bool one = calls.size() == 1;
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string where = one ? std::string("forward") : fmt::format("forward: sequence {}", i);
    if (!calls[i].cache) Fail("{}: cache: null", where);
    for (size_t j = 0; j < i; ++j)
      if (calls[j].cache == calls[i].cache) Fail("{}: cache: the same as sequence {}'s", where, j);
    if (calls[i].cache->n_layers() != calls[0].cache->n_layers())
      Fail("{}: cache: {} layers, sequence 0's {} (one pass runs one depth)", where, calls[i].cache->n_layers(),
           calls[0].cache->n_layers());
    CheckCall(model, calls[i], where);
  }
}

}  // namespace

BatchLayout PrepareBatch(const Model& model, std::span<const SequenceCall> calls, int G, std::vector<int>& tails) {
  CheckBatch(model, calls);
  for (size_t i = 0; i < calls.size(); ++i) {
    try {
      PrepareCache(calls[i]);
    } catch (const Error& e) {
      for (size_t j = 0; j < i; ++j) calls[j].cache->Truncate(calls[j].start_pos);  // drop their new tree nodes
      if (calls.size() == 1) throw;
      Fail("forward: sequence {}: {}", i, e.what());
    }
  }
  BatchLayout b;
  b.n_layers = calls[0].cache->n_layers();
  tails.clear();
  for (size_t i = 0; i < calls.size(); ++i) {
    const SequenceCall& call = calls[i];
    SequenceLayout s{call.cache,   call.tokens, call.start_pos, int(call.tokens.size()), b.rows, 0,
                     b.logit_rows, 0,           b.scores,       b.runs.size(),           0};
    s.first = call.all_logits ? 0 : s.n - 1;
    s.ctx = s.start_pos + s.n;
    AppendQueryRuns(*call.cache, s.start_pos, s.n, G, b.runs, tails);
    s.run1 = b.runs.size();
    b.rows += s.n;
    b.logit_rows += s.n - s.first;
    b.max_ctx = std::max(b.max_ctx, s.ctx);
    b.scores += size_t(s.n) * model.config.n_heads * s.ctx;
    b.row_seq.insert(b.row_seq.end(), s.n, int(i));
    b.seqs.push_back(s);
  }
  FixTails(b.runs, tails);
  return b;
}

ForwardBuffers GrowBuffers(KVCache::Scratch& s, const ModelConfig& c, const BatchLayout& batch, int threads) {
  const int dim = c.dim, hd = c.head_dim(), q_dim = c.q_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim;
  const size_t n = size_t(batch.rows);
  ForwardBuffers b;
  b.q = Grow(s.q, n * q_dim);
  b.k = Grow(s.k, n * kv_dim);
  b.v = Grow(s.v, n * kv_dim);
  b.att_out = Grow(s.att_out, n * q_dim);
  b.ob = Grow(s.ob, n * dim);
  b.hb = Grow(s.hb, n * hidden);
  b.hb2 = Grow(s.hb2, n * hidden);
  b.scores = Grow(s.scores, batch.scores);
  b.rope_cos = Grow(s.rope_cos, n * hd / 2);
  b.rope_sin = Grow(s.rope_sin, n * hd / 2);
  b.logits = Grow(s.logits, size_t(batch.logit_rows) * c.vocab_size);
  // Each thread's own.
  if (s.own.size() < size_t(threads)) s.own.resize(threads);
  for (int t = 0; t < threads; ++t) {
    Grow(s.own[t].x, n * dim);   // [rows][dim] residual stream
    Grow(s.own[t].xb, n * dim);  // [rows][dim] normed input of a product
  }
  return b;
}

void RopeTables(const ModelConfig& c, const BatchLayout& batch, float* rope_cos, float* rope_sin) {
  const int hd = c.head_dim();
  const std::vector<float> freqs = c.RopeFrequencies();  // [hd/2]
  for (const SequenceLayout& s : batch.seqs)
    for (int i = 0; i < s.n; ++i) {
      const int pos = s.cache->position(s.start_pos + i);  // a tree node's: its depth below the tree
      const size_t row = size_t(s.row + i) * hd / 2;
      for (int j = 0; j < hd / 2; ++j) {
        const float angle = static_cast<float>(pos) * freqs[j];
        rope_cos[row + j] = std::cos(angle);
        rope_sin[row + j] = std::sin(angle);
      }
    }
}

}  // namespace specsweep
