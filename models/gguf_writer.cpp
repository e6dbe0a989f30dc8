// GGUF v3 writer for the llama, qwen2 and qwen3 architectures. The header (metadata + tensor infos) is
// built in memory; tensor data is streamed from the Model's matrices, so writing a
// large model needs no second copy of its weights.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "base/status_line.h"
#include "models/gguf.h"
#include "quant/packed.h"

namespace specsweep {
namespace {

constexpr uint32_t kAlignment = 32;

// Little-endian byte sink for the header.
struct Buf {
  std::string b;
  template <typename T>
  void Put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void Str(std::string_view s) {
    Put<uint64_t>(s.size());
    b.append(s);
  }
  void Key(std::string_view k, GgufValueType t) {
    Str(k);
    Put<uint32_t>(static_cast<uint32_t>(t));
  }
};

// The metadata section, counting its entries.
struct Kv {
  Buf buf;
  uint64_t count = 0;
  void U32(std::string_view k, uint32_t v) {
    buf.Key(k, GgufValueType::U32);
    buf.Put(v);
    ++count;
  }
  void F32(std::string_view k, float v) {
    buf.Key(k, GgufValueType::F32);
    buf.Put(v);
    ++count;
  }
  void Bool(std::string_view k, bool v) {
    buf.Key(k, GgufValueType::BOOL);
    buf.Put<uint8_t>(v);
    ++count;
  }
  void Str(std::string_view k, std::string_view v) {
    buf.Key(k, GgufValueType::STRING);
    buf.Str(v);
    ++count;
  }
  void ArrayHead(std::string_view k, GgufValueType elem, uint64_t n) {
    buf.Key(k, GgufValueType::ARRAY);
    buf.Put(static_cast<uint32_t>(elem));
    buf.Put(n);
    ++count;
  }
};

// One tensor to write: either a matrix (rows of row_bytes, possibly padded in memory
// beyond the ggml row size) or a float vector.
struct Pending {
  std::string name;
  GgmlType type;
  std::vector<uint64_t> ne;  // ggml order
  const QMatrix* m = nullptr;
  std::vector<int> order;  // stored row k is the matrix's row order[k]; empty: identity
  const std::vector<float>* v = nullptr;
  uint64_t bytes = 0;   // ggml size
  uint64_t offset = 0;  // in the data section
  std::string note;
};

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Ggml row size of a matrix stored as `t` (no padding: cols % block == 0 here).
uint64_t GgmlRowBytes(QType t, int cols) { return static_cast<uint64_t>(cols) / BlockSize(t) * BlockBytes(t); }

class File {
 public:
  File(const std::string& path, const std::string& name) : name_(name) {
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_) Fail("{}: cannot create: {}", name_, std::strerror(errno));
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  }
  ~File() {
    if (f_) std::fclose(f_);
  }
  void Write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) Fail("{}: write failed: {}", name_, std::strerror(errno));
    pos_ += n;
  }
  void PadTo(uint64_t pos) {
    static const char zeros[64] = {};
    while (pos_ < pos) Write(zeros, std::min<uint64_t>(sizeof zeros, pos - pos_));
  }
  void Close() {
    int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) Fail("{}: close failed: {}", name_, std::strerror(errno));
  }
  uint64_t pos() const { return pos_; }

 private:
  std::FILE* f_ = nullptr;
  std::string name_;
  uint64_t pos_ = 0;
};

// The tensors to write, in llama.cpp's convert order, with the copies some need:
// padded block-quantized matrices (not made by QuantizeModel, which follows StoredQType
// and never pads) are re-encoded as F16, since GGUF rows cannot be padded, and vectors of
// qwen2/qwen3 q/k rows are permuted to HF order. Deques keep the copies' addresses.
class TensorList {
 public:
  TensorList(const ModelConfig& c, const std::string& path)
      : path_(path), hd_(c.head_dim()), neox_(c.arch != "llama") {}

