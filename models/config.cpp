#include "models/config.h"

#include <cmath>
#include <numbers>

#include "base/error.h"

namespace specsweep {

void ModelConfig::Validate(const std::string& src) const {
  auto positive = [&](int v, const char* field, int max) {
    if (v <= 0 || v > max) Fail("{}: {}: {} is out of range (1..{})", src, field, v, max);
  };
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3")
    Fail("{}: architecture: '{}' is not supported (llama, qwen2, qwen3)", src, arch);
  positive(dim, "dim", 1 << 16);
  positive(hidden_dim, "hidden_dim", 1 << 18);
  positive(n_layers, "n_layers", 1024);
  positive(n_heads, "n_heads", 1024);
  positive(n_kv_heads, "n_kv_heads", 1024);
  positive(vocab_size, "vocab_size", 1 << 22);
  positive(max_seq_len, "max_seq_len", 1 << 22);
  if (head_size < 0 || head_size > 4096) Fail("{}: head_dim: {} is out of range (1..4096)", src, head_size);
  if (head_size == 0 && dim % n_heads) Fail("{}: n_heads: dim {} is not divisible by n_heads {}", src, dim, n_heads);
  if (n_heads % n_kv_heads)
    Fail("{}: n_kv_heads: n_heads {} is not divisible by n_kv_heads {}", src, n_heads, n_kv_heads);
  if (head_dim() % 2) Fail("{}: head_dim: head dimension {} is odd (RoPE needs pairs)", src, head_dim());
  if (!(norm_eps > 0.0f && norm_eps < 1.0f)) Fail("{}: rms_norm_eps: {} is out of range", src, norm_eps);
  if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta))
    Fail("{}: rope_theta: {} must be positive and finite", src, rope_theta);
  if (bos_id < 0 || bos_id >= vocab_size) Fail("{}: bos_token_id: {} outside the vocabulary", src, bos_id);
  if (eos_id < 0 || eos_id >= vocab_size) Fail("{}: eos_token_id: {} outside the vocabulary", src, eos_id);
  if (sliding_window < 0) Fail("{}: sliding_window: {} is negative", src, sliding_window);
  if (rope_scaling == "none") {
    if (!rope_freq_factors.empty()) Fail("{}: rope_scaling: frequency factors given without a scaling type", src);
  } else if (rope_scaling == "linear") {
    if (!(rope_scaling_factor >= 1.0f && std::isfinite(rope_scaling_factor)))
      Fail("{}: rope_scaling.factor: {} must be a finite number >= 1", src, rope_scaling_factor);
  } else if (rope_scaling == "llama3") {
    if (rope_freq_factors.size() != size_t(head_dim() / 2))
      Fail("{}: rope_freqs: {} frequency factors for head dimension {} (needs {})", src, rope_freq_factors.size(),
           head_dim(), head_dim() / 2);
    for (float f : rope_freq_factors)
      if (!(f > 0.0f && std::isfinite(f))) Fail("{}: rope_freqs: factor {} must be positive and finite", src, f);
  } else {
    Fail("{}: rope_scaling.rope_type: '{}' is not supported (linear, llama3)", src, rope_scaling);
  }
}

std::vector<float> ModelConfig::RopeFrequencies() const {
  const int hd = head_dim();
  std::vector<float> f(hd / 2);  // [hd/2]
  for (int j = 0; j < hd / 2; ++j) {
    f[j] = 1.0f / std::pow(rope_theta, static_cast<float>(2 * j) / static_cast<float>(hd));
    if (rope_scaling == "linear") f[j] /= rope_scaling_factor;
    if (rope_scaling == "llama3") f[j] /= rope_freq_factors[j];
  }
  return f;
}

std::vector<float> Llama3RopeFactors(float theta, int hd, float factor, float low, float high, int original) {
  std::vector<float> out(hd / 2);  // [hd/2]
  const double low_wavelen = original / double(low), high_wavelen = original / double(high);
  for (int j = 0; j < hd / 2; ++j) {
    const float freq = 1.0f / std::pow(theta, static_cast<float>(2 * j) / static_cast<float>(hd));
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < high_wavelen) {
      out[j] = 1.0f;
    } else if (wavelen > low_wavelen) {
      out[j] = factor;
    } else {
      const double smooth = (original / wavelen - low) / (double(high) - low);
      out[j] = static_cast<float>(1.0 / ((1 - smooth) / factor + smooth));
    }
  }
  return out;
}

}  // namespace specsweep
