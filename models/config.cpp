#include "models/config.h"

#include <cmath>

#include "models/error.h"

namespace specsweep {

void ModelConfig::Validate(const std::string& src) const {
  auto positive = [&](int v, const char* field, int max) {
    if (v <= 0 || v > max) Fail("{}: {}: {} is out of range (1..{})", src, field, v, max);
  };
  if (arch != "llama") Fail("{}: architecture: '{}' is not supported (only llama)", src, arch);
  positive(dim, "dim", 1 << 16);
  positive(hidden_dim, "hidden_dim", 1 << 18);
  positive(n_layers, "n_layers", 1024);
  positive(n_heads, "n_heads", 1024);
  positive(n_kv_heads, "n_kv_heads", 1024);
  positive(vocab_size, "vocab_size", 1 << 22);
  positive(max_seq_len, "max_seq_len", 1 << 22);
  if (dim % n_heads) Fail("{}: n_heads: dim {} is not divisible by n_heads {}", src, dim, n_heads);
  if (n_heads % n_kv_heads)
    Fail("{}: n_kv_heads: n_heads {} is not divisible by n_kv_heads {}", src, n_heads, n_kv_heads);
  if (head_dim() % 2) Fail("{}: n_heads: head dimension {} is odd (RoPE needs pairs)", src, head_dim());
  if (!(norm_eps > 0.0f && norm_eps < 1.0f)) Fail("{}: rms_norm_eps: {} is out of range", src, norm_eps);
  if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta)) Fail("{}: rope_theta: {} must be positive and finite", src, rope_theta);
  if (bos_id < 0 || bos_id >= vocab_size) Fail("{}: bos_token_id: {} outside the vocabulary", src, bos_id);
  if (eos_id < 0 || eos_id >= vocab_size) Fail("{}: eos_token_id: {} outside the vocabulary", src, eos_id);
}

}  // namespace specsweep
