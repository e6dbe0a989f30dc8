// config.json of HF Llama/Mistral/Qwen2/Qwen3 checkpoints.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <optional>

#include "base/error.h"
#include "models/hf_format.h"

using json = nlohmann::json;

namespace specsweep {
namespace {

// model_type -> our architecture.
std::optional<std::string> ArchOf(const std::string& model_type) {
  if (model_type == "llama" || model_type == "mistral") return "llama";
  if (model_type == "qwen2" || model_type == "qwen3") return model_type;
  return std::nullopt;
}

std::optional<std::string> ArchOfClass(const std::string& cls) {
  if (cls == "LlamaForCausalLM" || cls == "MistralForCausalLM") return "llama";
  if (cls == "Qwen2ForCausalLM") return "qwen2";
  if (cls == "Qwen3ForCausalLM") return "qwen3";
  return std::nullopt;
}

}  // namespace

ModelConfig ParseHfConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) Fail("{}: cannot open (an HF model directory needs config.json)", path);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    Fail("{}: invalid JSON: {}", path, e.what());
  }
  return HfConfigFromJson(j, path);
}

namespace {

bool Present(const json& o, const char* key) { return o.contains(key) && !o[key].is_null(); }

// Typed reads of config.json's top-level keys, with "FILE: KEY: what" errors.
class Fields {
 public:
  Fields(const json& j, const std::string& path) : j_(j), path_(path) {}
  bool Has(const char* key) const { return Present(j_, key); }
  int Int(const char* key, std::optional<int> def = std::nullopt) const {
    if (!Present(j_, key)) {
      if (def) return *def;
      Fail("{}: {}: missing", path_, key);
    }
    const json& v = j_[key].is_array() && !j_[key].empty() ? j_[key][0] : j_[key];
    if (!v.is_number_integer()) Fail("{}: {}: expected an integer", path_, key);
    // Range-checked in 64 bits: get<int> would wrap 4294967424 to 128.
    if (v.is_number_unsigned() ? v.get<uint64_t>() > INT32_MAX
                               : v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX)
      Fail("{}: {}: {} is out of range", path_, key, v.dump());
    return static_cast<int>(v.get<int64_t>());
  }
  float Float(const char* key, float def) const {
    if (!Present(j_, key)) return def;
    if (!j_[key].is_number()) Fail("{}: {}: expected a number", path_, key);
    const double d = j_[key].get<double>();
    if (!std::isfinite(d) || std::abs(d) > 3.0e38)
      Fail("{}: {}: {} is not finite or does not fit a float", path_, key, d);
    return static_cast<float>(d);
  }
  bool Bool(const char* key) const {
    if (!Present(j_, key)) return false;
    if (!j_[key].is_boolean()) Fail("{}: {}: expected true or false", path_, key);
    return j_[key].get<bool>();
  }
  std::string Str(const char* key, const char* def) const {
    if (!Present(j_, key)) return def;
    if (!j_[key].is_string()) Fail("{}: {}: expected a string", path_, key);
    return j_[key].get<std::string>();
  }

 private:
  const json& j_;
  const std::string& path_;
};

// Our architecture, from model_type or else the first known class in architectures.
std::string ReadArch(const json& j, const std::string& model_type, const std::string& path) {
  std::optional<std::string> arch = ArchOf(model_type);
  if (model_type.empty() && j.contains("architectures") && j["architectures"].is_array())
    for (auto& a : j["architectures"])
      if (a.is_string() && !arch) arch = ArchOfClass(a.get<std::string>());
  if (!arch)
    Fail("{}: model_type: '{}' is not a supported architecture (llama, mistral, qwen2, qwen3)", path,
         model_type.empty() ? "unknown" : model_type);
  return *arch;
}

// Settings of the architecture that the forward pass does not model.
void CheckSupported(const Fields& f, const json& j, const std::string& arch, const std::string& path) {
  if (f.Str("hidden_act", "silu") != "silu")
    Fail("{}: hidden_act: '{}' is not supported (silu only)", path, j["hidden_act"].dump());
  if (f.Bool("mlp_bias")) Fail("{}: mlp_bias: biases in the feed-forward block are not supported", path);
  // Qwen2 always has q/k/v biases (and ignores attention_bias); elsewhere attention_bias
  // puts a bias on o_proj too, which is not modelled.
  if (arch != "qwen2" && f.Bool("attention_bias"))
    Fail("{}: attention_bias: biases on the attention projections are not supported for {}", path, arch);
}

// A number of the rope_scaling object.
double RopeNumber(const json& rs, const char* key, const std::string& path) {
  if (!Present(rs, key) || !rs[key].is_number()) Fail("{}: rope_scaling.{}: missing or not a number", path, key);
  return rs[key].get<double>();
}

void ReadLlama3Scaling(const json& rs, const std::string& path, ModelConfig& c) {
  auto num = [&](const char* key) { return RopeNumber(rs, key, path); };
  const double factor = num("factor"), low = num("low_freq_factor"), high = num("high_freq_factor");
  const double orig = num("original_max_position_embeddings");
  if (!(factor >= 1)) Fail("{}: rope_scaling.factor: {} must be >= 1", path, factor);
  if (!(low > 0 && high > low))
    Fail("{}: rope_scaling.high_freq_factor: needs 0 < low_freq_factor ({}) < high_freq_factor ({})", path, low, high);
  if (!(orig >= 1 && orig <= (1 << 22)))
    Fail("{}: rope_scaling.original_max_position_embeddings: {} is out of range", path, orig);
  c.rope_scaling = "llama3";
  c.rope_scaling_factor = static_cast<float>(factor);
  c.rope_low_freq_factor = static_cast<float>(low);
  c.rope_high_freq_factor = static_cast<float>(high);
  c.rope_original_context = static_cast<int>(orig);
  const int hd = c.head_size > 0 ? c.head_size : (c.n_heads > 0 ? c.dim / c.n_heads : 0);
  if (hd > 0)
    c.rope_freq_factors = Llama3RopeFactors(c.rope_theta, hd, float(factor), float(low), float(high), int(orig));
}

void ReadRopeScaling(const json& j, const std::string& path, ModelConfig& c) {
  if (!Present(j, "rope_scaling")) return;
  const json& rs = j["rope_scaling"];
  if (!rs.is_object()) Fail("{}: rope_scaling: expected an object", path);
  const char* type_key = rs.contains("rope_type") ? "rope_type" : "type";
  if (!rs.contains(type_key) || !rs[type_key].is_string()) Fail("{}: rope_scaling.rope_type: missing", path);
  const std::string type = rs[type_key].get<std::string>();
  if (type == "default") {
    // plain RoPE
  } else if (type == "linear") {
    c.rope_scaling = "linear";
    c.rope_scaling_factor = static_cast<float>(RopeNumber(rs, "factor", path));
  } else if (type == "llama3") {
    ReadLlama3Scaling(rs, path, c);
  } else {
    Fail("{}: rope_scaling.{}: '{}' is not supported (linear, llama3)", path, type_key, type);
  }
}

}  // namespace