  void AddMatrix(const std::string& name, const QMatrix& m, bool rope_rows = false) {
    Pending p;
    p.name = name;
    p.m = &m;
    if (rope_rows && neox_) p.order = HfOrder(m.rows);
    if (m.layout != Layout::kRows) {  // GGUF holds ggml rows
      converted_.push_back(packed::Unpack(m));
      p.m = &converted_.back();
    }
    if (m.padded()) {                                         // F16 holds the padded matrix's values exactly
      ToGgmlType(m.type, path_ + ": tensor '" + name + "'");  // Q4_G64/G128 remain an error
      converted_.push_back(Convert(*p.m, QType::F16));
      p.m = &converted_.back();
      p.note = fmt::format("{} with {} columns (not a multiple of {}): written as F16", QTypeName(m.type), m.cols,
                           BlockSize(m.type));
    }
    p.type = ToGgmlType(p.m->type, path_ + ": tensor '" + name + "'");
    any_quantized_ |= IsQuantized(p.m->type);
    p.ne = {static_cast<uint64_t>(m.cols), static_cast<uint64_t>(m.rows)};
    p.bytes = GgmlRowBytes(p.m->type, m.cols) * m.rows;
    tensors_.push_back(std::move(p));
  }
  void AddVector(const std::string& name, const std::vector<float>& v, bool rope_rows = false) {
    Pending p;
    p.name = name;
    p.type = GgmlType::F32;
    p.v = &v;
    if (rope_rows && neox_) {
      const std::vector<int> order = HfOrder(int(v.size()));
      std::vector<float> hf(v.size());
      for (size_t k = 0; k < v.size(); ++k) hf[k] = v[order[k]];
      permuted_.push_back(std::move(hf));
      p.v = &permuted_.back();
    }
    p.ne = {v.size()};
    p.bytes = v.size() * sizeof(float);
    tensors_.push_back(std::move(p));
  }
  void CheckShape(const std::string& name, const QMatrix& m, int rows, int cols) const {
    if (m.rows != rows || m.cols != cols)
      Fail("{}: tensor '{}': matrix is [{}][{}], config expects [{}][{}]", path_, name, m.rows, m.cols, rows, cols);
  }
  void CheckLen(const std::string& name, const std::vector<float>& v, int n) const {
    if (v.size() != static_cast<size_t>(n))
      Fail("{}: tensor '{}': {} elements, config expects {}", path_, name, v.size(), n);
  }

  std::vector<Pending>& tensors() { return tensors_; }
  const std::vector<Pending>& tensors() const { return tensors_; }
  bool any_quantized() const { return any_quantized_; }

 private:
  // qwen2/qwen3 files keep HF's rotate_half order of q/k rows (llama.cpp ropes them in
  // NEOX mode); llama files the interleaved order we hold.
  std::vector<int> HfOrder(int rows) const {
    std::vector<int> order(rows);
    for (int k = 0; k < rows; ++k) order[k] = k / hd_ * hd_ + RopeRowOfHf(k % hd_, hd_);
    return order;
  }

  const std::string& path_;
  const int hd_;
  const bool neox_;
  std::deque<QMatrix> converted_;
  std::deque<std::vector<float>> permuted_;  // vectors written in HF order
  std::vector<Pending> tensors_;
  bool any_quantized_ = false;
};

// The tokenizer's vocabulary with one entry per embedding row.
Vocab PaddedVocab(const ModelConfig& c, const Tokenizer& tokenizer, const std::string& path) {
  Vocab vocab = tokenizer.ExportVocab();
  if (vocab.pieces.size() > static_cast<size_t>(c.vocab_size))
    Fail("{}: tokenizer.ggml.tokens: tokenizer has {} pieces but the model's vocab_size is {}", path,
         vocab.pieces.size(), c.vocab_size);
  // Embedding rows past the tokenizer's ids (Qwen2.5 pads to a multiple of 128) get
  // unused "[PAD<id>]" pieces, as llama.cpp's converter writes them: GGUF has one table.
  for (int id = static_cast<int>(vocab.pieces.size()); id < c.vocab_size; ++id) {
    vocab.pieces.push_back(fmt::format("[PAD{}]", id));
    vocab.scores.push_back(0.0f);
    vocab.types.push_back(TokenType::Unused);
  }
  const size_t nv = vocab.pieces.size();
  if (vocab.scores.size() != nv || vocab.types.size() != nv)
    Fail("{}: tokenizer.ggml.scores: vocabulary has {} pieces, {} scores, {} types", path, nv, vocab.scores.size(),
         vocab.types.size());
  return vocab;
}

