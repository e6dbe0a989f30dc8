// The Llama forward pass, batched over n positions (decode n=1, prefill, verify K+1).
// Every per-element reduction has a fixed order and is computed per position, so a
// position's logits do not depend on n or on the thread count (see quant/matmul.h).
#include "models/forward.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "models/error.h"
#include "models/vec_ops.h"
#include "quant/matmul.h"

namespace specsweep {

void SetNumThreads(int n) { omp_set_num_threads(n > 0 ? n : omp_get_num_procs()); }
int NumThreads() { return omp_get_max_threads(); }

namespace {

// out[dim] = x[dim] / rms(x) * g[dim]
void RmsNorm(float* out, const float* x, const float* g, int dim, float eps) {
  const float ss = Dot(x, x, dim);
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
  for (int i = 0; i < dim; ++i) out[i] = x[i] * scale * g[i];
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

// Softmax over sh[0..len) in place.
void Softmax(float* sh, int len) {
  // The maximum in 8 lanes, then across them: max is exact, so any order gives the same
  // value (a zero's sign aside, which cannot change exp(sh[t] - max_s)).
  Lanes8 m8 = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int t8 = 0;
  for (; t8 + 8 <= len; t8 += 8) {
    const Lanes8 s8 = LoadLanes8(sh + t8);
    m8 = m8 < s8 ? s8 : m8;
  }
  float max_s = -INFINITY;
  for (int j = 0; j < 8; ++j) max_s = std::max(max_s, m8[j]);
  for (int t = t8; t < len; ++t) max_s = std::max(max_s, sh[t]);
  for (int t = 0; t < len; ++t) sh[t] = ExpF(sh[t] - max_s);
  float sum = 0.0f;
  for (int t = 0; t < len; ++t) sum += sh[t];
  const float inv = 1.0f / sum;
  for (int t = 0; t < len; ++t) sh[t] *= inv;
}

// One query head at one position: sh[t] = q.k_t * scale for t < len, softmax, then
// out = sum_t sh[t] v_t accumulated in t order. k and v are one KV head's rows of
// consecutive positions ([len][HD], contiguous in the head-major cache). HD > 0 fixes
// the head size at compile time so the output row stays in registers; the arithmetic is
// the same for every HD, so results never depend on which version ran.
template <int HD, class E>
void AttendHead(const float* q, const E* k, const E* v, int len, float scale, int hd, float* sh,
                float* out) {
  const int d = HD > 0 ? HD : hd;
  for (int t = 0; t < len; ++t) sh[t] = Dot(q, k + size_t(t) * d, d) * scale;
  Softmax(sh, len);
  if constexpr (HD > 0) {
    // The output row in HD / 16 vector registers (as a float array GCC kept it on the
    // stack, a store-forwarding round trip per t); each element's arithmetic is the
    // same multiply, then add, in t order.
    static_assert(HD % 16 == 0);
    Lanes16 o[HD / 16] = {};  // [HD]
    for (int t = 0; t < len; ++t) {
      const E* vt = v + size_t(t) * HD;
      #pragma GCC unroll 16
      for (int j = 0; j < HD / 16; ++j) o[j] += sh[t] * LoadLanes16(vt + 16 * j);
    }
    std::memcpy(out, o, sizeof o);
  } else {
    std::fill(out, out + d, 0.0f);
    for (int t = 0; t < len; ++t)
      for (int e = 0; e < d; ++e) out[e] += sh[t] * ToFloat(v[size_t(t) * d + e]);
  }
}

// The matrix products of one layer in forward order; each list shares one input.
struct LayerProducts {
  MatMulTarget qkv[3], wo[1], gate_up[2], w2[1];
};

// Threads for a forward pass of n positions after start_pos: a team only pays when the
// layer's products are worth splitting or attention is big (n x context); tiny models
// decode faster on one thread than through ~6 barriers per layer.
int TeamSize(const Model& model, int n, int start_pos) {
  const LayerWeights& L = model.layers[0];
  const size_t biggest = std::max({L.wq.bytes() + L.wk.bytes() + L.wv.bytes(), L.wo.bytes(),
                                   L.w1.bytes() + L.w3.bytes(), L.w2.bytes()});
  const size_t attention = size_t(n) * (start_pos + n) * model.config.dim;  // scores' multiply-adds per layer
  return WorthSplitting(biggest) || attention >= 32768 ? NumThreads() : 1;
}

}  // namespace

// One OpenMP region per call. Every thread walks all layers: the products split their
// row chunks over the team (MatMulsTeam), attention splits by KV head, SwiGLU by
// element; each is followed by a barrier, which costs a third of the fork/join it
// replaces (0.5 vs 1.4 us here; 6 per layer). The small per-position steps
// between (norms, residual adds, activation quantization) every thread computes for
// itself into its own buffers (Scratch::Own) with the same code on the same inputs, so
// the copies are equal and nobody waits for a single thread to do them.
std::span<const float> Forward(const Model& model, std::span<const int> tokens, int start_pos,
                               KVCache& cache, bool all_logits) {
  const ModelConfig& c = model.config;
  const int n = static_cast<int>(tokens.size());
  const int dim = c.dim, hd = c.head_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim;
  const int n_heads = c.n_heads, n_kv = c.n_kv_heads, group = c.n_heads / c.n_kv_heads;
  const int n_layers = cache.n_layers();
  if (n <= 0) Fail("forward: tokens: empty batch");
  if (start_pos != cache.length())
    Fail("forward: start_pos: {} but the cache holds {} positions", start_pos, cache.length());
  if (start_pos + n > cache.capacity())
    Fail("forward: context: {} positions exceed the context length {}", start_pos + n,
         cache.capacity());
  if (cache.n_kv_heads() != n_kv || cache.head_dim() != hd || n_layers > c.n_layers)
    Fail("forward: cache: built for another model shape");
  for (int t : tokens)
    if (t < 0 || t >= c.vocab_size) Fail("forward: token: id {} outside vocabulary [0, {})", t, c.vocab_size);

  const int threads = TeamSize(model, n, start_pos);
  auto& s = cache.scratch;
  // Shared by the team.
  float* q = Grow(s.q, size_t(n) * dim);              // [n][n_heads*hd]
  float* k = Grow(s.k, size_t(n) * kv_dim);           // [n][kv_dim]
  float* v = Grow(s.v, size_t(n) * kv_dim);           // [n][kv_dim]
  float* att_out = Grow(s.att_out, size_t(n) * dim);  // [n][n_heads*hd]
  float* ob = Grow(s.ob, size_t(n) * dim);            // [n][dim] output of wo, then of w2
  float* hb = Grow(s.hb, size_t(n) * hidden);         // [n][hidden] gate, then SwiGLU
  float* hb2 = Grow(s.hb2, size_t(n) * hidden);       // [n][hidden] up
  const int ctx = start_pos + n;
  float* scores = Grow(s.scores, size_t(n) * n_heads * ctx);  // [n][n_heads][ctx]
  float* rope_cos = Grow(s.rope_cos, size_t(n) * hd / 2);     // [n][hd/2]
  float* rope_sin = Grow(s.rope_sin, size_t(n) * hd / 2);     // [n][hd/2]
  const int first = all_logits ? 0 : n - 1, m = n - first;    // positions that get logits
  float* logits = Grow(s.logits, size_t(m) * c.vocab_size);   // [m][vocab]
  // Each thread's own.
  if (s.own.size() < size_t(threads)) s.own.resize(threads);
  for (int t = 0; t < threads; ++t) {
    Grow(s.own[t].x, size_t(n) * dim);   // [n][dim] residual stream
    Grow(s.own[t].xb, size_t(n) * dim);  // [n][dim] normed input of a product
  }

  for (int i = 0; i < n; ++i) {
    const int pos = start_pos + i;
    for (int j = 0; j < hd / 2; ++j) {
      const float freq = 1.0f / std::pow(c.rope_theta, static_cast<float>(2 * j) / static_cast<float>(hd));
      const float angle = static_cast<float>(pos) * freq;
      rope_cos[size_t(i) * hd / 2 + j] = std::cos(angle);
      rope_sin[size_t(i) * hd / 2 + j] = std::sin(angle);
    }
  }

  // Every product's chunk queue is set before the region: inside it, resetting one
  // would need a barrier of its own.
  auto products = [&](const LayerWeights& L) {
    return LayerProducts{{{&L.wq, q}, {&L.wk, k}, {&L.wv, v}}, {{&L.wo, ob}}, {{&L.w1, hb}, {&L.w3, hb2}}, {{&L.w2, ob}}};
  };
  const MatMulTarget classifier[] = {{&model.output, logits}};
  const size_t n_queues = 4 * size_t(n_layers) + 1;
  if (s.n_queues < n_queues) s.queues = std::make_unique<ChunkQueue[]>(s.n_queues = n_queues);
  for (int l = 0; l < n_layers; ++l) {
    const LayerProducts P = products(model.layers[l]);
    ChunkQueue* lq = &s.queues[4 * size_t(l)];
    lq[0].Reset(MatMulChunks(P.qkv), threads);
    lq[1].Reset(MatMulChunks(P.wo), threads);
    lq[2].Reset(MatMulChunks(P.gate_up), threads);
    lq[3].Reset(MatMulChunks(P.w2), threads);
  }
  s.queues[4 * size_t(n_layers)].Reset(MatMulChunks(classifier), threads);

  const float att_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Attention of layer l for KV heads [kv0, kv1) over a cache of element type E: rope
  // their queries and keys, store the keys and values (rounded to E) at start_pos..,
  // attend with their query heads.
  auto attend = [&]<class E>(int l, int kv0, int kv1) {
    for (int i = 0; i < n; ++i) {
      const float* cs = &rope_cos[size_t(i) * hd / 2];
      const float* sn = &rope_sin[size_t(i) * hd / 2];
      Rope(q + size_t(i) * dim + kv0 * group * hd, (kv1 - kv0) * group, hd, cs, sn);
      Rope(k + size_t(i) * kv_dim + kv0 * hd, kv1 - kv0, hd, cs, sn);
      for (int kh = kv0; kh < kv1; ++kh) {
        StoreRow(k + size_t(i) * kv_dim + kh * hd, hd, cache.K<E>(l, kh, start_pos + i));
        StoreRow(v + size_t(i) * kv_dim + kh * hd, hd, cache.V<E>(l, kh, start_pos + i));
      }
    }
    for (int h = kv0 * group; h < kv1 * group; ++h) {
      const E* kc = cache.K<E>(l, h / group, 0);  // [ctx][hd]
      const E* vc = cache.V<E>(l, h / group, 0);  // [ctx][hd]
      for (int i = 0; i < n; ++i) {
        const float* qh = q + size_t(i) * dim + h * hd;        // [hd]
        float* sh = scores + (size_t(i) * n_heads + h) * ctx;  // [ctx]
        float* oh = att_out + size_t(i) * dim + h * hd;        // [hd]
        const int len = start_pos + i + 1;                     // positions i sees
        if (hd == 64) AttendHead<64>(qh, kc, vc, len, att_scale, hd, sh, oh);
        else if (hd == 128) AttendHead<128>(qh, kc, vc, len, att_scale, hd, sh, oh);
        else AttendHead<0>(qh, kc, vc, len, att_scale, hd, sh, oh);
      }
    }
  };
  // t of nt threads (nt may fall short of `threads`: the queues' stealing covers
  // the products, and the other splits below use nt).
  auto team = [&](int t, int nt) {
    const int att_parts = std::min(n_kv, nt);
    float* x = s.own[t].x.data();    // [n][dim]
    float* xb = s.own[t].xb.data();  // [n][dim]
    for (int i = 0; i < n; ++i) DequantizeRow(model.tok_embeddings, tokens[i], x + size_t(i) * dim);
    for (int l = 0; l < n_layers; ++l) {
      const LayerWeights& L = model.layers[l];
      const LayerProducts P = products(L);
      ChunkQueue* lq = &s.queues[4 * size_t(l)];
      // Attention block.
      for (int i = 0; i < n; ++i)
        RmsNorm(xb + size_t(i) * dim, x + size_t(i) * dim, L.attn_norm.data(), dim, c.norm_eps);
      MatMulsTeam(P.qkv, xb, n, lq[0], t);
#pragma omp barrier
      // Causal attention, a contiguous range of KV heads per thread. The thread ropes
      // and caches the keys/values of its KV heads and attends with their query heads,
      // so nothing it writes here is read by another thread before the next barrier.
      // Per head and position it walks that KV head's rows, contiguous in the head-major
      // cache. Every score and output element is the same fixed-order reduction over t
      // whatever the split, so the result is independent of the batch and the team.
      if (t < att_parts) {
        const int kv0 = n_kv * t / att_parts, kv1 = n_kv * (t + 1) / att_parts;
        if (cache.type() == KvType::F16) attend.template operator()<uint16_t>(l, kv0, kv1);
        else attend.template operator()<float>(l, kv0, kv1);
      }
#pragma omp barrier
      MatMulsTeam(P.wo, att_out, n, lq[1], t);
#pragma omp barrier
      for (size_t e = 0; e < size_t(n) * dim; ++e) x[e] += ob[e];

      // SwiGLU feed-forward block.
      for (int i = 0; i < n; ++i)
        RmsNorm(xb + size_t(i) * dim, x + size_t(i) * dim, L.ffn_norm.data(), dim, c.norm_eps);
      MatMulsTeam(P.gate_up, xb, n, lq[2], t);
#pragma omp barrier
      const long ffn_elems = long(n) * hidden, e1 = ffn_elems * (t + 1) / nt;
#pragma omp simd
      for (long e = ffn_elems * t / nt; e < e1; ++e) hb[e] = SwiGlu(hb[e], hb2[e]);
#pragma omp barrier
      MatMulsTeam(P.w2, hb, n, lq[3], t);
#pragma omp barrier
      for (size_t e = 0; e < size_t(n) * dim; ++e) x[e] += ob[e];
    }
    // Classifier over the requested positions only (prefill needs just the last).
    for (int i = first; i < n; ++i)
      RmsNorm(xb + size_t(i - first) * dim, x + size_t(i) * dim, model.final_norm.data(), dim, c.norm_eps);
    MatMulsTeam(classifier, xb, m, s.queues[4 * size_t(n_layers)], t);
  };
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    team(omp_get_thread_num(), omp_get_num_threads());
  } else {
    team(0, 1);  // no OpenMP region at all; the barriers above are then no-ops
  }
  cache.SetLength(start_pos + n);
  return {logits, size_t(m) * c.vocab_size};
}

}  // namespace specsweep
