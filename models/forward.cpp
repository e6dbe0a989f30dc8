// The Llama forward pass, batched over n positions (decode n=1, prefill, verify K+1).
// Every per-element reduction has a fixed order and is computed per position, so a
// position's logits do not depend on n or on the thread count (see quant/matmul.h).
#include "models/forward.h"

#include <omp.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

#include "base/error.h"
#include "models/forward_overflow.h"
#include "models/vec_ops.h"
#include "quant/matmul.h"

namespace specsweep {

namespace {

// out[dim] = x[dim] / rms(x) * g[dim]. Returns x's sum of squares, which is not finite
// when x holds an Inf or NaN or its squares overflow float: the row would become zeros
// (or NaN), so the caller checks it (models/forward_overflow.h).
float RmsNorm(float* out, const float* x, const float* g, int dim, float eps) {
  const float ss = Dot(x, x, dim);
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
  for (int i = 0; i < dim; ++i) out[i] = x[i] * scale * g[i];
  return ss;
}

// Rotates interleaved pairs (2j, 2j+1) of each head of v[n_heads*head_dim] by pos*freq_j.
void Rope(float* v, int n_heads, int head_dim, const float* cos_t, const float* sin_t) {
  for (int h = 0; h < n_heads; ++h) {
    float* p = v + h * head_dim;
    for (int j = 0; j < head_dim / 2; ++j) {
      const float a = p[2 * j], b = p[2 * j + 1];
      p[2 * j] = a * cos_t[j] - b * sin_t[j];
      p[2 * j + 1] = a * sin_t[j] + b * cos_t[j];
    }
  }
}

template <class Vec>
auto* Grow(Vec& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Softmax in place over G rows, row g being sh[g][0..len0 + g) (the scores of G
// consecutive queries). Each row's sum runs in t order from 0: the G chains of float
// additions interleave over the common prefix, so a group costs about one row's latency.
// Returns the first row holding a non-finite score, or -1: +inf or NaN make its sum NaN,
// and -inf (which exp would make a silent zero weight) is its smallest score.
template <int G>
int SoftmaxRows(float* const* sh, int len0) {
  float sum[G], min_s[G];
  for (int g = 0; g < G; ++g) {
    float* r = sh[g];
    const int len = len0 + g;
    // The maximum in 8 lanes, then across them: max is exact, so any order gives the
    // same value (a zero's sign aside, which cannot change exp(r[t] - max_s)). The
    // minimum likewise, for the check.
    Lanes8 m8 = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    Lanes8 lo8 = -m8;
    int t8 = 0;
    for (; t8 + 8 <= len; t8 += 8) {
      const Lanes8 s8 = LoadLanes8(r + t8);
      m8 = m8 < s8 ? s8 : m8;
      lo8 = lo8 > s8 ? s8 : lo8;
    }
    float max_s = -INFINITY;
    min_s[g] = INFINITY;
    for (int j = 0; j < 8; ++j) max_s = std::max(max_s, m8[j]), min_s[g] = std::min(min_s[g], lo8[j]);
    for (int t = t8; t < len; ++t) max_s = std::max(max_s, r[t]), min_s[g] = std::min(min_s[g], r[t]);
    for (int t = 0; t < len; ++t) r[t] = ExpF(r[t] - max_s);
    sum[g] = 0.0f;
  }
  for (int t = 0; t < len0; ++t)
#pragma GCC unroll 16
    for (int g = 0; g < G; ++g) sum[g] += sh[g][t];
  for (int g = 1; g < G; ++g)
    for (int t = len0; t < len0 + g; ++t) sum[g] += sh[g][t];
  for (int g = 0; g < G; ++g) {
    const float inv = 1.0f / sum[g];
    for (int t = 0; t < len0 + g; ++t) sh[g][t] *= inv;
  }
  for (int g = 0; g < G; ++g)
    if (!Finite(min_s[g]) || !Finite(sum[g])) return g;
  return -1;
}

// The cache slot holding the key/value a query sees at position t: t itself for a
// sequence; in a token tree, positions from `base` (the tree's first slot) on are the
// query's ancestors, tail[t - base] (ascending slots). Scores, softmax and sums run
// over positions, so a tree node's arithmetic is that of the same path run as a chain.
struct Rows {
  int base = INT_MAX;
  const int* tail = nullptr;
  int operator()(int t) const { return t < base ? t : tail[t - base]; }
};

// One query head at one position, any head size: sh[t] = q.k_t * scale for t < len,
// softmax, then out = sum_t sh[t] v_t accumulated in t order. k and v are one KV head's
// rows ([slots][hd], contiguous in the head-major cache), position t at row rows(t).
// Returns false when a score was not finite (SoftmaxRows).
template <class E>
bool AttendHead(const float* q, const E* k, const E* v, int len, Rows rows, float scale, int hd, float* sh,
                float* out) {
  for (int t = 0; t < len; ++t) sh[t] = Dot(q, k + size_t(rows(t)) * hd, hd) * scale;
  const bool finite = SoftmaxRows<1>(&sh, len) < 0;
  std::fill(out, out + hd, 0.0f);
  for (int t = 0; t < len; ++t)
    for (int e = 0; e < hd; ++e) out[e] += sh[t] * ToFloat(v[size_t(rows(t)) * hd + e]);
  return finite;
}

// Queries per group for head size HD: their output rows fill 16 vector registers
// (G x HD / 16 = 16).
template <int HD>
constexpr int kGroupQueries = 256 / HD;

// G consecutive queries of one head, query g at position p0 + g seeing positions
// [0, p0 + g]: per query the arithmetic of AttendHead (each score is Dot's sum, each
// output element accumulates sh[t] v_t in t order), so results never depend on G. Each
// key and value row is read once for the G queries instead of once per query (n = 8
// verification at context 512 read every head's rows from L2 8 times), the output rows
// stay in registers, and the score trees of 16 (position, query) pairs are taken
// together (LaneTreeSums16). Returns the first query whose scores were not finite, or -1.
template <int HD, int G, class E>
int AttendQueries(const float* const* q, const E* k, const E* v, int p0, Rows rows, float scale, float* const* sh,
                  float* const* out) {
  static_assert(HD % 16 == 0 && G >= 1 && G * HD / 16 <= 16);
  constexpr int P = 16 / G;    // positions per tree of 16 sums
  const int len_max = p0 + G;  // positions the last query sees
  int t0 = 0;
  for (; t0 + P <= len_max; t0 += P) {  // scores past a query's length are never used
    Lanes16 s[16] = {};                 // [P positions][G queries] lane partial sums
#pragma GCC unroll 16
    for (int r = 0; r < P; ++r) {
      const E* kt = k + size_t(rows(t0 + r)) * HD;
#pragma GCC unroll 8
      for (int j = 0; j < HD / 16; ++j) {
        const Lanes16 kj = LoadLanes16(kt + 16 * j);
#pragma GCC unroll 16
        for (int g = 0; g < G; ++g) s[r * G + g] += LoadLanes16(q[g] + 16 * j) * kj;  // as Dot
      }
    }
    const Lanes16 sums = LaneTreeSums16(s) * scale;
    for (int r = 0; r < P; ++r)
      for (int g = 0; g < G; ++g) sh[g][t0 + r] = sums[r * G + g];
  }
  for (int t = t0; t < len_max; ++t)
    for (int g = 0; g < G; ++g) sh[g][t] = Dot(q[g], k + size_t(rows(t)) * HD, HD) * scale;
  const int bad = SoftmaxRows<G>(sh, p0 + 1);
  Lanes16 o[G][HD / 16] = {};  // [G][HD] output rows
  // Queries [g0, G) accumulate position t.
  auto accumulate = [&](int t, int g0) {
    const E* vt = v + size_t(rows(t)) * HD;
#pragma GCC unroll 8
    for (int j = 0; j < HD / 16; ++j) {
      const Lanes16 vj = LoadLanes16(vt + 16 * j);
#pragma GCC unroll 16
      for (int g = g0; g < G; ++g) o[g][j] += sh[g][t] * vj;
    }
  };
  for (int t = 0; t <= p0; ++t) accumulate(t, 0);  // seen by every query
  for (int t = p0 + 1; t < len_max; ++t) accumulate(t, t - p0);
  for (int g = 0; g < G; ++g) std::memcpy(out[g], o[g], sizeof o[g]);
  return bad;
}

// Calls AttendQueries<HD, C> with C == c, 1 <= c <= G.
template <int HD, int G, class E>
int AttendQueriesN(int c, const float* const* q, const E* k, const E* v, int p0, Rows rows, float scale,
                   float* const* sh, float* const* out) {
  if constexpr (G >= 1) {
    if (c == G) return AttendQueries<HD, G>(q, k, v, p0, rows, scale, sh, out);
    return AttendQueriesN<HD, G - 1>(c, q, k, v, p0, rows, scale, sh, out);
  }
  return -1;
}

// Queries attended together: [i0, i0 + c), each the previous one's child (a chain), the
// first at position p0; they see positions [0, p0 + g] through `rows`.
struct QueryRun {
  int i0, c, p0;
  Rows rows;
};

// The runs of a batch at start_pos. A sequence: runs of G consecutive queries at their
// slots. A tree (cache.has_tree(), nodes already recorded): maximal parent-child chains
// of consecutive nodes cut at G, each with its ancestors' slots in `tails`.
std::vector<QueryRun> QueryRuns(const KVCache& cache, int start_pos, int n, int G, std::vector<int>& tails) {
  std::vector<QueryRun> runs;
  if (!cache.has_tree()) {
    for (int i0 = 0; i0 < n; i0 += G) runs.push_back({i0, std::min(G, n - i0), start_pos + i0, Rows{}});
    return runs;
  }
  const int from = cache.tree_from();
  std::vector<size_t> offsets;
  tails.clear();
  for (int i0 = 0; i0 < n;) {
    int c = 1;
    while (c < G && i0 + c < n && cache.parent(start_pos + i0 + c) == start_pos + i0 + c - 1) ++c;
    const size_t off = tails.size();
    for (int s = start_pos + i0; s >= from; s = cache.parent(s)) tails.push_back(s);  // leaf first
    std::reverse(tails.begin() + off, tails.end());
    for (int g = 1; g < c; ++g) tails.push_back(start_pos + i0 + g);
    runs.push_back({i0, c, cache.position(start_pos + i0), Rows{from, nullptr}});
    offsets.push_back(off);
    i0 += c;
  }
  for (size_t r = 0; r < runs.size(); ++r) runs[r].rows.tail = tails.data() + offsets[r];
  return runs;
}

// The matrix products of one layer in forward order; each list shares one input.
struct LayerProducts {
  MatMulTarget qkv[3], wo[1], gate_up[2], w2[1];
};

// Fails unless `tokens` at start_pos continue `cache` (its length, the context, the
// model's shape and vocabulary, the tree parents); then reserves their room and, in tree
// mode, records them as tree nodes (which validates the parents).
void PrepareCache(const Model& model, std::span<const int> tokens, int start_pos, KVCache& cache,
                  std::span<const int> parents) {
  const ModelConfig& c = model.config;
  const int n = static_cast<int>(tokens.size());
  if (n <= 0) Fail("forward: tokens: empty batch");
  if (start_pos != cache.length())
    Fail("forward: start_pos: {} but the cache holds {} positions", start_pos, cache.length());
  if (c.sliding_window > 0 && start_pos + n > c.sliding_window)
    Fail(
        "forward: context: {} positions exceed the model's sliding_window {} (sliding-window attention is "
        "not supported; use a context of at most {})",
        start_pos + n, c.sliding_window, c.sliding_window);
  if (start_pos + n > cache.capacity())
    Fail("forward: context: {} positions exceed the context length {}", start_pos + n, cache.capacity());
  if (cache.n_kv_heads() != c.n_kv_heads || cache.head_dim() != c.head_dim() || cache.n_layers() > c.n_layers)
    Fail("forward: cache: built for another model shape");
  cache.Reserve(start_pos + n);
  for (int t : tokens)
    if (t < 0 || t >= c.vocab_size) Fail("forward: token: id {} outside vocabulary [0, {})", t, c.vocab_size);
  if (!parents.empty() && parents.size() != size_t(n)) Fail("forward: parents: {} for {} tokens", parents.size(), n);
  if (!parents.empty() || cache.has_tree()) {  // tree mode: record the nodes (validates them)
    std::vector<int> chain;
    if (parents.empty())
      for (int i = 0; i < n; ++i) chain.push_back(start_pos + i - 1);
    cache.AddTreeNodes(start_pos, parents.empty() ? std::span<const int>(chain) : parents);
  }
}

// The buffers of one call, in cache-owned scratch (shared by the team).
struct ForwardBuffers {
  float* q;         // [n][n_heads*hd]
  float* k;         // [n][kv_dim]
  float* v;         // [n][kv_dim]
  float* att_out;   // [n][n_heads*hd]
  float* ob;        // [n][dim] output of wo, then of w2
  float* hb;        // [n][hidden] gate, then SwiGLU
  float* hb2;       // [n][hidden] up
  float* scores;    // [n][n_heads][ctx]
  float* rope_cos;  // [n][hd/2]
  float* rope_sin;  // [n][hd/2]
  float* logits;    // [m][vocab]
};

// Grows the scratch for n positions at context ctx, m of them with logits, and
// `threads` threads' own residual streams.
ForwardBuffers GrowBuffers(KVCache::Scratch& s, const ModelConfig& c, int n, int ctx, int m, int threads) {
  const int dim = c.dim, hd = c.head_dim(), q_dim = c.q_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim;
  ForwardBuffers b;
  b.q = Grow(s.q, size_t(n) * q_dim);
  b.k = Grow(s.k, size_t(n) * kv_dim);
  b.v = Grow(s.v, size_t(n) * kv_dim);
  b.att_out = Grow(s.att_out, size_t(n) * q_dim);
  b.ob = Grow(s.ob, size_t(n) * dim);
  b.hb = Grow(s.hb, size_t(n) * hidden);
  b.hb2 = Grow(s.hb2, size_t(n) * hidden);
  b.scores = Grow(s.scores, size_t(n) * c.n_heads * ctx);
  b.rope_cos = Grow(s.rope_cos, size_t(n) * hd / 2);
  b.rope_sin = Grow(s.rope_sin, size_t(n) * hd / 2);
  b.logits = Grow(s.logits, size_t(m) * c.vocab_size);
  // Each thread's own.
  if (s.own.size() < size_t(threads)) s.own.resize(threads);
  for (int t = 0; t < threads; ++t) {
    Grow(s.own[t].x, size_t(n) * dim);   // [n][dim] residual stream
    Grow(s.own[t].xb, size_t(n) * dim);  // [n][dim] normed input of a product
  }
  return b;
}

// RoPE's cos and sin of each position's angles, [n][hd/2] each.
void RopeTables(const ModelConfig& c, const KVCache& cache, int start_pos, int n, float* rope_cos, float* rope_sin) {
  const int hd = c.head_dim();
  const std::vector<float> freqs = c.RopeFrequencies();  // [hd/2]
  for (int i = 0; i < n; ++i) {
    const int pos = cache.position(start_pos + i);  // a tree node's: its depth below the tree
    for (int j = 0; j < hd / 2; ++j) {
      const float angle = static_cast<float>(pos) * freqs[j];
      rope_cos[size_t(i) * hd / 2 + j] = std::cos(angle);
      rope_sin[size_t(i) * hd / 2 + j] = std::sin(angle);
    }
  }
}

LayerProducts Products(const LayerWeights& L, const ForwardBuffers& b) {
  return LayerProducts{{{&L.wq, b.q}, {&L.wk, b.k}, {&L.wv, b.v}},
                       {{&L.wo, b.ob}},
                       {{&L.w1, b.hb}, {&L.w3, b.hb2}},
                       {{&L.w2, b.ob}}};
}

// Sets every product's chunk queue before the region: inside it, resetting one would
// need a barrier of its own. Four per layer, then the classifier's.
void ResetQueues(const KernelChoice& kernels, const Model& model, int n_layers, const ForwardBuffers& b,
                 KVCache::Scratch& s, int threads) {
  const MatMulTarget classifier[] = {{&model.output, b.logits}};
  const size_t n_queues = 4 * size_t(n_layers) + 1;
  if (s.n_queues < n_queues) s.queues = std::make_unique<ChunkQueue[]>(s.n_queues = n_queues);
  for (int l = 0; l < n_layers; ++l) {
    const LayerProducts P = Products(model.layers[l], b);
    ChunkQueue* lq = &s.queues[4 * size_t(l)];
    lq[0].Reset(MatMulChunks(kernels, P.qkv), threads);
    lq[1].Reset(MatMulChunks(kernels, P.wo), threads);
    lq[2].Reset(MatMulZippedChunks(P.gate_up), threads);
    lq[3].Reset(MatMulChunks(kernels, P.w2), threads);
  }
  s.queues[4 * size_t(n_layers)].Reset(MatMulChunks(kernels, classifier), threads);
}

// One call's pass over the layers, run by each thread of the team (Team) on the
// buffers and queues set up before the region. Thread t notes the first non-finite
// value it meets in overflows[t] and runs on (the team's barriers need every thread).
class ForwardPass {
 public:
  ForwardPass(const Runtime& rt, const Model& model, std::span<const int> tokens, int start_pos, KVCache& cache,
              int first, const ForwardBuffers& b, std::vector<QueryRun> runs, std::span<Overflow> overflows)
      : rt_(rt),
        model_(model),
        c_(model.config),
        tokens_(tokens),
        n_(int(tokens.size())),
        start_pos_(start_pos),
        ctx_(start_pos + n_),
        first_(first),
        cache_(cache),
        b_(b),
        runs_(std::move(runs)),
        overflows_(overflows) {}

  // Thread t of nt (nt may fall short of the team asked for: the queues' stealing covers
  // the products, and the other splits use nt).
  void Team(int t, int nt) const {
    float* x = cache_.scratch.own[t].x.data();    // [n][dim]
    float* xb = cache_.scratch.own[t].xb.data();  // [n][dim]
    for (int i = 0; i < n_; ++i) DequantizeRow(model_.tok_embeddings, tokens_[i], x + size_t(i) * c_.dim);
    for (int l = 0; l < cache_.n_layers(); ++l) {
      AttentionBlock(l, t, nt, x, xb);
      FeedForwardBlock(l, t, x, xb);
    }
    Classifier(t, x, xb);
  }

 private:
  ChunkQueue* Queues(int l) const { return &cache_.scratch.queues[4 * size_t(l)]; }

  // Notes at thread t a norm's sum of squares `ss` of layer l, batch row i, unless finite.
  void CheckNorm(float ss, int t, int l, int i, Overflow::Stage stage, int head = -1) const {
    if (!Finite(ss)) Note(t, {l, stage, start_pos_ + i, head, ss});
  }
  void Note(int t, const Overflow& o) const {
    if (!overflows_[t].found()) overflows_[t] = o;
  }

  void AttentionBlock(int l, int t, int nt, float* x, float* xb) const {
    const int dim = c_.dim, n_kv = c_.n_kv_heads;
    const LayerWeights& L = model_.layers[l];
    const LayerProducts P = Products(L, b_);
    ChunkQueue* lq = Queues(l);
    for (int i = 0; i < n_; ++i)
      CheckNorm(RmsNorm(xb + size_t(i) * dim, x + size_t(i) * dim, L.attn_norm.data(), dim, c_.norm_eps), t, l, i,
                Overflow::kAttnNorm);
    MatMulsTeam(rt_.kernels, P.qkv, xb, n_, lq[0], t);
#pragma omp barrier
    // Causal attention, a contiguous range of KV heads per thread. The thread ropes
    // and caches the keys/values of its KV heads and attends with their query heads,
    // so nothing it writes here is read by another thread before the next barrier.
    // Per head and position it walks that KV head's rows, contiguous in the head-major
    // cache. Every score and output element is the same fixed-order reduction over t
    // whatever the split, so the result is independent of the batch and the team.
    const int att_parts = std::min(n_kv, nt);
    if (t < att_parts) {
      const int kv0 = n_kv * t / att_parts, kv1 = n_kv * (t + 1) / att_parts;
      if (cache_.type() == KvType::F16)
        Attend<uint16_t>(l, t, kv0, kv1);
      else
        Attend<float>(l, t, kv0, kv1);
    }
#pragma omp barrier
    MatMulsTeam(rt_.kernels, P.wo, b_.att_out, n_, lq[1], t);
#pragma omp barrier
    for (size_t e = 0; e < size_t(n_) * dim; ++e) x[e] += b_.ob[e];
  }

  // SwiGLU feed-forward block.
  void FeedForwardBlock(int l, int t, float* x, float* xb) const {
    const int dim = c_.dim;
    const LayerWeights& L = model_.layers[l];
    const LayerProducts P = Products(L, b_);
    ChunkQueue* lq = Queues(l);
    for (int i = 0; i < n_; ++i)
      CheckNorm(RmsNorm(xb + size_t(i) * dim, x + size_t(i) * dim, L.ffn_norm.data(), dim, c_.norm_eps), t, l, i,
                Overflow::kFfnNorm);
    // Gate and up of the same rows in one chunk, SwiGLU on them at once: no barrier
    // between the products and the activation.
    MatMulsZippedTeam(rt_.kernels, P.gate_up, xb, n_, lq[2], t, swiglu_);
#pragma omp barrier
    MatMulsTeam(rt_.kernels, P.w2, b_.hb, n_, lq[3], t);
#pragma omp barrier
    for (size_t e = 0; e < size_t(n_) * dim; ++e) x[e] += b_.ob[e];
  }

  // Classifier over the requested positions only (prefill needs just the last).
  void Classifier(int t, const float* x, float* xb) const {
    const int dim = c_.dim, n_layers = cache_.n_layers();
    for (int i = first_; i < n_; ++i)
      CheckNorm(RmsNorm(xb + size_t(i - first_) * dim, x + size_t(i) * dim, model_.final_norm.data(), dim, c_.norm_eps),
                t, n_layers - 1, i, Overflow::kOutputNorm);
    const MatMulTarget classifier[] = {{&model_.output, b_.logits}};
    MatMulsTeam(rt_.kernels, classifier, xb, n_ - first_, cache_.scratch.queues[4 * size_t(n_layers)], t);
  }

  // hb = SwiGLU(gate, up) over rows [r0, r1) of every position.
  void Swiglu(int r0, int r1) const {
    const int hidden = c_.hidden_dim;
    for (int i = 0; i < n_; ++i) {
      float* g = b_.hb + size_t(i) * hidden;
      const float* u = b_.hb2 + size_t(i) * hidden;
#pragma omp simd
      for (int r = r0; r < r1; ++r) g[r] = SwiGlu(g[r], u[r]);
    }
  }

  // Attention of layer l for KV heads [kv0, kv1) over a cache of element type E: rope
  // their queries and keys, store the keys and values (rounded to E) at start_pos..,
  // attend with their query heads (thread t).
  template <class E>
  void Attend(int l, int t, int kv0, int kv1) const {
    const LayerWeights& L = model_.layers[l];
    const int hd = c_.head_dim(), q_dim = c_.q_dim(), kv_dim = c_.kv_dim(), group = c_.n_heads / c_.n_kv_heads;
    float *q = b_.q, *k = b_.k, *v = b_.v;
    for (int i = 0; i < n_; ++i) {
      const float* cs = &b_.rope_cos[size_t(i) * hd / 2];
      const float* sn = &b_.rope_sin[size_t(i) * hd / 2];
      // This thread's heads: q heads [h0, h1), kv heads [kv0, kv1).
      const int h0 = kv0 * group, h1 = kv1 * group;
      float* qi = q + size_t(i) * q_dim;   // [q_dim]
      float* ki = k + size_t(i) * kv_dim;  // [kv_dim]
      float* vi = v + size_t(i) * kv_dim;  // [kv_dim]
      if (!L.bq.empty())                   // qwen2: the projections' biases
        for (int e = h0 * hd; e < h1 * hd; ++e) qi[e] += L.bq[e];
      if (!L.bk.empty())
        for (int e = kv0 * hd; e < kv1 * hd; ++e) ki[e] += L.bk[e], vi[e] += L.bv[e];
      if (!L.q_norm.empty()) {  // qwen3: each head normed before RoPE
        for (int h = h0; h < h1; ++h)
          CheckNorm(RmsNorm(qi + h * hd, qi + h * hd, L.q_norm.data(), hd, c_.norm_eps), t, l, i, Overflow::kHeadNorm,
                    h);
        for (int kh = kv0; kh < kv1; ++kh)
          CheckNorm(RmsNorm(ki + kh * hd, ki + kh * hd, L.k_norm.data(), hd, c_.norm_eps), t, l, i, Overflow::kHeadNorm,
                    kh);
      }
      Rope(q + size_t(i) * q_dim + kv0 * group * hd, (kv1 - kv0) * group, hd, cs, sn);
      Rope(k + size_t(i) * kv_dim + kv0 * hd, kv1 - kv0, hd, cs, sn);
      for (int kh = kv0; kh < kv1; ++kh) {
        StoreRow(k + size_t(i) * kv_dim + kh * hd, hd, cache_.K<E>(l, kh, start_pos_ + i));
        StoreRow(v + size_t(i) * kv_dim + kh * hd, hd, cache_.V<E>(l, kh, start_pos_ + i));
      }
    }
    for (int h = kv0 * group; h < kv1 * group; ++h) AttendQueryHead<E>(l, t, h);
  }

  // Query head h of layer l at every position. Query i sees positions [0, start_pos + i]
  // (a tree node: the sequence before the tree and its ancestors); a run of consecutive
  // queries shares every key and value row it reads. Thread t notes non-finite scores.
  template <class E>
  void AttendQueryHead(int l, int t, int h) const {
    const int hd = c_.head_dim(), q_dim = c_.q_dim(), n_heads = c_.n_heads, group = c_.n_heads / c_.n_kv_heads;
    const float att_scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const E* kc = cache_.K<E>(l, h / group, 0);                                     // [ctx][hd]
    const E* vc = cache_.V<E>(l, h / group, 0);                                     // [ctx][hd]
    auto qh = [&](int i) { return b_.q + size_t(i) * q_dim + h * hd; };             // [hd]
    auto sh = [&](int i) { return b_.scores + (size_t(i) * n_heads + h) * ctx_; };  // [ctx]
    auto oh = [&](int i) { return b_.att_out + size_t(i) * q_dim + h * hd; };       // [hd]
    auto check = [&](int i) { Note(t, {l, Overflow::kScores, start_pos_ + i, h, 0.0f}); };
    auto groups = [&]<int HD>() {
      constexpr int G = kGroupQueries<HD>;
      for (const QueryRun& r : runs_) {
        const float* qs[G];
        float *ss[G], *os[G];
        for (int g = 0; g < r.c; ++g) qs[g] = qh(r.i0 + g), ss[g] = sh(r.i0 + g), os[g] = oh(r.i0 + g);
        if (const int bad = AttendQueriesN<HD, G>(r.c, qs, kc, vc, r.p0, r.rows, att_scale, ss, os); bad >= 0)
          check(r.i0 + bad);
      }
    };
    if (hd == 16)
      groups.template operator()<16>();
    else if (hd == 32)
      groups.template operator()<32>();
    else if (hd == 64)
      groups.template operator()<64>();
    else if (hd == 128)
      groups.template operator()<128>();
    else
      for (const QueryRun& r : runs_)
        if (!AttendHead(qh(r.i0), kc, vc, r.p0 + 1, r.rows, att_scale, hd, sh(r.i0), oh(r.i0))) check(r.i0);
  }

  const Runtime& rt_;
  const Model& model_;
  const ModelConfig& c_;
  std::span<const int> tokens_;
  const int n_, start_pos_, ctx_, first_;
  KVCache& cache_;
  const ForwardBuffers b_;
  const std::vector<QueryRun> runs_;
  const std::span<Overflow> overflows_;  // [team] each thread's first non-finite value
  const std::function<void(int, int)> swiglu_ = [this](int r0, int r1) { Swiglu(r0, r1); };
};

}  // namespace

// A team pays for itself only when each of a layer's 5 barrier intervals holds enough
// work: the multiply-adds of one layer for n positions (its products, plus attention's
// scores and weighted values over the context) against kTeamLayerMacs
// (docs/measurements.md, "Per-call overhead and thread waiting", has the measurement).
// Tiny models decode several times faster on one thread than through the team's
// barriers and wake-ups.
int ForwardTeamSize(const Runtime& rt, const Model& model, int n, int start_pos) {
  const int max_threads = rt.threads;
  if (max_threads <= 1 || rt.team == TeamPolicy::kSerial) return 1;
  if (rt.team == TeamPolicy::kFull) return max_threads;
  const LayerWeights& L = model.layers[0];
  double elems = 0;  // multiply-adds per position of the layer's products
  for (const QMatrix* W : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3}) elems += double(W->rows) * W->cols;
  const double attention = 2.0 * n * (start_pos + n) * model.config.dim;
  return double(n) * elems + attention >= kTeamLayerMacs ? max_threads : 1;
}

// One OpenMP region per call. Every thread walks all layers: the products split their
// row chunks over the team (MatMulsTeam), attention splits by KV head, SwiGLU follows
// each chunk of gate and up rows (MatMulsZippedTeam); each is followed by a barrier,
// which costs a third of the fork/join it replaces (5 per layer; docs/measurements.md,
// "Per-call overhead and thread waiting"). The small per-position steps between (norms,
// residual adds, activation quantization) every thread computes for itself into its own
// buffers (Scratch::Own) with the same code on the same inputs, so the copies are equal
// and nobody waits for a single thread to do them.
std::span<const float> Forward(const Runtime& rt, const Model& model, std::span<const int> tokens, int start_pos,
                               KVCache& cache, bool all_logits, std::span<const int> parents) {
  PrepareCache(model, tokens, start_pos, cache, parents);
  const ModelConfig& c = model.config;
  const int n = static_cast<int>(tokens.size()), hd = c.head_dim();
  const int threads = ForwardTeamSize(rt, model, n, start_pos);
  const int first = all_logits ? 0 : n - 1, m = n - first;  // positions that get logits
  const ForwardBuffers b = GrowBuffers(cache.scratch, c, n, start_pos + n, m, threads);
  RopeTables(c, cache, start_pos, n, b.rope_cos, b.rope_sin);
  ResetQueues(rt.kernels, model, cache.n_layers(), b, cache.scratch, threads);
  const int group_queries = hd == 16    ? kGroupQueries<16>
                            : hd == 32  ? kGroupQueries<32>
                            : hd == 64  ? kGroupQueries<64>
                            : hd == 128 ? kGroupQueries<128>
                                        : 1;
  std::vector<Overflow> overflows(threads);
  const ForwardPass pass(rt, model, tokens, start_pos, cache, first, b,
                         QueryRuns(cache, start_pos, n, group_queries, cache.scratch.tree_rows), overflows);
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    pass.Team(omp_get_thread_num(), omp_get_num_threads());
  } else {
    pass.Team(0, 1);  // no OpenMP region at all; the barriers above are then no-ops
  }
  cache.SetLength(start_pos + n);
  FailOnOverflow(model, overflows);
  return {b.logits, size_t(m) * c.vocab_size};
}

}  // namespace specsweep

namespace specsweep {

// PLACEHOLDER (b50-api skeleton, replaced by the batched pass): one Forward per sequence.
std::vector<std::span<const float>> ForwardBatch(const Runtime& rt, const Model& model,
                                                 std::span<const SequenceCall> calls, KVCache::Scratch& scratch) {
  (void)scratch;
  std::vector<std::span<const float>> out;
  for (const SequenceCall& c : calls)
    out.push_back(Forward(rt, model, c.tokens, c.start_pos, *c.cache, c.all_logits, c.parents));
  return out;
}

}  // namespace specsweep
