// Llama-family hyper-parameters, one plain struct for every file format.
#pragma once
#include <string>
#include <vector>

namespace specsweep {

// Supported architectures (HF model_type / GGUF general.architecture):
//   "llama": Llama 2/3/3.1/3.2, TinyLlama, Vicuna, Mistral (HF "mistral" loads as llama)
//   "qwen2": llama + biases on the q/k/v projections
//   "qwen3": llama + per-head RMSNorm of q and k before RoPE, explicit head size
struct ModelConfig {
  std::string arch = "llama";
  int dim = 0;         // hidden size
  int hidden_dim = 0;  // FFN (intermediate) size
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;  // GQA: n_heads % n_kv_heads == 0
  int head_size = 0;   // explicit head size (HF head_dim, GGUF attention.key_length); 0: dim / n_heads
  int vocab_size = 0;
  int max_seq_len = 0;  // max_position_embeddings
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;  // rms_norm_eps (also of the qwen3 q/k norms)
  int bos_id = 1;
  int eos_id = 2;
  bool qkv_bias = false;  // q/k/v projections have biases (qwen2)
  bool qk_norm = false;   // per-head q/k RMSNorm before RoPE (qwen3)
  // Sliding-window attention (Mistral v0.1) is not modelled: positions beyond this window
  // are refused by Forward. 0: none.
  int sliding_window = 0;
  // RoPE scaling: "none", "linear" (every frequency divided by rope_scaling_factor) or
  // "llama3" (each frequency divided by its own factor, rope_freq_factors).
  std::string rope_scaling = "none";
  float rope_scaling_factor = 1.0f;      // linear
  std::vector<float> rope_freq_factors;  // llama3: [head_dim/2] (GGUF rope_freqs.weight)
  // The llama3 parameters the factors were computed from (HF rope_scaling; GGUF files
  // hold only the factors: 0 then). rope_scaling_factor is llama3's "factor".
  float rope_low_freq_factor = 0, rope_high_freq_factor = 0;
  int rope_original_context = 0;  // original_max_position_embeddings

  // llama2.c TinyStories checkpoints end a story with BOS (their training text separates
  // stories with it), so for them BOS stops generation like EOS.
  bool bos_stops = false;

  bool IsStop(int token) const { return token == eos_id || (bos_stops && token == bos_id); }
  int head_dim() const { return head_size > 0 ? head_size : dim / n_heads; }
  int q_dim() const { return head_dim() * n_heads; }
  int kv_dim() const { return head_dim() * n_kv_heads; }
  // Rotary frequency of each pair j < head_dim/2: theta^(-2j/head_dim), divided by the
  // scaling factor of that pair. The forward pass and every test oracle use this.
  std::vector<float> RopeFrequencies() const;
  // Throws Error("<source>: <field>: ...") when a field is missing or inconsistent.
  void Validate(const std::string& source) const;
};

// Llama 3.1 frequency factors ("rope_type": "llama3"): pairs with wavelength below
// original_max_position_embeddings / high_freq_factor keep their frequency (factor 1),
// above original / low_freq_factor are divided by `factor`, in between a smooth blend.
std::vector<float> Llama3RopeFactors(float theta, int head_dim, float factor, float low_freq_factor,
                                     float high_freq_factor, int original_max_position_embeddings);

// HF checkpoints order each head's q/k rows as [2][head_dim/2] (rotate_half); ours are
// interleaved pairs [head_dim/2][2]. Row i of a head in our layout is row
// HfRopeRow(i, head_dim) of the same head in HF's (also for q/k biases and norm weights).
inline int HfRopeRow(int i, int head_dim) { return (i % 2) * (head_dim / 2) + i / 2; }
// The inverse: row s of a head in HF's layout is row RopeRowOfHf(s, head_dim) in ours.
inline int RopeRowOfHf(int s, int head_dim) { return s < head_dim / 2 ? 2 * s : 2 * (s - head_dim / 2) + 1; }

}  // namespace specsweep