// One transformer block's tensors, shapes checked against the config.
void AddLayer(TensorList& t, const ModelConfig& c, const LayerWeights& L, int l, const std::string& path) {
  const int hd = c.head_dim();
  const std::string p = "blk." + std::to_string(l) + ".";
  t.CheckLen(p + "attn_norm.weight", L.attn_norm, c.dim);
  t.CheckLen(p + "ffn_norm.weight", L.ffn_norm, c.dim);
  t.CheckShape(p + "attn_q.weight", L.wq, c.q_dim(), c.dim);
  t.CheckShape(p + "attn_k.weight", L.wk, c.kv_dim(), c.dim);
  t.CheckShape(p + "attn_v.weight", L.wv, c.kv_dim(), c.dim);
  t.CheckShape(p + "attn_output.weight", L.wo, c.dim, c.q_dim());
  t.CheckShape(p + "ffn_gate.weight", L.w1, c.hidden_dim, c.dim);
  t.CheckShape(p + "ffn_down.weight", L.w2, c.dim, c.hidden_dim);
  t.CheckShape(p + "ffn_up.weight", L.w3, c.hidden_dim, c.dim);
  t.AddVector(p + "attn_norm.weight", L.attn_norm);
  t.AddMatrix(p + "attn_q.weight", L.wq, true);
  t.AddMatrix(p + "attn_k.weight", L.wk, true);
  t.AddMatrix(p + "attn_v.weight", L.wv);
  if (c.qkv_bias) {
    t.CheckLen(p + "attn_q.bias", L.bq, c.q_dim());
    t.CheckLen(p + "attn_k.bias", L.bk, c.kv_dim());
    t.CheckLen(p + "attn_v.bias", L.bv, c.kv_dim());
    t.AddVector(p + "attn_q.bias", L.bq, true);
    t.AddVector(p + "attn_k.bias", L.bk, true);
    t.AddVector(p + "attn_v.bias", L.bv);
  } else if (!L.bq.empty() || !L.bk.empty() || !L.bv.empty()) {
    Fail("{}: tensor '{}': {} has no q/k/v biases", path, p + "attn_q.bias", c.arch);
  }
  if (c.qk_norm) {
    t.CheckLen(p + "attn_q_norm.weight", L.q_norm, hd);
    t.CheckLen(p + "attn_k_norm.weight", L.k_norm, hd);
    t.AddVector(p + "attn_q_norm.weight", L.q_norm, true);
    t.AddVector(p + "attn_k_norm.weight", L.k_norm, true);
  } else if (!L.q_norm.empty() || !L.k_norm.empty()) {
    Fail("{}: tensor '{}': {} has no q/k norms", path, p + "attn_q_norm.weight", c.arch);
  }
  t.AddMatrix(p + "attn_output.weight", L.wo);
  t.AddVector(p + "ffn_norm.weight", L.ffn_norm);
  t.AddMatrix(p + "ffn_gate.weight", L.w1);
  t.AddMatrix(p + "ffn_down.weight", L.w2);
  t.AddMatrix(p + "ffn_up.weight", L.w3);
}

