// An independent double-precision reference of the supported architectures (llama,
// qwen2, qwen3), written from the papers' and model cards' definitions in Hugging Face's
// layout: dense Eigen matrices, q/k rows in rotate_half order, the whole sequence at once
// under a causal mask. It shares no code with models/forward.cpp (no blocks, no packing,
// no KV cache, its own RoPE frequencies), so an error the engine's scalar path and its
// second scalar forward (tests/test_arch.cpp) would share shows up here.
#pragma once
#include <Eigen/Dense>
#include <string>
#include <vector>

namespace specsweep {
struct Model;
}

namespace specsweep::reference {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXd;

// Hyper-parameters in HF config.json terms.
struct Config {
  std::string model_type = "llama";  // llama | qwen2 (q/k/v biases) | qwen3 (q/k RMSNorm)
  int hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0;
  int num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0, vocab_size = 0;
  double rope_theta = 10000, rms_norm_eps = 1e-5;
  // rope_scaling: "none", "linear" (factor) or "llama3" (factor, low_freq_factor,
  // high_freq_factor, original_max_position_embeddings). A GGUF llama3 file carries only
  // the per-frequency divisors (rope_freqs.weight): then `freq_divisors` and original = 0.
  std::string rope_type = "none";
  double factor = 1, low_freq_factor = 0, high_freq_factor = 0;
  int original_max_position_embeddings = 0;
  std::vector<double> freq_divisors;
};

struct Layer {
  Vec input_layernorm, post_attention_layernorm;  // [hidden]
  Mat q_proj, k_proj, v_proj;                     // [heads*hd][hidden], [kv*hd][hidden] x2
  Vec q_bias, k_bias, v_bias;                     // qwen2: [heads*hd], [kv*hd] x2; else empty
  Vec q_norm, k_norm;                             // qwen3: [hd] each; else empty
  Mat o_proj;                                     // [hidden][heads*hd]
  Mat gate_proj, up_proj;                         // [intermediate][hidden]
  Mat down_proj;                                  // [hidden][intermediate]
};

struct RefModel {
  Config config;
  Mat embed_tokens;  // [vocab][hidden]
  std::vector<Layer> layers;
  Vec norm;     // [hidden]
  Mat lm_head;  // [vocab][hidden] (a copy of embed_tokens when tied)
};

// HF's inverse frequencies [hd/2] with the configured scaling.
Vec InverseFrequencies(const Config& c);

// Logits [tokens][vocab] of tokens at positions 0..n-1, computed in double precision.
Mat Logits(const RefModel& m, const std::vector<int>& tokens);

// Weights of an engine Model, dequantized (whatever their type and in-memory layout) and
// with q/k rows (and their biases and norms) put back from the engine's interleaved RoPE
// order into HF's rotate_half order. Only hyper-parameters are read from model.config.
RefModel FromEngineModel(const Model& model);

// Weights read straight from an HF folder (config.json + one F32 model.safetensors),
// without the project's loader: the rows are already in HF's order.
RefModel FromHfFolder(const std::string& dir);

}  // namespace specsweep::reference
