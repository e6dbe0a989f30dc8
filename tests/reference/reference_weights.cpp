// Weight access of the reference: from an engine Model (dequantized, q/k rows put back
// into HF's order here, not through the engine's permutation helpers), or straight from
// an HF folder's config.json and model.safetensors.
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "models/model.h"
#include "tests/reference/reference_model.h"

namespace specsweep::reference {
namespace {

using json = nlohmann::json;

Mat ToMat(const std::vector<float>& v, int rows, int cols) {
  return Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(v.data(), rows, cols)
      .cast<double>();
}
Mat ToMat(const QMatrix& w) { return ToMat(Dequantize(w), w.rows, w.cols); }
Vec ToVec(const std::vector<float>& v) {
  return Eigen::Map<const Eigen::VectorXf>(v.data(), Eigen::Index(v.size())).cast<double>();
}

// The engine keeps each head's q/k rows as rotating pairs (2j, 2j+1); HF keeps pair j
// as rows j and j + hd/2. HF row s is therefore engine row 2s (first half) or
// 2(s - hd/2) + 1 (second half).
Mat RowsToHf(const Mat& w, int hd) {
  Mat out(w.rows(), w.cols());
  const int half = hd / 2;
  for (Eigen::Index r = 0; r < w.rows(); ++r) {
    const Eigen::Index head = r / hd, s = r % hd;
    out.row(r) = w.row(head * hd + (s < half ? 2 * s : 2 * (s - half) + 1));
  }
  return out;
}
Vec ToHf(const std::vector<float>& v, int hd) {
  if (v.empty()) return {};
  return RowsToHf(ToMat(v, int(v.size()), 1), hd).col(0);
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("reference: cannot open " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// F32 tensors of one safetensors file by name, with their shapes.
struct Tensor {
  std::vector<float> data;
  std::vector<int> shape;
};
std::map<std::string, Tensor> ReadSafetensors(const std::string& path) {
  const std::string b = Slurp(path);
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);  // little-endian header length
  const json header = json::parse(b.substr(8, n));
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    if (t["dtype"] != "F32") throw std::runtime_error("reference: " + name + ": only F32 is read");
    const size_t o0 = t["data_offsets"][0], o1 = t["data_offsets"][1];
    Tensor x{std::vector<float>((o1 - o0) / 4), t["shape"].get<std::vector<int>>()};
    std::memcpy(x.data.data(), b.data() + 8 + n + o0, o1 - o0);
    out[name] = std::move(x);
  }
  return out;
}

}  // namespace

RefModel FromEngineModel(const Model& model) {
  const ModelConfig& e = model.config;
  RefModel m;
  Config& c = m.config;
  c.model_type = e.qk_norm ? "qwen3" : e.qkv_bias ? "qwen2" : "llama";
  c.hidden_size = e.dim;
  c.intermediate_size = e.hidden_dim;
  c.num_hidden_layers = e.n_layers;
  c.num_attention_heads = e.n_heads;
  c.num_key_value_heads = e.n_kv_heads;
  c.head_dim = e.head_size > 0 ? e.head_size : e.dim / e.n_heads;
  c.vocab_size = e.vocab_size;
  c.rope_theta = e.rope_theta;
  c.rms_norm_eps = e.norm_eps;
  c.rope_type = e.rope_scaling;
  c.factor = e.rope_scaling_factor;
  c.low_freq_factor = e.rope_low_freq_factor;
  c.high_freq_factor = e.rope_high_freq_factor;
  c.original_max_position_embeddings = e.rope_original_context;
  if (c.rope_type == "llama3" && c.original_max_position_embeddings == 0)
    c.freq_divisors.assign(e.rope_freq_factors.begin(), e.rope_freq_factors.end());
  const int hd = c.head_dim;
  m.embed_tokens = ToMat(model.tok_embeddings);
  for (const LayerWeights& w : model.layers) {
    Layer L;
    L.input_layernorm = ToVec(w.attn_norm);
    L.post_attention_layernorm = ToVec(w.ffn_norm);
    L.q_proj = RowsToHf(ToMat(w.wq), hd);
    L.k_proj = RowsToHf(ToMat(w.wk), hd);
    L.v_proj = ToMat(w.wv);
    L.q_bias = ToHf(w.bq, hd);
    L.k_bias = ToHf(w.bk, hd);
    L.v_bias = ToVec(w.bv);
    L.q_norm = ToHf(w.q_norm, hd);
    L.k_norm = ToHf(w.k_norm, hd);
    L.o_proj = ToMat(w.wo);
    L.gate_proj = ToMat(w.w1);
    L.up_proj = ToMat(w.w3);
    L.down_proj = ToMat(w.w2);
    m.layers.push_back(std::move(L));
  }
  m.norm = ToVec(model.final_norm);
  m.lm_head = ToMat(model.output);
  return m;
}

RefModel FromHfFolder(const std::string& dir) {
  const json j = json::parse(Slurp(dir + "/config.json"));
  RefModel m;
  Config& c = m.config;
  c.model_type = j.at("model_type");
  c.hidden_size = j.at("hidden_size");
  c.intermediate_size = j.at("intermediate_size");
  c.num_hidden_layers = j.at("num_hidden_layers");
  c.num_attention_heads = j.at("num_attention_heads");
  c.num_key_value_heads = j.value("num_key_value_heads", c.num_attention_heads);
  c.head_dim = j.contains("head_dim") && !j["head_dim"].is_null() ? j["head_dim"].get<int>()
                                                                  : c.hidden_size / c.num_attention_heads;
  c.vocab_size = j.at("vocab_size");
  c.rope_theta = j.value("rope_theta", 10000.0);
  c.rms_norm_eps = j.at("rms_norm_eps");
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    const json& rs = j["rope_scaling"];
    c.rope_type = rs.value("rope_type", rs.value("type", std::string("none")));
    c.factor = rs.value("factor", 1.0);
    c.low_freq_factor = rs.value("low_freq_factor", 0.0);
    c.high_freq_factor = rs.value("high_freq_factor", 0.0);
    c.original_max_position_embeddings = rs.value("original_max_position_embeddings", 0);
  }
  auto t = ReadSafetensors(dir + "/model.safetensors");
  auto mat = [&](const std::string& name) {
    const Tensor& x = t.at(name);
    return ToMat(x.data, x.shape.at(0), x.shape.at(1));
  };
  auto vec = [&](const std::string& name) { return t.count(name) ? ToVec(t.at(name).data) : Vec(); };
  // Tied checkpoints store one of the two (TinyStories-656K keeps only lm_head.weight).
  const bool has_embed = t.count("model.embed_tokens.weight"), has_head = t.count("lm_head.weight");
  m.embed_tokens = mat(has_embed ? "model.embed_tokens.weight" : "lm_head.weight");
  m.lm_head = has_head ? mat("lm_head.weight") : m.embed_tokens;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Layer L;
    L.input_layernorm = vec(p + "input_layernorm.weight");
    L.post_attention_layernorm = vec(p + "post_attention_layernorm.weight");
    L.q_proj = mat(p + "self_attn.q_proj.weight");
    L.k_proj = mat(p + "self_attn.k_proj.weight");
    L.v_proj = mat(p + "self_attn.v_proj.weight");
    L.q_bias = vec(p + "self_attn.q_proj.bias");
    L.k_bias = vec(p + "self_attn.k_proj.bias");
    L.v_bias = vec(p + "self_attn.v_proj.bias");
    L.q_norm = vec(p + "self_attn.q_norm.weight");
    L.k_norm = vec(p + "self_attn.k_norm.weight");
    L.o_proj = mat(p + "self_attn.o_proj.weight");
    L.gate_proj = mat(p + "mlp.gate_proj.weight");
    L.up_proj = mat(p + "mlp.up_proj.weight");
    L.down_proj = mat(p + "mlp.down_proj.weight");
    m.layers.push_back(std::move(L));
  }
  m.norm = vec("model.norm.weight");
  return m;
}

}  // namespace specsweep::reference
