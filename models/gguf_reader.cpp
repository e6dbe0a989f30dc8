// GGUF "llama" loader: the hyper-parameters from the metadata, then the tensor data
// copied (or viewed) out of the memory-mapped file into Model matrices. The header
// parser is gguf_header.cpp, the tokenizer gguf_vocab.cpp.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "base/error.h"
#include "base/status_line.h"
#include "models/gguf.h"
#include "models/gguf_meta.h"
#include "models/limits.h"
#include "models/loader.h"
#include "models/mapped_file.h"
#include "quant/huge_pages.h"
#include "quant/matmul.h"

namespace specsweep {
namespace {

using gguf_detail::Geometry;
using gguf_detail::GgmlGeometry;
using gguf_detail::Meta;

// The rope scaling of rope.scaling.type (llama3 scaling comes as a tensor instead).
void ReadRopeScaling(const Meta& meta, const std::string& arch, const std::string& path, ModelConfig& c) {
  auto key = [&](const char* k) { return arch + "." + k; };
  if (!meta.Find(key("rope.scaling.type"))) return;
  const std::string type = meta.String(key("rope.scaling.type"));
  if (type == "linear") {
    c.rope_scaling = "linear";
    c.rope_scaling_factor = meta.Float(key("rope.scaling.factor"));
  } else if (type != "none") {
    Fail("{}: {}: '{}' is not supported (none, linear; llama3 scaling comes as rope_freqs.weight)", path,
         key("rope.scaling.type"), type);
  }
}

// Hyper-parameters under "<arch>." as ggml names them.
ModelConfig ReadConfig(const Meta& meta, const std::string& arch, const Vocab& vocab, const std::string& path) {
  auto key = [&](const char* k) { return arch + "." + k; };
  ModelConfig c;
  c.arch = arch;
  c.qkv_bias = arch == "qwen2";
  c.qk_norm = arch == "qwen3";
  c.max_seq_len = meta.Int(key("context_length"));
  c.dim = meta.Int(key("embedding_length"));
  c.n_layers = meta.Int(key("block_count"));
  c.hidden_dim = meta.Int(key("feed_forward_length"));
  c.n_heads = meta.Int(key("attention.head_count"));
  c.n_kv_heads = meta.Int(key("attention.head_count_kv"), c.n_heads);  // llama.cpp default: MHA
  c.head_size = meta.Int(key("attention.key_length"), 0);
  if (int vl = meta.Int(key("attention.value_length"), c.head_size); vl != c.head_size)
    Fail("{}: {}: {} != attention.key_length {} is not supported", path, key("attention.value_length"), vl,
         c.head_size);
  c.norm_eps = meta.Float(key("attention.layer_norm_rms_epsilon"));
  c.rope_theta = meta.Float(key("rope.freq_base"), 10000.0f);
  c.vocab_size = meta.Int(key("vocab_size"), static_cast<int>(vocab.pieces.size()));
  c.bos_id = vocab.bos_id;
  c.eos_id = vocab.eos_id;
  if (static_cast<size_t>(c.vocab_size) != vocab.pieces.size())
    Fail("{}: {}: {} but tokenizer.ggml.tokens has {} pieces", path, key("vocab_size"), c.vocab_size,
         vocab.pieces.size());
  ReadRopeScaling(meta, arch, path, c);
  c.Validate(path);
  const int hd = c.head_dim();
  if (int rd = meta.Int(key("rope.dimension_count"), hd); rd != hd)
    Fail("{}: {}: {} != head dimension {} (partial RoPE is not supported)", path, key("rope.dimension_count"), rd, hd);
  return c;
}

// One matrix to load: ne = [cols, rows] -> QMatrix [rows][cols] in the file's type, our
// row r from the stored row row_of(r).
struct MatrixJob {
  const GgufTensorInfo* ti;
  int rows, cols;
  std::function<int(int)> row_of;  // empty: identity
  bool pack;                       // multiplied (PackForKernels), not only gathered
  QMatrix* out;
};

// The file's tensors by name: each looked up with its expected shape and marked used.
// Vectors are read at once; matrices are checked and queued as jobs, which run later in
// parallel.
class TensorTable {
 public:
  TensorTable(const GgufHeader& h, const MappedFile& mf, const std::string& path)
      : h_(h), data_(mf.data() + h.data_offset), path_(path) {
    for (const auto& ti : h.tensors) by_name_[ti.name] = &ti;
  }
  bool Has(const std::string& name) const { return by_name_.count(name) > 0; }
  const uint8_t* data() const { return data_; }

