// HF checkpoint folder: config.json + model.safetensors or shards listed in
// model.safetensors.index.json (F32/F16/BF16 tensors).
// safetensors = u64 header length N, N bytes of JSON {name: {dtype, shape, data_offsets}},
// then the data block the offsets are relative to.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/status_line.h"
#include "models/hf_format.h"
#include "models/limits.h"
#include "models/loader.h"
#include "models/mapped_file.h"
#include "quant/matmul.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace specsweep {
namespace {

struct StTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t bytes = 0;
};

size_t DtypeSize(const std::string& dt) {
  if (dt == "F32") return 4;
  if (dt == "F16" || dt == "BF16") return 2;
  return 0;
}

QType StorageType(const std::string& dt) { return dt == "F32" ? QType::F32 : dt == "F16" ? QType::F16 : QType::BF16; }

std::map<std::string, StTensor> ParseSafetensors(const MappedFile& f, json& metadata) {
  const std::string& path = f.path();
  if (f.size() < 8) Fail("{}: header: file has {} bytes, too short for the header length", path, f.size());
  uint64_t n = 0;
  std::memcpy(&n, f.data(), 8);
  if (n > f.size() - 8) Fail("{}: header: header length {} is larger than the file ({} bytes)", path, n, f.size());
  json h;
  try {
    h = json::parse(f.data() + 8, f.data() + 8 + n);
  } catch (const json::exception& e) {
    Fail("{}: header: invalid JSON: {}", path, e.what());
  }
  if (!h.is_object()) Fail("{}: header: expected a JSON object", path);
  const uint8_t* base = f.data() + 8 + n;
  const size_t data_size = f.size() - 8 - n;
  std::map<std::string, StTensor> out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto& [name, t] : h.items()) {
    if (name == "__metadata__") {
      metadata = t;
      continue;
    }
    const std::string field = "tensor '" + name + "'";
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
      Fail("{}: {}: needs dtype, shape and data_offsets", path, field);
    StTensor st;
    st.dtype = t["dtype"].is_string() ? t["dtype"].get<std::string>() : "?";
    const size_t es = DtypeSize(st.dtype);
    if (!es) Fail("{}: {}: dtype {} is not supported (F32, F16, BF16)", path, field, st.dtype);
    if (!t["shape"].is_array() || t["shape"].size() > 4)
      Fail("{}: {}: shape: expected an array of at most 4 dimensions", path, field);
    // Element count bounded by the data block, checked per factor so it cannot wrap.
    uint64_t numel = 1;
    for (auto& d : t["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t(1) << 32))
        Fail("{}: {}: shape: invalid dimension {}", path, field, d.dump());
      const uint64_t n = d.get<uint64_t>();
      if (n > 0 && numel > kMaxTensorElements / n)
        Fail("{}: {}: shape: [{}] is absurdly large", path, field, t["shape"].dump());
      st.shape.push_back(static_cast<int64_t>(n));
      numel *= n;
    }
    auto& off = t["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      Fail("{}: {}: data_offsets: expected [begin, end]", path, field);
    uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    if (b > e || e > data_size)
      Fail("{}: {}: data_offsets: [{}, {}] out of range (data block is {} bytes)", path, field, b, e, data_size);
    if (e - b != numel * es)
      Fail("{}: {}: data_offsets: {} bytes but shape and dtype need {}", path, field, e - b, numel * es);
    st.data = base + b;
    st.bytes = e - b;
    CheckFinite(StorageType(st.dtype), st.data, numel, path, name);
    ranges.emplace_back(b, e);
    out.emplace(name, std::move(st));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      Fail("{}: data_offsets: tensors overlap at byte {}", path, ranges[i].first);
  return out;
}

// The tensors of a folder: model.safetensors, or the shards model.safetensors.index.json
// names (each mapped; tensors point into the maps).
struct StFolder {
  std::vector<std::unique_ptr<MappedFile>> files;
  std::map<std::string, StTensor> tensors;
  std::map<std::string, std::string> file_of;  // tensor -> file (errors)
  json metadata;                               // of a single file (tied-embedding aliases)
};

StFolder OpenSafetensors(const fs::path& dir) {
  StFolder f;
  const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  if (fs::exists(single) || !fs::exists(index)) {
    f.files.push_back(std::make_unique<MappedFile>(single.string()));
    f.tensors = ParseSafetensors(*f.files[0], f.metadata);
    for (auto& [name, t] : f.tensors) f.file_of[name] = single.string();
    return f;
  }
  const std::string ip = index.string();
  std::ifstream in(ip);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    Fail("{}: invalid JSON: {}", ip, e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    Fail("{}: weight_map: missing or not an object", ip);
  std::map<std::string, std::string> shard_of;  // tensor -> shard file name
  for (auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) Fail("{}: weight_map.{}: expected a file name", ip, name);
    const std::string fn = file.get<std::string>();
    if (fn.empty() || fn.find('/') != std::string::npos || fn == "." || fn == "..")
      Fail("{}: weight_map.{}: '{}' is not a file name in the folder", ip, name, fn);
    shard_of[name] = fn;
  }
  std::map<std::string, bool> shards;
  for (auto& [name, fn] : shard_of) shards[fn] = true;
  for (auto& [fn, _] : shards) {
    const std::string sp = (dir / fn).string();
    f.files.push_back(std::make_unique<MappedFile>(sp));
    json meta;
    for (auto& [name, t] : ParseSafetensors(*f.files.back(), meta)) {
      auto it = shard_of.find(name);
      if (it == shard_of.end()) Fail("{}: tensor '{}': not listed in {}", sp, name, ip);
      if (it->second != fn) Fail("{}: tensor '{}': {} places it in {}", sp, name, ip, it->second);
      f.file_of[name] = sp;
      f.tensors.emplace(name, t);
    }
  }
  for (auto& [name, fn] : shard_of)
    if (!f.tensors.count(name)) Fail("{}: weight_map.{}: tensor not found in {}", ip, name, fn);
  return f;
}

// Reads a folder's tensors into Model matrices, checking names and shapes and tracking
// which were used. The source pages of a tensor are dropped from this process once
// copied: the file stays in the page cache, and peak memory is the model plus one tensor.
class StReader {
 public:
  StReader(StFolder& folder, const std::string& dir) : folder_(folder), dir_(dir) {
    for (auto& [name, t] : folder_.tensors) total_bytes_ += t.bytes;
    const fs::path dir_path = fs::path(dir).filename().empty() ? fs::path(dir).parent_path() : fs::path(dir);
    loading_ = "loading " + dir_path.filename().string();
    ReportBytes(loading_, 0, total_bytes_);  // the step's clock starts before the first tensor
  }

  // Aliases: __metadata__ may map a missing name to a stored one (tied embeddings).
  const StTensor* Find(const std::string& name) const {
    const auto& tensors = folder_.tensors;
    const json& metadata = folder_.metadata;
    if (auto it = tensors.find(name); it != tensors.end()) return &it->second;
    if (metadata.is_object() && metadata.contains(name) && metadata[name].is_string())
      if (auto it = tensors.find(metadata[name].get<std::string>()); it != tensors.end()) return &it->second;
    return nullptr;
  }
  std::string FileOf(const std::string& name) const {
    auto it = folder_.file_of.find(name);
    return it != folder_.file_of.end() ? it->second : folder_.files.size() == 1 ? folder_.files[0]->path() : dir_;
  }
  const StTensor& Require(const std::string& name, std::vector<int64_t> shape) {
    const StTensor* t = Find(name);
    if (!t) Fail("{}: tensor '{}': missing", FileOf(name), name);
    if (t->shape != shape)
      Fail("{}: tensor '{}': shape [{}] but config.json implies [{}]", FileOf(name), name, fmt::join(t->shape, ", "),
           fmt::join(shape, ", "));
    used_.insert(name);
    return *t;
  }
  void MarkUsed(const std::string& name) { used_.insert(name); }

  // Copies a [rows][cols] tensor; `row_of(r)` gives the stored row for our row r; packs
  // it for the kernels.
  template <typename RowOf>
  QMatrix Matrix(const StTensor& t, RowOf row_of, bool pack = true) {
    const int rows = static_cast<int>(t.shape[0]), cols = static_cast<int>(t.shape[1]);
    const size_t rb = cols * DtypeSize(t.dtype);
    // Uninitialized: every byte is copied below (zeroing first would write each page twice).
    QMatrix q = MakeQMatrix(StorageType(t.dtype), rows, cols, AlignedBuffer::Uninitialized(size_t(rows) * rb));
    for (int r = 0; r < rows; ++r) std::memcpy(q.Row(r), t.data + size_t(row_of(r)) * rb, rb);
    Release(t);
    return pack ? PackForKernels(q) : q;
  }
  template <typename RowOf>
  std::vector<float> Vector(const StTensor& t, RowOf row_of) {
    StTensor col = t;  // a [n] vector viewed as a [n][1] matrix, so rows can be permuted
    col.shape = {t.shape[0], 1};
    QMatrix one = Matrix(col, row_of, false);
    std::vector<float> v(one.rows);  // [n]
    for (int r = 0; r < one.rows; ++r) DequantizeRow(one, r, &v[r]);
    return v;
  }

  // A tensor the architecture does not use (an o_proj bias, a layer beyond
  // num_hidden_layers, ...) would be silently dropped: refuse it. Old checkpoints store
  // the rotary inv_freq buffer, which is recomputed from the config.
  void CheckAllUsed(const std::string& arch) const {
    for (auto& [name, t] : folder_.tensors)
      if (!used_.count(name) && !name.ends_with("rotary_emb.inv_freq"))
        Fail("{}: tensor '{}': not used by the {} architecture as configured in config.json", FileOf(name), name, arch);
  }

 private:
  void Release(const StTensor& t) {
    ReportBytes(loading_, loaded_bytes_ += t.bytes, total_bytes_);
    for (auto& f : folder_.files)
      if (t.data >= f->data() && t.data < f->data() + f->size()) f->Release(t.data, t.bytes);
  }

  StFolder& folder_;
  const std::string& dir_;
  std::set<std::string> used_;
  uint64_t total_bytes_ = 0, loaded_bytes_ = 0;
  std::string loading_;
};

int Identity(int r) { return r; }

// Tied embeddings: one of the two is stored (or aliased through __metadata__).
void LoadEmbeddings(StReader& st, const StFolder& folder, Model& m) {
  const ModelConfig& c = m.config;
  const int64_t D = c.dim, V = c.vocab_size;
  const char* emb_name = st.Find("model.embed_tokens.weight") ? "model.embed_tokens.weight" : "lm_head.weight";
  const char* head_name = st.Find("lm_head.weight") ? "lm_head.weight" : "model.embed_tokens.weight";
  m.tied_embeddings = !(folder.tensors.count("model.embed_tokens.weight") && folder.tensors.count("lm_head.weight"));
  m.tok_embeddings = st.Matrix(st.Require(emb_name, {V, D}), Identity, false);
  if (m.tied_embeddings) {
    st.MarkUsed(head_name);
    // One buffer for both (frozen: copies share it); the lookup reads rows through
    // DequantizeRow, which takes the classifier's layout as well.
    m.tok_embeddings.data.Freeze();
    m.output = PackForKernels(m.tok_embeddings);
    m.output.data.Freeze();
    m.tok_embeddings = m.output;
  } else {
    m.output = st.Matrix(st.Require(head_name, {V, D}), Identity);
  }
}

LayerWeights LoadLayer(StReader& st, const ModelConfig& c, int l) {
  // HF stores q/k rows per head as [2][hd/2] (rotate_half); ours are interleaved [hd/2][2].
  const int hd = c.head_dim();
  auto rope_permute = [hd](int r) { return r / hd * hd + HfRopeRow(r % hd, hd); };
  const int64_t D = c.dim, Q = c.q_dim(), KV = c.kv_dim(), H = c.hidden_dim, HD = hd;
  const std::string p = "model.layers." + std::to_string(l) + ".";
  LayerWeights L;
  L.attn_norm = st.Vector(st.Require(p + "input_layernorm.weight", {D}), Identity);
  L.wq = st.Matrix(st.Require(p + "self_attn.q_proj.weight", {Q, D}), rope_permute);
  L.wk = st.Matrix(st.Require(p + "self_attn.k_proj.weight", {KV, D}), rope_permute);
  L.wv = st.Matrix(st.Require(p + "self_attn.v_proj.weight", {KV, D}), Identity);
  if (c.qkv_bias) {
    L.bq = st.Vector(st.Require(p + "self_attn.q_proj.bias", {Q}), rope_permute);
    L.bk = st.Vector(st.Require(p + "self_attn.k_proj.bias", {KV}), rope_permute);
    L.bv = st.Vector(st.Require(p + "self_attn.v_proj.bias", {KV}), Identity);
  }
  if (c.qk_norm) {
    L.q_norm = st.Vector(st.Require(p + "self_attn.q_norm.weight", {HD}), rope_permute);
    L.k_norm = st.Vector(st.Require(p + "self_attn.k_norm.weight", {HD}), rope_permute);
  }
  L.wo = st.Matrix(st.Require(p + "self_attn.o_proj.weight", {D, Q}), Identity);
  L.ffn_norm = st.Vector(st.Require(p + "post_attention_layernorm.weight", {D}), Identity);
  L.w1 = st.Matrix(st.Require(p + "mlp.gate_proj.weight", {H, D}), Identity);
  L.w2 = st.Matrix(st.Require(p + "mlp.down_proj.weight", {D, H}), Identity);
  L.w3 = st.Matrix(st.Require(p + "mlp.up_proj.weight", {H, D}), Identity);
  return L;
}

}  // namespace

Model LoadHfSafetensors(const std::string& dir) {
  const std::string cfg_path = (fs::path(dir) / "config.json").string();
  Model m;
  m.config = ParseHfConfig(cfg_path);
  const ModelConfig& c = m.config;
  StFolder folder = OpenSafetensors(dir);
  StReader st(folder, dir);
  LoadEmbeddings(st, folder, m);
  for (int l = 0; l < c.n_layers; ++l) m.layers.push_back(LoadLayer(st, c, l));
  m.final_norm = st.Vector(st.Require("model.norm.weight", {c.dim}), Identity);
  st.CheckAllUsed(c.arch);

  m.source.format = "hf-safetensors";
  m.source.path = dir;
  m.source.files = {cfg_path};
  for (auto& f : folder.files) m.source.files.push_back(f->path());
  for (auto& [name, t] : folder.tensors) m.source.tensors.push_back({name, t.shape, t.dtype, t.bytes});
  return m;
}

}  // namespace specsweep
