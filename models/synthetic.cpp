#include "models/synthetic.h"

#include <cmath>
#include <random>
#include <vector>

#include "base/status_line.h"

namespace specsweep {
namespace {

QMatrix RandomMatrix(std::mt19937_64& rng, int rows, int cols, QType type = QType::F32) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const float a = 1.0f / std::sqrt(static_cast<float>(cols));
  std::vector<float> w(static_cast<size_t>(rows) * cols);  // [rows][cols]
  for (float& x : w) x = a * u(rng);
  return Quantize(w.data(), rows, cols, type);
}

std::vector<float> RandomNorm(std::mt19937_64& rng, int n, float lo = 0.8f, float hi = 1.2f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> g(n);  // [n]
  for (float& x : g) x = u(rng);
  return g;
}

}  // namespace

Model MakeSyntheticModel(const ModelConfig& c, uint64_t seed, QType type) {
  c.Validate("synthetic model");
  std::mt19937_64 rng(seed);
  Model m;
  m.config = c;
  m.source.format = "synthetic";
  m.source.path = "synthetic(seed=" + std::to_string(seed) + ")";
  const int hd = c.head_dim();
  // Embedding rows scaled up so activations are O(1) like a trained model.
  m.tok_embeddings = RandomMatrix(rng, c.vocab_size, c.dim, IsQuantized(type) ? QType::F32 : type);
  for (int l = 0; l < c.n_layers; ++l) {
    ReportProgress("random weights", l + 1, c.n_layers + 2, "");  // after the embedding, before the classifier
    LayerWeights L;
    L.attn_norm = RandomNorm(rng, c.dim);
    L.wq = RandomMatrix(rng, c.n_heads * hd, c.dim, type);
    L.wk = RandomMatrix(rng, c.kv_dim(), c.dim, type);
    L.wv = RandomMatrix(rng, c.kv_dim(), c.dim, type);
    if (c.qkv_bias) {
      L.bq = RandomNorm(rng, c.q_dim(), -0.5f, 0.5f);
      L.bk = RandomNorm(rng, c.kv_dim(), -0.5f, 0.5f);
      L.bv = RandomNorm(rng, c.kv_dim(), -0.5f, 0.5f);
    }
    if (c.qk_norm) {
      L.q_norm = RandomNorm(rng, hd);
      L.k_norm = RandomNorm(rng, hd);
    }
    L.wo = RandomMatrix(rng, c.dim, c.n_heads * hd, type);
    L.ffn_norm = RandomNorm(rng, c.dim);
    L.w1 = RandomMatrix(rng, c.hidden_dim, c.dim, type);
    L.w2 = RandomMatrix(rng, c.dim, c.hidden_dim, type);
    L.w3 = RandomMatrix(rng, c.hidden_dim, c.dim, type);
    m.layers.push_back(std::move(L));
  }
  m.final_norm = RandomNorm(rng, c.dim);
  // Separate classifier with larger scale so the next-token distribution is peaked
  // enough for sampling tests to be informative.
  m.output = RandomMatrix(rng, c.vocab_size, c.dim, type);
  ReportProgress("random weights", c.n_layers + 2, c.n_layers + 2, "");
  return m;
}

ModelConfig TinyTestConfig() {
  ModelConfig c;
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 128;
  c.max_seq_len = 128;
  c.norm_eps = 1e-5f;
  c.bos_id = 1;
  c.eos_id = 2;
  return c;
}

}  // namespace specsweep