  const GgufTensorInfo* Find(const std::string& name, std::vector<uint64_t> ne, bool required) {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) {
      if (required) Fail("{}: tensor '{}': required tensor is missing", path_, name);
      return nullptr;
    }
    if (it->second->ne != ne)
      Fail("{}: tensor '{}': shape [{}] does not match the config (expected [{}])", path_, name,
           fmt::join(it->second->ne, ", "), fmt::join(ne, ", "));
    used_.insert(name);
    return it->second;
  }

  // 1-D float tensors [n] -> F32; row_of(i) gives the stored element of our element i.
  template <typename RowOf>
  std::vector<float> Vector(const std::string& name, int n, RowOf row_of) {
    const GgufTensorInfo* ti = Find(name, {uint64_t(n)}, true);
    GgmlGeometry g{};
    Geometry(ti->type, &g);
    if (IsQuantized(g.qtype))
      Fail("{}: tensor '{}'.type: a norm weight or bias must be F32, F16 or BF16, not {}", path_, name,
           GgmlTypeName(ti->type));
    QMatrix q = MakeQMatrix(g.qtype, 1, n);
    std::memcpy(q.Row(0), data_ + ti->offset, ti->bytes);
    std::vector<float> stored(n), out(n);  // [n]
    DequantizeRow(q, 0, stored.data());
    for (int i = 0; i < n; ++i) out[i] = stored[row_of(i)];
    CheckFinite(out, path_, name);
    return out;
  }
  std::vector<float> Vector(const std::string& name, int n) {
    return Vector(name, n, [](int r) { return r; });
  }

  void Matrix(QMatrix* out, const std::string& name, int rows, int cols, std::function<int(int)> row_of,
              bool pack = true) {
    jobs_.push_back({Find(name, {uint64_t(cols), uint64_t(rows)}, true), rows, cols, std::move(row_of), pack, out});
  }
  std::vector<MatrixJob>& jobs() { return jobs_; }

  // A tensor the architecture does not use (a bias llama has no place for, a layer
  // beyond block_count, ...) would be silently dropped: refuse it.
  void CheckAllUsed(const std::string& arch) const {
    for (const auto& ti : h_.tensors)
      if (!used_.count(ti.name)) Fail("{}: tensor '{}': not used by the {} architecture", path_, ti.name, arch);
  }

