// The Llama forward pass, batched over n positions (decode n=1, prefill, verify K+1) of
// one or several sequences. Every per-element reduction has a fixed order and is computed
// per position, so a position's logits do not depend on n, on the other sequences of the
// batch or on the thread count (see quant/matmul.h).
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
#include "models/attention.h"
#include "models/forward_batch.h"
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

// The matrix products of one layer in forward order; each list shares one input.
struct LayerProducts {
  MatMulTarget qkv[3], wo[1], gate_up[2], w2[1];
};

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
// buffers and queues set up before the region. The products run over the rows of every
// sequence at once ([rows][..] buffers, sequence after sequence); attention runs per
// sequence over its own cache. Thread t notes the first non-finite value it meets in
// overflows[t] and runs on (the team's barriers need every thread).
class ForwardPass {
 public:
  ForwardPass(const Runtime& rt, const Model& model, const BatchLayout& batch, KVCache::Scratch& scratch,
              const ForwardBuffers& b, std::span<Overflow> overflows)
      : rt_(rt),
        model_(model),
        c_(model.config),
        batch_(batch),
        rows_(batch.rows),
        scratch_(scratch),
        b_(b),
        overflows_(overflows) {}

  // Thread t of nt (nt may fall short of the team asked for: the queues' stealing covers
  // the products, and the other splits use nt).
  void Team(int t, int nt) const {
    float* x = scratch_.own[t].x.data();    // [rows][dim]
    float* xb = scratch_.own[t].xb.data();  // [rows][dim]
    for (const SequenceLayout& s : batch_.seqs)
      for (int i = 0; i < s.n; ++i) DequantizeRow(model_.tok_embeddings, s.tokens[i], x + size_t(s.row + i) * c_.dim);
    for (int l = 0; l < batch_.n_layers; ++l) {
      AttentionBlock(l, t, nt, x, xb);
      FeedForwardBlock(l, t, x, xb);
    }
    Classifier(t, x, xb);
  }

 private:
  ChunkQueue* Queues(int l) const { return &scratch_.queues[4 * size_t(l)]; }

  // Notes at thread t a norm's sum of squares `ss` of layer l, batch row r, unless finite.
  void CheckNorm(float ss, int t, int l, int r, Overflow::Stage stage, int head = -1) const {
    if (Finite(ss)) return;
    const int seq = batch_.row_seq[r];
    const SequenceLayout& s = batch_.seqs[seq];
    Note(t, {l, stage, s.start_pos + r - s.row, head, ss, seq});
  }
  void Note(int t, const Overflow& o) const {
    if (!overflows_[t].found()) overflows_[t] = o;
  }

  void AttentionBlock(int l, int t, int nt, float* x, float* xb) const {
    const int dim = c_.dim, n_kv = c_.n_kv_heads;
    const LayerWeights& L = model_.layers[l];
    const LayerProducts P = Products(L, b_);
    ChunkQueue* lq = Queues(l);
    for (int i = 0; i < rows_; ++i)
      CheckNorm(RmsNorm(xb + size_t(i) * dim, x + size_t(i) * dim, L.attn_norm.data(), dim, c_.norm_eps), t, l, i,
                Overflow::kAttnNorm);
    MatMulsTeam(rt_.kernels, P.qkv, xb, rows_, lq[0], t);
#pragma omp barrier
    // Causal attention, a contiguous range of KV heads per thread, of every sequence.
    // The thread ropes and caches the keys/values of its KV heads and attends with their
    // query heads, so nothing it writes here is read by another thread before the next
    // barrier. Per head and position it walks that KV head's rows, contiguous in the
    // head-major cache. Every score and output element is the same fixed-order reduction
    // over t whatever the split, so the result is independent of the batch and the team.
    const int att_parts = std::min(n_kv, nt);
    if (t < att_parts) {
      const int kv0 = n_kv * t / att_parts, kv1 = n_kv * (t + 1) / att_parts;
      for (const SequenceLayout& s : batch_.seqs)
        if (s.cache->type() == KvType::F16)
          Attend<uint16_t>(l, t, kv0, kv1, s);
        else
          Attend<float>(l, t, kv0, kv1, s);
    }
#pragma omp barrier
    MatMulsTeam(rt_.kernels, P.wo, b_.att_out, rows_, lq[1], t);
#pragma omp barrier
    for (size_t e = 0; e < size_t(rows_) * dim; ++e) x[e] += b_.ob[e];
  }

  // SwiGLU feed-forward block.
  void FeedForwardBlock(int l, int t, float* x, float* xb) const {
    const int dim = c_.dim;
    const LayerWeights& L = model_.layers[l];
    const LayerProducts P = Products(L, b_);
    ChunkQueue* lq = Queues(l);
    for (int i = 0; i < rows_; ++i)
      CheckNorm(RmsNorm(xb + size_t(i) * dim, x + size_t(i) * dim, L.ffn_norm.data(), dim, c_.norm_eps), t, l, i,
                Overflow::kFfnNorm);
    // Gate and up of the same rows in one chunk, SwiGLU on them at once: no barrier
    // between the products and the activation.
    MatMulsZippedTeam(rt_.kernels, P.gate_up, xb, rows_, lq[2], t, swiglu_);
#pragma omp barrier
    MatMulsTeam(rt_.kernels, P.w2, b_.hb, rows_, lq[3], t);
#pragma omp barrier
    for (size_t e = 0; e < size_t(rows_) * dim; ++e) x[e] += b_.ob[e];
  }