// Every tensor of the model, checked against its config.
void AddTensors(TensorList& t, const Model& model, const std::string& path) {
  const ModelConfig& c = model.config;
  if (model.layers.size() != static_cast<size_t>(c.n_layers))
    Fail("{}: llama.block_count: model has {} layers, config says {}", path, model.layers.size(), c.n_layers);
  t.CheckShape("token_embd.weight", model.tok_embeddings, c.vocab_size, c.dim);
  t.AddMatrix("token_embd.weight", model.tok_embeddings);
  if (c.rope_scaling == "llama3") {  // llama.cpp's form of llama3 scaling
    if (c.arch != "llama") Fail("{}: rope_freqs.weight: llama3 RoPE scaling needs the llama architecture", path);
    t.CheckLen("rope_freqs.weight", c.rope_freq_factors, c.head_dim() / 2);
    t.AddVector("rope_freqs.weight", c.rope_freq_factors);
  }
  for (int l = 0; l < c.n_layers; ++l) AddLayer(t, c, model.layers[l], l, path);
  t.CheckLen("output_norm.weight", model.final_norm, c.dim);
  t.AddVector("output_norm.weight", model.final_norm);
  t.CheckShape("output.weight", model.output, c.vocab_size, c.dim);
  auto same_as_embedding = [&] {  // compared as ggml rows (a loaded tied embedding has the classifier's layout)
    const QMatrix o = packed::Unpack(model.output), e = packed::Unpack(model.tok_embeddings);
    return o.type == e.type && o.bytes() == e.bytes() && std::memcmp(o.data.data(), e.data.data(), e.bytes()) == 0;
  };
  const bool tied = model.tied_embeddings && same_as_embedding();
  if (!tied) t.AddMatrix("output.weight", model.output);
}

// The hyper-parameters under ggml's per-architecture keys.
void PutHyperParameters(Kv& kv, const ModelConfig& c) {
  const int hd = c.head_dim();
  const std::string a = c.arch + ".";
  kv.U32(a + "context_length", c.max_seq_len);
  kv.U32(a + "embedding_length", c.dim);
  kv.U32(a + "block_count", c.n_layers);
  kv.U32(a + "feed_forward_length", c.hidden_dim);
  kv.U32(a + "attention.head_count", c.n_heads);
  kv.U32(a + "attention.head_count_kv", c.n_kv_heads);
  if (c.head_size > 0) {
    kv.U32(a + "attention.key_length", hd);
    kv.U32(a + "attention.value_length", hd);
  }
  kv.F32(a + "attention.layer_norm_rms_epsilon", c.norm_eps);
  kv.F32(a + "rope.freq_base", c.rope_theta);
  kv.U32(a + "rope.dimension_count", hd);
  if (c.rope_scaling == "linear") {
    kv.Str(a + "rope.scaling.type", "linear");
    kv.F32(a + "rope.scaling.factor", c.rope_scaling_factor);
  }
  kv.U32(a + "vocab_size", c.vocab_size);
}

void PutVocab(Kv& kv, const Vocab& vocab, const std::string& path) {
  const size_t nv = vocab.pieces.size();
  kv.Str("tokenizer.ggml.model", vocab.model);
  if (vocab.model == "gpt2") {
    if (vocab.pre.empty())
      Fail(
          "{}: tokenizer.ggml.pre: the tokenizer's pipeline (normalizer, pre-tokenizer, ignore_merges, added "
          "tokens) is none of the llama.cpp pre-tokenizers (llama-bpe, qwen2, gpt2)",
          path);
    kv.Str("tokenizer.ggml.pre", vocab.pre);
    kv.ArrayHead("tokenizer.ggml.merges", GgufValueType::STRING, vocab.merges.size());
    for (const auto& m : vocab.merges) kv.buf.Str(m);
  }
  kv.ArrayHead("tokenizer.ggml.tokens", GgufValueType::STRING, nv);
  for (const auto& s : vocab.pieces) kv.buf.Str(s);
  kv.ArrayHead("tokenizer.ggml.scores", GgufValueType::F32, nv);
  for (float s : vocab.scores) kv.buf.Put(s);
  kv.ArrayHead("tokenizer.ggml.token_type", GgufValueType::I32, nv);
  for (TokenType t : vocab.types) kv.buf.Put(static_cast<int32_t>(t));
  kv.U32("tokenizer.ggml.bos_token_id", vocab.bos_id);
  kv.U32("tokenizer.ggml.eos_token_id", vocab.eos_id);
  kv.U32("tokenizer.ggml.unknown_token_id", vocab.unk_id);
  kv.Bool("tokenizer.ggml.add_bos_token", vocab.add_bos);
}

