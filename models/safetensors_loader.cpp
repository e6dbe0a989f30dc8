// HF Llama directory: config.json + model.safetensors (F32/F16/BF16).
// safetensors = u64 header length N, N bytes of JSON {name: {dtype, shape, data_offsets}},
// then the data block the offsets are relative to.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "models/error.h"
#include "models/limits.h"
#include "models/loader.h"
#include "models/mapped_file.h"

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

ModelConfig ParseHfConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) Fail("{}: cannot open (an HF model directory needs config.json)", path);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    Fail("{}: invalid JSON: {}", path, e.what());
  }
  if (!j.is_object()) Fail("{}: top level: expected an object", path);
  auto get_int = [&](const char* key, std::optional<int> def = std::nullopt) -> int {
    if (!j.contains(key) || j[key].is_null()) {
      if (def) return *def;
      Fail("{}: {}: missing", path, key);
    }
    const json& v = j[key].is_array() && !j[key].empty() ? j[key][0] : j[key];
    if (!v.is_number_integer()) Fail("{}: {}: expected an integer", path, key);
    // Range-checked in 64 bits: get<int> would wrap 4294967424 to 128.
    if (v.is_number_unsigned() ? v.get<uint64_t>() > INT32_MAX : v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX)
      Fail("{}: {}: {} is out of range", path, key, v.dump());
    return static_cast<int>(v.get<int64_t>());
  };
  auto get_float = [&](const char* key, float def) -> float {
    if (!j.contains(key) || j[key].is_null()) return def;
    if (!j[key].is_number()) Fail("{}: {}: expected a number", path, key);
    const double d = j[key].get<double>();
    if (!std::isfinite(d) || std::abs(d) > 3.0e38) Fail("{}: {}: {} is not finite or does not fit a float", path, key, d);
    return static_cast<float>(d);
  };
  auto get_str = [&](const char* key, const char* def) -> std::string {
    if (!j.contains(key) || j[key].is_null()) return def;
    if (!j[key].is_string()) Fail("{}: {}: expected a string", path, key);
    return j[key].get<std::string>();
  };
  auto get_bool = [&](const char* key) -> bool {
    if (!j.contains(key) || j[key].is_null()) return false;
    if (!j[key].is_boolean()) Fail("{}: {}: expected true/false", path, key);
    return j[key].get<bool>();
  };
  ModelConfig c;
  std::string model_type = get_str("model_type", "");
  bool llama_arch = model_type == "llama";
  if (j.contains("architectures") && j["architectures"].is_array())
    for (auto& a : j["architectures"])
      if (a == "LlamaForCausalLM") llama_arch = true;
  if (!llama_arch)
    Fail("{}: model_type: {} is not a supported architecture (LlamaForCausalLM only)", path,
         Quoted(model_type.empty() ? "unknown" : model_type));
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    Fail("{}: rope_scaling: not supported", path);
  if (std::string act = get_str("hidden_act", "silu"); act != "silu")
    Fail("{}: hidden_act: {} is not supported (silu only)", path, Quoted(act));
  if (get_bool("attention_bias")) Fail("{}: attention_bias: biases are not supported", path);
  if (get_bool("mlp_bias")) Fail("{}: mlp_bias: biases are not supported", path);
  c.dim = get_int("hidden_size");
  c.hidden_dim = get_int("intermediate_size");
  c.n_layers = get_int("num_hidden_layers");
  c.n_heads = get_int("num_attention_heads");
  c.n_kv_heads = get_int("num_key_value_heads", c.n_heads);
  c.vocab_size = get_int("vocab_size");
  c.max_seq_len = get_int("max_position_embeddings");
  c.norm_eps = get_float("rms_norm_eps", 1e-6f);
  c.rope_theta = get_float("rope_theta", 10000.0f);
  c.bos_id = get_int("bos_token_id", 1);
  c.eos_id = get_int("eos_token_id", 2);
  if (j.contains("head_dim") && !j["head_dim"].is_null() &&
      get_int("head_dim") != c.dim / std::max(c.n_heads, 1))
    Fail("{}: head_dim: {} != hidden_size / num_attention_heads is not supported", path,
         j["head_dim"].dump());
  c.Validate(path);
  return c;
}

size_t DtypeSize(const std::string& dt) {
  if (dt == "F32") return 4;
  if (dt == "F16" || dt == "BF16") return 2;
  return 0;
}

QType StorageType(const std::string& dt) {
  return dt == "F32" ? QType::F32 : dt == "F16" ? QType::F16 : QType::BF16;
}

std::map<std::string, StTensor> ParseSafetensors(const MappedFile& f, json& metadata) {
  const std::string& path = f.path();
  if (f.size() < 8) Fail("{}: header: file has {} bytes, too short for the header length", path, f.size());
  uint64_t n = 0;
  std::memcpy(&n, f.data(), 8);
  if (n > f.size() - 8)
    Fail("{}: header: header length {} is larger than the file ({} bytes)", path, n, f.size());
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
      if (n > 0 && numel > (uint64_t{1} << 48) / n)
        Fail("{}: {}: shape: [{}] is absurdly large", path, field, t["shape"].dump());
      st.shape.push_back(static_cast<int64_t>(n));
      numel *= n;
    }
    auto& off = t["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      Fail("{}: {}: data_offsets: expected [begin, end]", path, field);
    uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    if (b > e || e > data_size)
      Fail("{}: {}: data_offsets: [{}, {}] out of range (data block is {} bytes)", path, field, b, e,
           data_size);
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

}  // namespace