ModelConfig HfConfigFromJson(const json& j, const std::string& path) {
  if (!j.is_object()) Fail("{}: top level: expected an object", path);
  const Fields f(j, path);
  ModelConfig c;
  const std::string model_type = f.Str("model_type", "");
  c.arch = ReadArch(j, model_type, path);
  CheckSupported(f, j, c.arch, path);
  c.qkv_bias = c.arch == "qwen2";
  c.qk_norm = c.arch == "qwen3";
  if (f.Has("partial_rotary_factor") && f.Float("partial_rotary_factor", 1.0f) != 1.0f)
    Fail("{}: partial_rotary_factor: partial RoPE is not supported", path);
  c.dim = f.Int("hidden_size");
  c.hidden_dim = f.Int("intermediate_size");
  c.n_layers = f.Int("num_hidden_layers");
  c.n_heads = f.Int("num_attention_heads");
  c.n_kv_heads = f.Int("num_key_value_heads", c.n_heads);
  c.head_size = f.Int("head_dim", 0);
  c.vocab_size = f.Int("vocab_size");
  c.max_seq_len = f.Int("max_position_embeddings");
  c.norm_eps = f.Float("rms_norm_eps", 1e-6f);
  c.rope_theta = f.Float("rope_theta", 10000.0f);
  c.bos_id = f.Int("bos_token_id", 1);
  c.eos_id = f.Int("eos_token_id", 2);
  // Mistral: sliding_window (null in later versions); Qwen: only with use_sliding_window.
  if (model_type == "mistral" || f.Bool("use_sliding_window")) c.sliding_window = f.Int("sliding_window", 0);
  ReadRopeScaling(j, path, c);
  c.Validate(path);
  return c;
}

json HfConfigJson(const ModelConfig& c, bool tied) {
  static const char* kClass[][2] = {{"llama", "LlamaForCausalLM"},
                                    {"qwen2", "Qwen2ForCausalLM"},
                                    {"qwen3", "Qwen3ForCausalLM"}};
  std::string cls;
  for (auto& [a, k] : kClass)
    if (c.arch == a) cls = k;
  json j = {{"architectures", {cls}},
            {"model_type", c.arch},
            {"hidden_size", c.dim},
            {"intermediate_size", c.hidden_dim},
            {"num_hidden_layers", c.n_layers},
            {"num_attention_heads", c.n_heads},
            {"num_key_value_heads", c.n_kv_heads},
            {"head_dim", c.head_dim()},
            {"vocab_size", c.vocab_size},
            {"max_position_embeddings", c.max_seq_len},
            {"rms_norm_eps", c.norm_eps},
            {"rope_theta", c.rope_theta},
            {"bos_token_id", c.bos_id},
            {"eos_token_id", c.eos_id},
            {"hidden_act", "silu"},
            {"tie_word_embeddings", tied},
            {"attention_bias", c.qkv_bias},
            {"rope_scaling", nullptr}};
  if (c.rope_scaling == "linear") j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.rope_scaling_factor}};
  if (c.rope_scaling == "llama3") {
    if (c.rope_original_context <= 0)
      Fail(
          "config.json: rope_scaling: this model's llama3 parameters are unknown (a GGUF file holds only the "
          "frequency factors)");
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", c.rope_scaling_factor},
                         {"low_freq_factor", c.rope_low_freq_factor},
                         {"high_freq_factor", c.rope_high_freq_factor},
                         {"original_max_position_embeddings", c.rope_original_context}};
  }
  if (c.sliding_window > 0) {
    j["sliding_window"] = c.sliding_window;
    j["use_sliding_window"] = true;
  }
  return j;
}

}  // namespace specsweep