  // Classifier over each sequence's requested rows only (prefill needs just the last),
  // gathered contiguously: logits row s.logit_row + i - s.first is row s.row + i's.
  void Classifier(int t, const float* x, float* xb) const {
    const int dim = c_.dim, n_layers = batch_.n_layers;
    for (const SequenceLayout& s : batch_.seqs)
      for (int i = s.first; i < s.n; ++i)
        CheckNorm(RmsNorm(xb + size_t(s.logit_row + i - s.first) * dim, x + size_t(s.row + i) * dim,
                          model_.final_norm.data(), dim, c_.norm_eps),
                  t, n_layers - 1, s.row + i, Overflow::kOutputNorm);
    const MatMulTarget classifier[] = {{&model_.output, b_.logits}};
    MatMulsTeam(rt_.kernels, classifier, xb, batch_.logit_rows, scratch_.queues[4 * size_t(n_layers)], t);
  }

  // hb = SwiGLU(gate, up) over rows [r0, r1) of every position.
  void Swiglu(int r0, int r1) const {
    const int hidden = c_.hidden_dim;
    for (int i = 0; i < rows_; ++i) {
      float* g = b_.hb + size_t(i) * hidden;
      const float* u = b_.hb2 + size_t(i) * hidden;
#pragma omp simd
      for (int r = r0; r < r1; ++r) g[r] = SwiGlu(g[r], u[r]);
    }
  }

  // Attention of layer l for KV heads [kv0, kv1) of sequence s over its cache of
  // element type E: rope their queries and keys, store the keys and values (rounded to
  // E) at its start_pos.., attend with their query heads (thread t).
  template <class E>
  void Attend(int l, int t, int kv0, int kv1, const SequenceLayout& s) const {
    const LayerWeights& L = model_.layers[l];
    const int hd = c_.head_dim(), q_dim = c_.q_dim(), kv_dim = c_.kv_dim(), group = c_.n_heads / c_.n_kv_heads;
    const int h0 = kv0 * group, h1 = kv1 * group;  // this thread's q heads [h0, h1), kv heads [kv0, kv1)
    for (int i = 0; i < s.n; ++i) {
      const int r = s.row + i;  // batch row
      const float* cs = &b_.rope_cos[size_t(r) * hd / 2];
      const float* sn = &b_.rope_sin[size_t(r) * hd / 2];
      float* qi = b_.q + size_t(r) * q_dim;   // [q_dim]
      float* ki = b_.k + size_t(r) * kv_dim;  // [kv_dim]
      float* vi = b_.v + size_t(r) * kv_dim;  // [kv_dim]
      if (!L.bq.empty())                      // qwen2: the projections' biases
        for (int e = h0 * hd; e < h1 * hd; ++e) qi[e] += L.bq[e];
      if (!L.bk.empty())
        for (int e = kv0 * hd; e < kv1 * hd; ++e) ki[e] += L.bk[e], vi[e] += L.bv[e];
      if (!L.q_norm.empty()) {  // qwen3: each head normed before RoPE
        for (int h = h0; h < h1; ++h)
          CheckNorm(RmsNorm(qi + h * hd, qi + h * hd, L.q_norm.data(), hd, c_.norm_eps), t, l, r, Overflow::kHeadNorm,
                    h);
        for (int kh = kv0; kh < kv1; ++kh)
          CheckNorm(RmsNorm(ki + kh * hd, ki + kh * hd, L.k_norm.data(), hd, c_.norm_eps), t, l, r, Overflow::kHeadNorm,
                    kh);
      }
      Rope(qi + h0 * hd, h1 - h0, hd, cs, sn);
      Rope(ki + kv0 * hd, kv1 - kv0, hd, cs, sn);
      for (int kh = kv0; kh < kv1; ++kh) {
        StoreRow(ki + kh * hd, hd, s.cache->K<E>(l, kh, s.start_pos + i));
        StoreRow(vi + kh * hd, hd, s.cache->V<E>(l, kh, s.start_pos + i));
      }
    }
    for (int h = h0; h < h1; ++h) AttendQueryHead<E>(l, t, h, s);
  }