Model LoadHfSafetensors(const std::string& dir) {
  const std::string cfg_path = (fs::path(dir) / "config.json").string();
  const std::string st_path = (fs::path(dir) / "model.safetensors").string();
  Model m;
  m.config = ParseHfConfig(cfg_path);
  const ModelConfig& c = m.config;
  MappedFile f(st_path);
  json metadata;
  auto tensors = ParseSafetensors(f, metadata);

  // Aliases: __metadata__ may map a missing name to a stored one (tied embeddings).
  auto find = [&](const std::string& name) -> const StTensor* {
    if (auto it = tensors.find(name); it != tensors.end()) return &it->second;
    if (metadata.is_object() && metadata.contains(name) && metadata[name].is_string())
      if (auto it = tensors.find(metadata[name].get<std::string>()); it != tensors.end()) return &it->second;
    return nullptr;
  };
  auto require = [&](const std::string& name, std::vector<int64_t> shape) -> const StTensor& {
    const StTensor* t = find(name);
    if (!t) Fail("{}: tensor '{}': missing", st_path, name);
    if (t->shape != shape)
      Fail("{}: tensor '{}': shape [{}] but config.json implies [{}]", st_path, name,
           fmt::join(t->shape, ", "), fmt::join(shape, ", "));
    return *t;
  };
  // Copies a [rows][cols] tensor; `row_of(r)` gives the stored row for our row r.
  auto matrix = [&](const StTensor& t, auto row_of) {
    const int rows = static_cast<int>(t.shape[0]), cols = static_cast<int>(t.shape[1]);
    QMatrix q = MakeQMatrix(StorageType(t.dtype), rows, cols);
    const size_t rb = cols * DtypeSize(t.dtype);
    for (int r = 0; r < rows; ++r) std::memcpy(q.Row(r), t.data + size_t(row_of(r)) * rb, rb);
    return q;
  };
  auto identity = [](int r) { return r; };
  // HF stores q/k rows per head as [2][hd/2] (rotate_half); ours are interleaved [hd/2][2].
  const int hd = c.head_dim();
  auto rope_permute = [hd](int r) {
    const int h = r / hd, i = r % hd, j = i / 2, half = i % 2;
    return h * hd + half * (hd / 2) + j;
  };
  auto vec = [&](const StTensor& t) {
    StTensor row = t;  // a [n] vector viewed as a [1][n] matrix
    row.shape = {1, t.shape[0]};
    QMatrix one = matrix(row, identity);
    std::vector<float> v(one.cols);  // [n]
    DequantizeRow(one, 0, v.data());
    return v;
  };

  const int64_t D = c.dim, KV = c.kv_dim(), H = c.hidden_dim, V = c.vocab_size;
  // Tied embeddings: one of the two is stored (or aliased through __metadata__).
  const char* emb_name = find("model.embed_tokens.weight") ? "model.embed_tokens.weight" : "lm_head.weight";
  const char* head_name = find("lm_head.weight") ? "lm_head.weight" : "model.embed_tokens.weight";
  m.tied_embeddings = !(tensors.count("model.embed_tokens.weight") && tensors.count("lm_head.weight"));
  m.tok_embeddings = matrix(require(emb_name, {V, D}), identity);
  m.output = matrix(require(head_name, {V, D}), identity);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights L;
    L.attn_norm = vec(require(p + "input_layernorm.weight", {D}));
    L.wq = matrix(require(p + "self_attn.q_proj.weight", {D, D}), rope_permute);
    L.wk = matrix(require(p + "self_attn.k_proj.weight", {KV, D}), rope_permute);
    L.wv = matrix(require(p + "self_attn.v_proj.weight", {KV, D}), identity);
    L.wo = matrix(require(p + "self_attn.o_proj.weight", {D, D}), identity);
    L.ffn_norm = vec(require(p + "post_attention_layernorm.weight", {D}));
    L.w1 = matrix(require(p + "mlp.gate_proj.weight", {H, D}), identity);
    L.w2 = matrix(require(p + "mlp.down_proj.weight", {D, H}), identity);
    L.w3 = matrix(require(p + "mlp.up_proj.weight", {H, D}), identity);
    m.layers.push_back(std::move(L));
  }
  m.final_norm = vec(require("model.norm.weight", {D}));

  m.source.format = "hf-safetensors";
  m.source.path = dir;
  m.source.files = {cfg_path, st_path};
  for (auto& [name, t] : tensors)
    m.source.tensors.push_back({name, t.shape, t.dtype, t.bytes});
  return m;
}

}  // namespace specsweep
