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

ModelConfig HfConfigFromJson(const json& j, const std::string& path) {
  if (!j.is_object()) Fail("{}: top level: expected an object", path);
  auto present = [&](const json& o, const char* key) { return o.contains(key) && !o[key].is_null(); };
  auto get_int = [&](const char* key, std::optional<int> def = std::nullopt) -> int {
    if (!present(j, key)) {
      if (def) return *def;
      Fail("{}: {}: missing", path, key);
    }
    const json& v = j[key].is_array() && !j[key].empty() ? j[key][0] : j[key];
    if (!v.is_number_integer()) Fail("{}: {}: expected an integer", path, key);
    // Range-checked in 64 bits: get<int> would wrap 4294967424 to 128.
    if (v.is_number_unsigned() ? v.get<uint64_t>() > INT32_MAX
                               : v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX)
      Fail("{}: {}: {} is out of range", path, key, v.dump());
    return static_cast<int>(v.get<int64_t>());
  };
  auto get_float = [&](const char* key, float def) -> float {
    if (!present(j, key)) return def;
    if (!j[key].is_number()) Fail("{}: {}: expected a number", path, key);
    const double d = j[key].get<double>();
    if (!std::isfinite(d) || std::abs(d) > 3.0e38) Fail("{}: {}: {} is not finite or does not fit a float", path, key, d);
    return static_cast<float>(d);
  };
  auto get_bool = [&](const char* key) {
    if (!present(j, key)) return false;
    if (!j[key].is_boolean()) Fail("{}: {}: expected true or false", path, key);
    return j[key].get<bool>();
  };
  auto get_str = [&](const char* key, const char* def) -> std::string {
    if (!present(j, key)) return def;
    if (!j[key].is_string()) Fail("{}: {}: expected a string", path, key);
    return j[key].get<std::string>();
  };
  ModelConfig c;
  const std::string model_type = get_str("model_type", "");
  std::optional<std::string> arch = ArchOf(model_type);
  if (model_type.empty() && j.contains("architectures") && j["architectures"].is_array())
    for (auto& a : j["architectures"])
      if (a.is_string() && !arch) arch = ArchOfClass(a.get<std::string>());
  if (!arch)
    Fail("{}: model_type: '{}' is not a supported architecture (llama, mistral, qwen2, qwen3)", path,
         model_type.empty() ? "unknown" : model_type);
  c.arch = *arch;
  if (get_str("hidden_act", "silu") != "silu")
    Fail("{}: hidden_act: '{}' is not supported (silu only)", path, j["hidden_act"].dump());
  if (get_bool("mlp_bias")) Fail("{}: mlp_bias: biases in the feed-forward block are not supported", path);
  // Qwen2 always has q/k/v biases (and ignores attention_bias); elsewhere attention_bias
  // puts a bias on o_proj too, which is not modelled.
  if (c.arch != "qwen2" && get_bool("attention_bias"))
    Fail("{}: attention_bias: biases on the attention projections are not supported for {}", path, c.arch);
  c.qkv_bias = c.arch == "qwen2";
  c.qk_norm = c.arch == "qwen3";
  if (present(j, "partial_rotary_factor") && get_float("partial_rotary_factor", 1.0f) != 1.0f)
    Fail("{}: partial_rotary_factor: partial RoPE is not supported", path);
  c.dim = get_int("hidden_size");
  c.hidden_dim = get_int("intermediate_size");
  c.n_layers = get_int("num_hidden_layers");
  c.n_heads = get_int("num_attention_heads");
  c.n_kv_heads = get_int("num_key_value_heads", c.n_heads);
  c.head_size = get_int("head_dim", 0);
  c.vocab_size = get_int("vocab_size");
  c.max_seq_len = get_int("max_position_embeddings");
  c.norm_eps = get_float("rms_norm_eps", 1e-6f);
  c.rope_theta = get_float("rope_theta", 10000.0f);
  c.bos_id = get_int("bos_token_id", 1);
  c.eos_id = get_int("eos_token_id", 2);
  // Mistral: sliding_window (null in later versions); Qwen: only with use_sliding_window.
  if (model_type == "mistral" || get_bool("use_sliding_window")) c.sliding_window = get_int("sliding_window", 0);

  if (present(j, "rope_scaling")) {
    const json& rs = j["rope_scaling"];
    if (!rs.is_object()) Fail("{}: rope_scaling: expected an object", path);
    const char* type_key = rs.contains("rope_type") ? "rope_type" : "type";
    if (!rs.contains(type_key) || !rs[type_key].is_string())
      Fail("{}: rope_scaling.rope_type: missing", path);
    const std::string type = rs[type_key].get<std::string>();
    auto num = [&](const char* key) -> double {
      if (!present(rs, key) || !rs[key].is_number()) Fail("{}: rope_scaling.{}: missing or not a number", path, key);
      return rs[key].get<double>();
    };
    if (type == "default") {
      // plain RoPE
    } else if (type == "linear") {
      c.rope_scaling = "linear";
      c.rope_scaling_factor = static_cast<float>(num("factor"));
    } else if (type == "llama3") {
      const double factor = num("factor"), low = num("low_freq_factor"), high = num("high_freq_factor");
      const double orig = num("original_max_position_embeddings");
      if (!(factor >= 1)) Fail("{}: rope_scaling.factor: {} must be >= 1", path, factor);
      if (!(low > 0 && high > low))
        Fail("{}: rope_scaling.high_freq_factor: needs 0 < low_freq_factor ({}) < high_freq_factor ({})", path, low,
             high);
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
    } else {
      Fail("{}: rope_scaling.{}: '{}' is not supported (linear, llama3)", path, type_key, type);
    }
  }
  c.Validate(path);
  return c;
}

json HfConfigJson(const ModelConfig& c, bool tied) {
  static const char* kClass[][2] = {
      {"llama", "LlamaForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"}, {"qwen3", "Qwen3ForCausalLM"}};
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
      Fail("config.json: rope_scaling: this model's llama3 parameters are unknown (a GGUF file holds only the "
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
