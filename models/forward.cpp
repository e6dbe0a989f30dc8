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

template <class Vec>
auto* Grow(Vec& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
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
  if (cache.kv_dim() != kv_dim || cache.n_layers() > c.n_layers)
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
    // of the batch. Per KV head it walks the cache position by position: the head's rows
    // are contiguous (head-major cache), so its keys, then its values, stream once per
    // call for the whole batch. Every score and output element is the same fixed-order
    // reduction over t whatever the split, so the result is independent of the batch
    // and of the thread count.
    const int parts = std::min(n_heads, NumThreads());
#pragma omp parallel for schedule(static) if (size_t(n) * n_heads * ctx * hd > 32768)
    for (int part = 0; part < parts; ++part) {
      const int h0 = n_heads * part / parts, h1 = n_heads * (part + 1) / parts;
      // Calls f(kv_head, first query head, end query head) for the task's KV heads.
      auto for_kv_heads = [&](auto&& f) {
        for (int kh = h0 / group; kh * group < h1; ++kh) f(kh, std::max(h0, kh * group), std::min(h1, (kh + 1) * group));
      };
      for_kv_heads([&](int kh, int ha, int hz) {
        for (int t = 0; t < ctx; ++t) {
          const float* kt = cache.K(l, kh, t);                    // [hd]
          for (int i = std::max(0, t - start_pos); i < n; ++i) {  // positions that see t
            const float* qi = q + size_t(i) * dim;                // [n_heads*hd]
            float* sc = scores + size_t(i) * n_heads * ctx;       // [n_heads][ctx]
            for (int h = ha; h < hz; ++h) sc[size_t(h) * ctx + t] = Dot(qi + h * hd, kt, hd) * att_scale;
          }
        }
      });
      for (int i = 0; i < n; ++i) {
        const int pos = start_pos + i;
        for (int h = h0; h < h1; ++h) {  // softmax over t <= pos, normalised in place
          float* sh = scores + (size_t(i) * n_heads + h) * ctx;  // [pos+1]
          float max_s = -INFINITY;
          for (int t = 0; t <= pos; ++t) max_s = std::max(max_s, sh[t]);
          for (int t = 0; t <= pos; ++t) sh[t] = ExpF(sh[t] - max_s);
          float sum = 0.0f;
          for (int t = 0; t <= pos; ++t) sum += sh[t];
          const float inv = 1.0f / sum;
          for (int t = 0; t <= pos; ++t) sh[t] *= inv;
        }
        std::fill(att_out + size_t(i) * dim + h0 * hd, att_out + size_t(i) * dim + h1 * hd, 0.0f);
      }
      for_kv_heads([&](int kh, int ha, int hz) {
        for (int t = 0; t < ctx; ++t) {
          const float* vt = cache.V(l, kh, t);  // [hd]
          for (int i = std::max(0, t - start_pos); i < n; ++i) {
            const float* sc = scores + size_t(i) * n_heads * ctx;  // [n_heads][ctx]
            float* out = att_out + size_t(i) * dim;                 // [n_heads*hd]
            for (int h = ha; h < hz; ++h) {
              const float w = sc[size_t(h) * ctx + t];
              float* oh = out + h * hd;
              for (int e = 0; e < hd; ++e) oh[e] += w * vt[e];
            }
          }
        }
      });
    }
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
#pragma omp parallel for simd schedule(static) if (ffn_elems >= 8192)
    for (long e = 0; e < ffn_elems; ++e) hb[e] = SwiGlu(hb[e], hb2[e]);
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