  // Query head h of layer l at every row of sequence s. Its query i sees positions
  // [0, start_pos + i] (a tree node: the sequence before the tree and its ancestors); a
  // run of consecutive queries shares every key and value row it reads. Thread t notes
  // non-finite scores.
  template <class E>
  void AttendQueryHead(int l, int t, int h, const SequenceLayout& s) const {
    const int hd = c_.head_dim(), q_dim = c_.q_dim(), group = c_.n_heads / c_.n_kv_heads;
    const E* kc = s.cache->K<E>(l, h / group, 0);  // [ctx][hd]
    const E* vc = s.cache->V<E>(l, h / group, 0);  // [ctx][hd]
    const size_t at = size_t(s.row) * q_dim + size_t(h) * hd;
    // Its rows in the batch: queries and outputs [n][q_dim], scores [n][n_heads][ctx].
    const HeadRows rows{.q = b_.q + at,
                        .q_stride = size_t(q_dim),
                        .scores = b_.scores + s.scores + size_t(h) * s.ctx,
                        .s_stride = size_t(c_.n_heads) * s.ctx,
                        .out = b_.att_out + at,
                        .o_stride = size_t(q_dim)};
    const int bad = AttendRuns<E>(&batch_.runs[s.run0], s.run1 - s.run0, kc, vc, hd, rows);
    if (bad >= 0) Note(t, {l, Overflow::kScores, s.start_pos + bad, h, 0.0f, batch_.row_seq[s.row]});
  }

  const Runtime& rt_;
  const Model& model_;
  const ModelConfig& c_;
  const BatchLayout& batch_;
  const int rows_;  // of every sequence
  KVCache::Scratch& scratch_;
  const ForwardBuffers b_;
  const std::span<Overflow> overflows_;  // [team] each thread's first non-finite value
  const std::function<void(int, int)> swiglu_ = [this](int r0, int r1) { Swiglu(r0, r1); };
};

// Threads for `rows` positions whose longest context is ctx (ForwardTeamSize).
int TeamSize(const Runtime& rt, const Model& model, int rows, int ctx) {
  const int max_threads = rt.threads;
  if (max_threads <= 1 || rt.team == TeamPolicy::kSerial) return 1;
  if (rt.team == TeamPolicy::kFull) return max_threads;
  const LayerWeights& L = model.layers[0];
  double elems = 0;  // multiply-adds per position of the layer's products
  for (const QMatrix* W : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3}) elems += double(W->rows) * W->cols;
  const double attention = 2.0 * rows * ctx * model.config.dim;
  return double(rows) * elems + attention >= kTeamLayerMacs ? max_threads : 1;
}

}  // namespace

// A team pays for itself only when each of a layer's 5 barrier intervals holds enough
// work: the multiply-adds of one layer for n positions (its products, plus attention's
// scores and weighted values over the context) against kTeamLayerMacs
// (docs/measurements.md, "Per-call overhead and thread waiting", has the measurement).
// Tiny models decode several times faster on one thread than through the team's
// barriers and wake-ups.
int ForwardTeamSize(const Runtime& rt, const Model& model, int n, int start_pos) {
  return TeamSize(rt, model, n, start_pos + n);
}

std::span<const float> Forward(const Runtime& rt, const Model& model, std::span<const int> tokens, int start_pos,
                               KVCache& cache, bool all_logits, std::span<const int> parents) {
  const SequenceCall call{tokens, start_pos, &cache, all_logits, parents};
  return ForwardBatch(rt, model, std::span(&call, 1), cache.scratch)[0];
}

// One OpenMP region per call. Every thread walks all layers: the products split their
// row chunks over the team (MatMulsTeam), attention splits by KV head, SwiGLU follows
// each chunk of gate and up rows (MatMulsZippedTeam); each is followed by a barrier,
// which costs a third of the fork/join it replaces (5 per layer; docs/measurements.md,
// "Per-call overhead and thread waiting"). The small per-position steps between (norms,
// residual adds, activation quantization) every thread computes for itself into its own
// buffers (Scratch::Own) with the same code on the same inputs, so the copies are equal
// and nobody waits for a single thread to do them. The team follows the total rows and
// the longest context (attention per sequence costs at most that).
std::vector<std::span<const float>> ForwardBatch(const Runtime& rt, const Model& model,
                                                 std::span<const SequenceCall> calls, KVCache::Scratch& scratch) {
  const ModelConfig& c = model.config;
  const BatchLayout batch = PrepareBatch(model, calls, GroupQueries(c.head_dim()), scratch.tree_rows);
  const int threads = TeamSize(rt, model, batch.rows, batch.max_ctx);
  const ForwardBuffers b = GrowBuffers(scratch, c, batch, threads);
  RopeTables(c, batch, b.rope_cos, b.rope_sin);
  ResetQueues(rt.kernels, model, batch.n_layers, b, scratch, threads);
  std::vector<Overflow> overflows(threads);
  const ForwardPass pass(rt, model, batch, scratch, b, overflows);
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    pass.Team(omp_get_thread_num(), omp_get_num_threads());
  } else {
    pass.Team(0, 1);  // no OpenMP region at all; the barriers above are then no-ops
  }
  for (const SequenceLayout& s : batch.seqs) s.cache->SetLength(s.ctx);
  FailOnOverflow(model, overflows, calls.size() > 1);
  std::vector<std::span<const float>> logits;  // [B] each [n - first][vocab]
  for (const SequenceLayout& s : batch.seqs)
    logits.emplace_back(b.logits + size_t(s.logit_row) * c.vocab_size, size_t(s.n - s.first) * c.vocab_size);
  return logits;
}

}  // namespace specsweep
