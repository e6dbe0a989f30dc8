// llama2.c legacy checkpoint: 7 int32 header fields, then F32 tensors in a fixed order.
// A negative vocab_size means the classifier is stored separately after the weights.
#include <cstring>
#include <vector>

#include "base/error.h"
#include "models/limits.h"
#include "models/loader.h"
#include "models/mapped_file.h"

namespace specsweep {

Model LoadLlama2cCheckpoint(const std::string& path) {
  MappedFile f(path);
  constexpr size_t kHeader = 7 * sizeof(int32_t);
  if (f.size() < kHeader) Fail("{}: header: file has {} bytes, the header needs {}", path, f.size(), kHeader);
  int32_t h[7];
  std::memcpy(h, f.data(), kHeader);
  Model m;
  ModelConfig& c = m.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  const bool shared_classifier = h[5] > 0;
  // Negated in 64 bits: -INT_MIN does not fit an int (Validate then rejects the size).
  const int64_t vocab = h[5] > 0 ? int64_t{h[5]} : -int64_t{h[5]};
  if (vocab < 1 || vocab > kMaxVocab) Fail("{}: vocab_size: {} is out of range (1..{})", path, h[5], kMaxVocab);
  c.vocab_size = static_cast<int>(vocab);
  c.max_seq_len = h[6];
  c.norm_eps = 1e-5f;  // llama2.c's fixed epsilon
  c.rope_theta = 10000.0f;
  c.bos_id = 1;
  c.eos_id = 2;
  c.bos_stops = true;  // TinyStories stories end with BOS (models/config.h)
  c.Validate(path);

  const size_t dim = c.dim, hd = c.head_dim(), kv = c.kv_dim(), hid = c.hidden_dim, L = c.n_layers,
               V = c.vocab_size, T = c.max_seq_len;
  // Float counts of every section, in file order.
  struct Section { const char* name; size_t rows, cols, count; };
  std::vector<Section> sections = {
      {"token_embedding_table", V, dim, 1}, {"rms_att_weight", 1, dim, L},
      {"wq", dim, dim, L},                  {"wk", kv, dim, L},
      {"wv", kv, dim, L},                   {"wo", dim, dim, L},
      {"rms_ffn_weight", 1, dim, L},        {"w1", hid, dim, L},
      {"w2", dim, hid, L},                  {"w3", hid, dim, L},
      {"rms_final_weight", 1, dim, 1},      {"freq_cis_real", T, hd / 2, 1},
      {"freq_cis_imag", T, hd / 2, 1}};
  if (!shared_classifier) sections.push_back({"wcls", V, dim, 1});
  size_t expected = kHeader;
  for (auto& s : sections) expected += s.rows * s.cols * s.count * sizeof(float);
  if (f.size() != expected)
    Fail("{}: size: file has {} bytes but the header (dim {}, layers {}, vocab {}) implies {}{}", path,
         f.size(), c.dim, c.n_layers, h[5], expected, f.size() < expected ? " (truncated)" : "");

  const float* p = reinterpret_cast<const float*>(f.data() + kHeader);
  // Sections are read in file order, so the current one names a non-finite weight.
  const char* section = "";
  auto matrix = [&](size_t rows, size_t cols) {
    CheckFinite({p, rows * cols}, path, section);
    QMatrix q = Quantize(p, static_cast<int>(rows), static_cast<int>(cols), QType::F32);
    p += rows * cols;
    return q;
  };
  auto vec = [&](size_t count) {
    CheckFinite({p, count}, path, section);
    std::vector<float> v(p, p + count);
    p += count;
    return v;
  };
  m.layers.resize(L);
  section = "token_embedding_table";
  m.tok_embeddings = matrix(V, dim);
  section = "rms_att_weight";
  for (auto& l : m.layers) l.attn_norm = vec(dim);
  section = "wq";
  for (auto& l : m.layers) l.wq = matrix(dim, dim);
  section = "wk";
  for (auto& l : m.layers) l.wk = matrix(kv, dim);
  section = "wv";
  for (auto& l : m.layers) l.wv = matrix(kv, dim);
  section = "wo";
  for (auto& l : m.layers) l.wo = matrix(dim, dim);
  section = "rms_ffn_weight";
  for (auto& l : m.layers) l.ffn_norm = vec(dim);
  section = "w1";
  for (auto& l : m.layers) l.w1 = matrix(hid, dim);
  section = "w2";
  for (auto& l : m.layers) l.w2 = matrix(dim, hid);
  section = "w3";
  for (auto& l : m.layers) l.w3 = matrix(hid, dim);
  section = "rms_final_weight";
  m.final_norm = vec(dim);
  p += 2 * T * (hd / 2);  // legacy RoPE tables: recomputed in Forward
  m.tied_embeddings = shared_classifier;
  section = "wcls";
  m.output = shared_classifier ? m.tok_embeddings : matrix(V, dim);

  m.source.format = "llama2c";
  m.source.path = path;
  m.source.files = {path};
  for (auto& s : sections) {
    TensorRecord r{s.name, {}, "F32", s.rows * s.cols * s.count * sizeof(float)};
    if (s.count > 1) r.shape.push_back(static_cast<int64_t>(s.count));
    if (s.rows > 1) r.shape.push_back(static_cast<int64_t>(s.rows));
    r.shape.push_back(static_cast<int64_t>(s.cols));
    m.source.tensors.push_back(std::move(r));
  }
  return m;
}

}  // namespace specsweep
