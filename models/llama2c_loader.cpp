// llama2.c legacy checkpoint: 7 int32 header fields, then F32 tensors in a fixed order.
// A negative vocab_size means the classifier is stored separately after the weights.
#include <cstring>
#include <vector>

#include "base/error.h"
#include "models/limits.h"
#include "models/loader.h"
#include "models/mapped_file.h"

namespace specsweep {

namespace {

constexpr size_t kHeader = 7 * sizeof(int32_t);

// The header's 7 fields; the sign of vocab_size says whether the classifier is the
// embedding (positive) or stored after the weights.
struct Header {
  ModelConfig config;
  bool shared_classifier = false;
  int32_t vocab_field = 0;  // as stored (errors)
};

Header ReadHeader(const MappedFile& f, const std::string& path) {
  if (f.size() < kHeader) Fail("{}: header: file has {} bytes, the header needs {}", path, f.size(), kHeader);
  int32_t h[7];
  std::memcpy(h, f.data(), kHeader);
  Header out;
  ModelConfig& c = out.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  out.shared_classifier = h[5] > 0;
  out.vocab_field = h[5];
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
  return out;
}

// Float counts of every section, in file order.
struct Section {
  const char* name;
  size_t rows, cols, count;
};

std::vector<Section> Sections(const ModelConfig& c, bool shared_classifier) {
  const size_t dim = c.dim, hd = c.head_dim(), kv = c.kv_dim(), hid = c.hidden_dim, L = c.n_layers, V = c.vocab_size,
               T = c.max_seq_len;
  std::vector<Section> sections = {{"token_embedding_table", V, dim, 1},
                                   {"rms_att_weight", 1, dim, L},
                                   {"wq", dim, dim, L},
                                   {"wk", kv, dim, L},
                                   {"wv", kv, dim, L},
                                   {"wo", dim, dim, L},
                                   {"rms_ffn_weight", 1, dim, L},
                                   {"w1", hid, dim, L},
                                   {"w2", dim, hid, L},
                                   {"w3", hid, dim, L},
                                   {"rms_final_weight", 1, dim, 1},
                                   {"freq_cis_real", T, hd / 2, 1},
                                   {"freq_cis_imag", T, hd / 2, 1}};
  if (!shared_classifier) sections.push_back({"wcls", V, dim, 1});
  return sections;
}

// Reads the sections in file order, so the current one names a non-finite weight.
struct SectionReader {
  const float* p;
  const std::string& path;
  const char* section = "";

  QMatrix Matrix(size_t rows, size_t cols) {
    CheckFinite({p, rows * cols}, path, section);
    QMatrix q = Quantize(p, static_cast<int>(rows), static_cast<int>(cols), QType::F32);
    p += rows * cols;
    return q;
  }
  std::vector<float> Vec(size_t count) {
    CheckFinite({p, count}, path, section);
    std::vector<float> v(p, p + count);
    p += count;
    return v;
  }
};

void ReadWeights(SectionReader& r, bool shared_classifier, Model& m) {
  const ModelConfig& c = m.config;
  const size_t dim = c.dim, hd = c.head_dim(), kv = c.kv_dim(), hid = c.hidden_dim, V = c.vocab_size, T = c.max_seq_len;
  m.layers.resize(c.n_layers);
  r.section = "token_embedding_table";
  m.tok_embeddings = r.Matrix(V, dim);
  r.section = "rms_att_weight";
  for (auto& l : m.layers) l.attn_norm = r.Vec(dim);
  r.section = "wq";
  for (auto& l : m.layers) l.wq = r.Matrix(dim, dim);
  r.section = "wk";
  for (auto& l : m.layers) l.wk = r.Matrix(kv, dim);
  r.section = "wv";
  for (auto& l : m.layers) l.wv = r.Matrix(kv, dim);
  r.section = "wo";
  for (auto& l : m.layers) l.wo = r.Matrix(dim, dim);
  r.section = "rms_ffn_weight";
  for (auto& l : m.layers) l.ffn_norm = r.Vec(dim);
  r.section = "w1";
  for (auto& l : m.layers) l.w1 = r.Matrix(hid, dim);
  r.section = "w2";
  for (auto& l : m.layers) l.w2 = r.Matrix(dim, hid);
  r.section = "w3";
  for (auto& l : m.layers) l.w3 = r.Matrix(hid, dim);
  r.section = "rms_final_weight";
  m.final_norm = r.Vec(dim);
  r.p += 2 * T * (hd / 2);  // legacy RoPE tables: recomputed in Forward
  m.tied_embeddings = shared_classifier;
  r.section = "wcls";
  m.output = shared_classifier ? m.tok_embeddings : r.Matrix(V, dim);
}

}  // namespace

Model LoadLlama2cCheckpoint(const std::string& path) {
  MappedFile f(path);
  const Header h = ReadHeader(f, path);
  Model m;
  m.config = h.config;
  const ModelConfig& c = m.config;
  const std::vector<Section> sections = Sections(c, h.shared_classifier);
  size_t expected = kHeader;
  for (auto& s : sections) expected += s.rows * s.cols * s.count * sizeof(float);
  if (f.size() != expected)
    Fail("{}: size: file has {} bytes but the header (dim {}, layers {}, vocab {}) implies {}{}", path, f.size(), c.dim,
         c.n_layers, h.vocab_field, expected, f.size() < expected ? " (truncated)" : "");

  SectionReader reader{reinterpret_cast<const float*>(f.data() + kHeader), path};
  ReadWeights(reader, h.shared_classifier, m);

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
