// The Llama forward pass, batched over n positions (decode n=1, prefill, verify K+1).
// Every per-element reduction has a fixed order and is computed per position, so a
// position's logits do not depend on n or on the thread count (see quant/matmul.h).
#include "models/forward.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
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

// body(part) for part in [0, parts): split over the OpenMP team when `parallel`, else a
// plain loop. Small work must not enter an OpenMP region at all: even an if(false)
// region allocates a team and wakes a futex per call, and the serial SwiGLU of a 134M
// Q4_0 decode step took 20 us per layer that way against 3 us in a plain loop.
template <class F>
void ForParts(int parts, bool parallel, F&& body) {
  if (parallel) {
#pragma omp parallel for schedule(static)
    for (int part = 0; part < parts; ++part) body(part);
  } else {
    for (int part = 0; part < parts; ++part) body(part);
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
template <int HD>
void AttendHead(const float* q, const float* k, const float* v, int len, float scale, int hd, float* sh,
                float* out) {
  const int d = HD > 0 ? HD : hd;
  for (int t = 0; t < len; ++t) sh[t] = Dot(q, k + size_t(t) * d, d) * scale;
  Softmax(sh, len);
  float local[HD > 0 ? HD : 1];  // [HD] the output row, in registers
  float* o = HD > 0 ? local : out;
  std::fill(o, o + d, 0.0f);
  for (int t = 0; t < len; ++t)
    for (int e = 0; e < d; ++e) o[e] += sh[t] * v[size_t(t) * d + e];
  if (HD > 0) std::copy_n(local, d, out);
}

}  // namespace

std::span<const float> Forward(const Model& model, std::span<const int> tokens, int start_pos,
                               KVCache& cache, bool all_logits) {
  const ModelConfig& c = model.config;
  const int n = static_cast<int>(tokens.size());
  const int dim = c.dim, hd = c.head_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim;
  const int n_heads = c.n_heads, group = c.n_heads / c.n_kv_heads;
  if (n <= 0) Fail("forward: tokens: empty batch");
  if (start_pos != cache.length())
    Fail("forward: start_pos: {} but the cache holds {} positions", start_pos, cache.length());
  if (start_pos + n > cache.capacity())
    Fail("forward: context: {} positions exceed the context length {}", start_pos + n,
         cache.capacity());
  if (cache.n_kv_heads() != c.n_kv_heads || cache.head_dim() != hd || cache.n_layers() > c.n_layers)
    Fail("forward: cache: built for another model shape");
  for (int t : tokens)
    if (t < 0 || t >= c.vocab_size) Fail("forward: token: id {} outside vocabulary [0, {})", t, c.vocab_size);

  auto& s = cache.scratch;
  float* x = Grow(s.x, size_t(n) * dim);              // [n][dim] residual stream
  float* xb = Grow(s.xb, size_t(n) * dim);            // [n][dim] normed input
  float* q = Grow(s.q, size_t(n) * dim);              // [n][n_heads*hd]
  float* k = Grow(s.k, size_t(n) * kv_dim);           // [n][kv_dim]
  float* v = Grow(s.v, size_t(n) * kv_dim);           // [n][kv_dim]
  float* att_out = Grow(s.att_out, size_t(n) * dim);  // [n][n_heads*hd]
  float* hb = Grow(s.hb, size_t(n) * hidden);         // [n][hidden] gate
  float* hb2 = Grow(s.hb2, size_t(n) * hidden);       // [n][hidden] up
  const int ctx = start_pos + n;
  float* scores = Grow(s.scores, size_t(n) * n_heads * ctx);  // [n][n_heads][ctx]
  float* rope_cos = Grow(s.rope_cos, size_t(n) * hd / 2);  // [n][hd/2]
  float* rope_sin = Grow(s.rope_sin, size_t(n) * hd / 2);  // [n][hd/2]

  for (int i = 0; i < n; ++i) {
    DequantizeRow(model.tok_embeddings, tokens[i], x + size_t(i) * dim);
    const int pos = start_pos + i;
    for (int j = 0; j < hd / 2; ++j) {
      const float freq = 1.0f / std::pow(c.rope_theta, static_cast<float>(2 * j) / static_cast<float>(hd));
      const float angle = static_cast<float>(pos) * freq;
      rope_cos[size_t(i) * hd / 2 + j] = std::cos(angle);
      rope_sin[size_t(i) * hd / 2 + j] = std::sin(angle);
    }
  }

  const float att_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int l = 0; l < cache.n_layers(); ++l) {
    const LayerWeights& L = model.layers[l];
    // Attention block.
    for (int i = 0; i < n; ++i)
      RmsNorm(xb + size_t(i) * dim, x + size_t(i) * dim, L.attn_norm.data(), dim, c.norm_eps);
    const MatMulTarget qkv[] = {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}};
    MatMuls(qkv, xb, n);
    for (int i = 0; i < n; ++i) {
      const float* cs = &rope_cos[size_t(i) * hd / 2];
      const float* sn = &rope_sin[size_t(i) * hd / 2];
      Rope(q + size_t(i) * dim, n_heads, hd, cs, sn);
      Rope(k + size_t(i) * kv_dim, c.n_kv_heads, hd, cs, sn);
      for (int kh = 0; kh < c.n_kv_heads; ++kh) {
        std::copy_n(k + size_t(i) * kv_dim + kh * hd, hd, cache.K(l, kh, start_pos + i));
        std::copy_n(v + size_t(i) * kv_dim + kh * hd, hd, cache.V(l, kh, start_pos + i));
      }
    }
    // Causal attention. A task is a contiguous range of query heads for every position
    // of the batch; per head and position it walks that KV head's rows, contiguous in
    // the head-major cache (re-read from L1/L2 by the other positions and heads of the
    // group). Every score and output element is the same fixed-order reduction over t
    // whatever the split, so the result is independent of the batch and the thread count.
    const int parts = std::min(n_heads, NumThreads());
    ForParts(parts, size_t(n) * n_heads * ctx * hd > 32768, [&](int part) {
      for (int h = n_heads * part / parts; h < n_heads * (part + 1) / parts; ++h) {
        const float* kc = cache.K(l, h / group, 0);  // [ctx][hd]
        const float* vc = cache.V(l, h / group, 0);  // [ctx][hd]
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
    });
    MatMul(L.wo, att_out, n, xb);
    for (size_t e = 0; e < size_t(n) * dim; ++e) x[e] += xb[e];

    // SwiGLU feed-forward block.
    for (int i = 0; i < n; ++i)
      RmsNorm(xb + size_t(i) * dim, x + size_t(i) * dim, L.ffn_norm.data(), dim, c.norm_eps);
    const MatMulTarget gate_up[] = {{&L.w1, hb}, {&L.w3, hb2}};
    MatMuls(gate_up, xb, n);
    // Element-wise, so splitting it over threads cannot change a value; only worth a
    // fork/join for verification/prefill batches.
    const long ffn_elems = long(n) * hidden;
    const int ffn_parts = NumThreads();
    ForParts(ffn_parts, ffn_elems >= 8192, [&](int part) {
      const long e1 = ffn_elems * (part + 1) / ffn_parts;
#pragma omp simd
      for (long e = ffn_elems * part / ffn_parts; e < e1; ++e) hb[e] = SwiGlu(hb[e], hb2[e]);
    });
    MatMul(L.w2, hb, n, xb);
    for (size_t e = 0; e < size_t(n) * dim; ++e) x[e] += xb[e];
  }
  cache.SetLength(start_pos + n);

  // Classifier over the requested positions only (prefill needs just the last).
  const int first = all_logits ? 0 : n - 1, m = n - first;
  for (int i = first; i < n; ++i)
    RmsNorm(xb + size_t(i - first) * dim, x + size_t(i) * dim, model.final_norm.data(), dim, c.norm_eps);
  float* logits = Grow(s.logits, size_t(m) * c.vocab_size);  // [m][vocab]
  MatMul(model.output, xb, m, logits);
  return {logits, size_t(m) * c.vocab_size};
}

}  // namespace specsweep