Kv Metadata(const ModelConfig& c, const Vocab& vocab, bool any_quantized, const std::string& path) {
  Kv kv;
  kv.Str("general.architecture", c.arch);
  kv.Str("general.name", std::filesystem::path(path).stem().string());
  kv.U32("general.alignment", kAlignment);
  if (any_quantized) kv.U32("general.quantization_version", 2);  // ggml block layout version
  PutHyperParameters(kv, c);
  PutVocab(kv, vocab, path);
  return kv;
}

// Magic, counts, metadata and tensor infos; sets each tensor's offset and returns the
// data section's size.
uint64_t BuildHeader(Buf& head, std::vector<Pending>& tensors, const Kv& kv) {
  head.Put<uint32_t>(0x46554747u);  // "GGUF"
  head.Put<uint32_t>(3);
  head.Put<uint64_t>(tensors.size());
  head.Put<uint64_t>(kv.count);
  head.b += kv.buf.b;
  uint64_t off = 0;
  for (auto& t : tensors) {
    t.offset = off;
    off = AlignUp(off + t.bytes, kAlignment);
    head.Str(t.name);
    head.Put<uint32_t>(t.ne.size());
    for (uint64_t n : t.ne) head.Put(n);
    head.Put(static_cast<uint32_t>(t.type));
    head.Put(t.offset);
  }
  return off;
}

void WriteTensorData(File& f, const Pending& t) {
  if (t.v) {
    f.Write(t.v->data(), t.bytes);
    return;
  }
  const QMatrix& m = *t.m;
  const uint64_t rb = GgmlRowBytes(m.type, m.cols);
  if (rb == m.row_bytes && t.order.empty()) {
    f.Write(m.data.data(), t.bytes);
  } else {
    for (int r = 0; r < m.rows; ++r) f.Write(m.Row(t.order.empty() ? r : t.order[r]), rb);
  }
}

// Temp file + rename: a failed or interrupted write never leaves a truncated model.
void WriteFile(const std::string& path, const Buf& head, const std::vector<Pending>& tensors, uint64_t data_size) {
  const std::string tmp = path + ".tmp";
  try {
    File f(tmp, path);
    f.Write(head.b.data(), head.b.size());
    const uint64_t data_start = AlignUp(f.pos(), kAlignment);
    f.PadTo(data_start);
    const std::string writing = "writing " + std::filesystem::path(path).filename().string();
    for (const auto& t : tensors) {
      ReportBytes(writing, t.offset, data_size);
      f.PadTo(data_start + t.offset);
      WriteTensorData(f, t);
    }
    ReportBytes(writing, data_size, data_size);
    f.Close();
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) Fail("{}: cannot rename {}: {}", path, tmp, ec.message());
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

}  // namespace

std::vector<GgufWrittenTensor> WriteGguf(const Model& model, const Tokenizer& tokenizer, const std::string& path) {
  const ModelConfig& c = model.config;
  c.Validate(path);
  const Vocab vocab = PaddedVocab(c, tokenizer, path);
  TensorList list(c, path);
  AddTensors(list, model, path);
  const Kv kv = Metadata(c, vocab, list.any_quantized(), path);
  Buf head;
  const uint64_t data_size = BuildHeader(head, list.tensors(), kv);
  WriteFile(path, head, list.tensors(), data_size);

  std::vector<GgufWrittenTensor> out;
  for (const auto& t : list.tensors())
    out.push_back({t.name, std::string(GgmlTypeName(static_cast<uint32_t>(t.type))), t.ne, t.bytes, t.note});
  return out;
}

}  // namespace specsweep