 private:
  const GgufHeader& h_;
  const uint8_t* data_;
  const std::string& path_;
  std::map<std::string, const GgufTensorInfo*> by_name_;
  std::set<std::string> used_;
  std::vector<MatrixJob> jobs_;
};

// rope_freqs.weight: llama3 frequency factors (convert_hf_to_gguf writes them as a tensor).
void ReadRopeFreqs(TensorTable& t, const std::string& path, ModelConfig& c) {
  if (!t.Has("rope_freqs.weight")) return;
  if (c.arch != "llama") Fail("{}: tensor 'rope_freqs.weight': not used by the {} architecture", path, c.arch);
  if (c.rope_scaling != "none")
    Fail("{}: tensor 'rope_freqs.weight': given together with {} scaling", path, c.rope_scaling);
  c.rope_scaling = "llama3";
  c.rope_freq_factors = t.Vector("rope_freqs.weight", c.head_dim() / 2);
}

// A matrix whose stored rows need no reordering and are aligned is read straight from
// the map: packing that re-lays it out copies it once, onto huge pages; one kept in the
// file's layout is a view into the map (no copy), unless the kernels stream it and a copy
// would be on huge pages (docs/measurements.md, "GGUF weights: views or huge-page
// copies"). Reordered rows are copied into an uninitialized buffer first. The source
// pages of a copy are then dropped (the page cache keeps them), so loading never holds
// two copies. Packing from the map rather than from a first copy halves the fresh memory
// a load faults in (docs/performance.md, "generate against bench-forward").
void LoadMatrix(const MatrixJob& j, const std::shared_ptr<const MappedFile>& file, const uint8_t* data,
                const std::string& path) {
  const MappedFile& mf = *file;
  const std::string& name = j.ti->name;
  GgmlGeometry g{};
  Geometry(j.ti->type, &g);
  const uint8_t* src = data + j.ti->offset;
  const size_t row_bytes = static_cast<size_t>(j.cols) / g.block * g.bytes;
  if (j.pack) mf.Populate(src, j.ti->bytes);  // read whole: map it in one call
  QMatrix rows;
  if (!j.row_of && reinterpret_cast<uintptr_t>(src) % 32 == 0) {
    rows = MakeQMatrix(g.qtype, j.rows, j.cols, AlignedBuffer::View(src, j.ti->bytes, file));
  } else {
    rows = MakeQMatrix(g.qtype, j.rows, j.cols, AlignedBuffer::Uninitialized(j.ti->bytes));
    for (int r = 0; r < j.rows; ++r)
      std::memcpy(rows.Row(r), src + size_t(j.row_of ? j.row_of(r) : r) * row_bytes, row_bytes);
  }
  if (rows.row_bytes != row_bytes) Fail("{}: tensor '{}': internal row size mismatch", path, name);
  CheckFinite(rows, path, name);
  QMatrix q = j.pack ? PackForKernels(rows) : std::move(rows);
  const bool view = std::as_const(q.data).data() == src;
  if (view && j.pack && UninitializedOnHugePages(j.ti->bytes)) (void)q.data.data();  // copy on write: huge pages
  if (std::as_const(q.data).data() != src) mf.Release(src, j.ti->bytes);             // not a view: copied out
  *j.out = std::move(q);
}

// Block l's vectors (read now) and matrices (queued). llama files hold q/k rows
// interleaved (the converter permutes them); qwen2/qwen3 files keep HF's rotate_half
// order, which qk_row permutes here.
void QueueLayer(TensorTable& t, const ModelConfig& c, int l, const std::function<int(int)>& qk_row, LayerWeights& L) {
  const int hd = c.head_dim();
  const std::function<int(int)> identity_row;  // empty: identity
  auto qk_vec = [&](int r) { return qk_row ? qk_row(r) : r; };
  const std::string p = "blk." + std::to_string(l) + ".";
  L.attn_norm = t.Vector(p + "attn_norm.weight", c.dim);
  t.Matrix(&L.wq, p + "attn_q.weight", c.q_dim(), c.dim, qk_row);
  t.Matrix(&L.wk, p + "attn_k.weight", c.kv_dim(), c.dim, qk_row);
  t.Matrix(&L.wv, p + "attn_v.weight", c.kv_dim(), c.dim, identity_row);
  if (c.qkv_bias) {
    L.bq = t.Vector(p + "attn_q.bias", c.q_dim(), qk_vec);
    L.bk = t.Vector(p + "attn_k.bias", c.kv_dim(), qk_vec);
    L.bv = t.Vector(p + "attn_v.bias", c.kv_dim());
  }
  if (c.qk_norm) {
    L.q_norm = t.Vector(p + "attn_q_norm.weight", hd, qk_vec);
    L.k_norm = t.Vector(p + "attn_k_norm.weight", hd, qk_vec);
  }
  t.Matrix(&L.wo, p + "attn_output.weight", c.dim, c.q_dim(), identity_row);
  L.ffn_norm = t.Vector(p + "ffn_norm.weight", c.dim);
  t.Matrix(&L.w1, p + "ffn_gate.weight", c.hidden_dim, c.dim, identity_row);
  t.Matrix(&L.w2, p + "ffn_down.weight", c.dim, c.hidden_dim, identity_row);
  t.Matrix(&L.w3, p + "ffn_up.weight", c.hidden_dim, c.dim, identity_row);
}

// Every weight of the model: vectors read, matrices queued in the table's jobs.
void QueueWeights(TensorTable& t, Model& m) {
  const ModelConfig& c = m.config;
  const int hd = c.head_dim();
  std::function<int(int)> qk_row, identity_row;  // empty: identity
  if (c.arch != "llama") qk_row = [hd](int r) { return r / hd * hd + HfRopeRow(r % hd, hd); };
  t.Matrix(&m.tok_embeddings, "token_embd.weight", c.vocab_size, c.dim, identity_row, false);
  m.layers.resize(c.n_layers);  // filled in place: the jobs hold pointers into it
  for (int l = 0; l < c.n_layers; ++l) QueueLayer(t, c, l, qk_row, m.layers[l]);
  m.final_norm = t.Vector("output_norm.weight", c.dim);
  m.tied_embeddings = !t.Find("output.weight", {uint64_t(c.dim), uint64_t(c.vocab_size)}, false);
  // A tied classifier is packed from the embedding's tensor; the embedding then shares
  // the classifier's bytes (LoadGguf).
  if (m.tied_embeddings)
    t.jobs().front().pack = true, t.jobs().front().out = &m.output;
  else
    t.Matrix(&m.output, "output.weight", c.vocab_size, c.dim, identity_row);
}

// In file order (sequential reads when the file is not cached), one tensor per thread
// at a time. The first failing tensor in that order is reported, whatever the timing.
void RunJobs(std::vector<MatrixJob>& jobs, const std::shared_ptr<const MappedFile>& file, const uint8_t* data,
             const std::string& path) {
  std::sort(jobs.begin(), jobs.end(),
            [](const MatrixJob& a, const MatrixJob& b) { return a.ti->offset < b.ti->offset; });
  std::vector<std::exception_ptr> errors(jobs.size());
  uint64_t total_bytes = 0;
  for (const MatrixJob& j : jobs) total_bytes += j.ti->bytes;
  std::atomic<uint64_t> loaded_bytes{0};
  const std::string loading = "loading " + std::filesystem::path(path).filename().string();
  ReportBytes(loading, 0, total_bytes);  // the step's clock starts before the first tensor
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t k = 0; k < jobs.size(); ++k) {
    try {
      LoadMatrix(jobs[k], file, data, path);
      ReportBytes(loading, loaded_bytes += jobs[k].ti->bytes, total_bytes);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void DescribeSource(const GgufHeader& h, const std::string& path, Model& m) {
  m.source.format = "gguf";
  m.source.path = path;
  m.source.files = {path};
  for (const auto& ti : h.tensors)
    m.source.tensors.push_back(
        {ti.name, std::vector<int64_t>(ti.ne.begin(), ti.ne.end()), std::string(GgmlTypeName(ti.type)), ti.bytes});
}

}  // namespace

LoadedModel LoadGguf(const std::string& path) {
  // Shared: matrices already in the kernels' layout point into the map and keep it alive.
  const auto file = std::make_shared<const MappedFile>(path);
  const GgufHeader h = ParseGgufHeader(file->data(), file->size(), path);
  const Meta meta(h, path);

  const std::string arch = meta.String("general.architecture");
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3")
    Fail("{}: general.architecture: {} is not supported (llama, qwen2, qwen3)", path, Quoted(arch));
  Vocab vocab = gguf_detail::ReadVocab(meta, path);
  ModelConfig c = ReadConfig(meta, arch, vocab, path);
  TensorTable table(h, *file, path);
  ReadRopeFreqs(table, path, c);
  c.Validate(path);

  auto model = std::make_shared<Model>();
  Model& m = *model;
  m.config = c;
  DescribeSource(h, path, m);
  QueueWeights(table, m);
  table.CheckAllUsed(arch);
  RunJobs(table.jobs(), file, table.data(), path);
  if (m.tied_embeddings) {
    // One buffer for both: the lookup reads rows through DequantizeRow, which takes any
    // layout (packed or column-chunked: a few microseconds per token), so the embedding
    // need not keep the file's row layout and a second copy of [vocab][dim].
    m.output.data.Freeze();
    m.tok_embeddings = m.output;
  }

  LoadedModel lm;
  lm.name = path;
  try {
    lm.tokenizer = gguf_detail::MakeTokenizer(meta, std::move(vocab), path);
  } catch (const Error& e) {  // name the file where the vocabulary checks do not know it
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    Fail("{}: tokenizer.ggml.tokens: {}", path, what);
  }
  if (lm.tokenizer->vocab_size() < model->config.vocab_size) DropPaddingRows(*model, lm.tokenizer->vocab_size());
  lm.model = std::move(model);
  return lm;
}

}  // namespace specsweep
