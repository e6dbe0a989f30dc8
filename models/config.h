// Llama-family hyper-parameters, one plain struct for every file format.
#pragma once
#include <string>

namespace specsweep {

struct ModelConfig {
  std::string arch = "llama";
  int dim = 0;          // hidden size
  int hidden_dim = 0;   // FFN (intermediate) size
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;   // GQA: n_heads % n_kv_heads == 0
  int vocab_size = 0;
  int max_seq_len = 0;  // max_position_embeddings
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;  // rms_norm_eps
  int bos_id = 1;
  int eos_id = 2;
  // llama2.c TinyStories checkpoints end a story with BOS (their training text separates
  // stories with it), so for them BOS stops generation like EOS.
  bool bos_stops = false;

  bool IsStop(int token) const { return token == eos_id || (bos_stops && token == bos_id); }
  int head_dim() const { return dim / n_heads; }
  int kv_dim() const { return head_dim() * n_kv_heads; }
  // Throws Error("<source>: <field>: ...") when a field is missing or inconsistent.
  void Validate(const std::string& source) const;
};

}  // namespace specsweep
