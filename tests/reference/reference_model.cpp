// The forward pass of the reference (see reference_model.h), from the definitions:
//   RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x^2) + eps) * g
//   RoPE (Su et al. 2021) in HF's rotate_half form: for a head vector x = [x1 | x2] at
//     position p, x' = [x1 cos - x2 sin | x2 cos + x1 sin], angles p * inv_freq[j]
//   GQA (Ainslie et al. 2023): query head h reads key/value head h / (heads / kv_heads)
//   SwiGLU FFN (Shazeer 2020): down(silu(gate(x)) * up(x))
//   qwen2: biases on q/k/v; qwen3: RMSNorm of each q and k head before RoPE.
#include "tests/reference/reference_model.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

namespace specsweep::reference {
namespace {

// Each row of x [n][d] normalised and scaled by g [d].
Mat RmsNormRows(const Mat& x, const Vec& g, double eps) {
  Mat y(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double rms = std::sqrt(x.row(r).squaredNorm() / double(x.cols()) + eps);
    y.row(r) = (x.row(r).array() / rms) * g.transpose().array();
  }
  return y;
}

// x [n][in] times W^T (W [out][in]) plus an optional bias [out].
Mat Linear(const Mat& x, const Mat& w, const Vec& bias) {
  Mat y = x * w.transpose();
  if (bias.size()) y.rowwise() += bias.transpose();
  return y;
}

// Per-head q/k treatment of t [n][heads*hd] in place: the qwen3 norm, then RoPE.
void NormAndRotate(Mat& t, int heads, int hd, const Vec& head_norm, const Vec& inv_freq, double eps) {
  const int half = hd / 2;
  for (int h = 0; h < heads; ++h) {
    Mat x = t.middleCols(h * hd, hd);  // [n][hd]
    if (head_norm.size()) x = RmsNormRows(x, head_norm, eps);
    for (Eigen::Index p = 0; p < x.rows(); ++p)
      for (int j = 0; j < half; ++j) {
        const double a = double(p) * inv_freq[j], c = std::cos(a), s = std::sin(a);
        const double x1 = x(p, j), x2 = x(p, j + half);
        x(p, j) = x1 * c - x2 * s;
        x(p, j + half) = x2 * c + x1 * s;
      }
    t.middleCols(h * hd, hd) = x;
  }
}

// Causal softmax(Q K^T / sqrt(hd)) V per query head, K/V shared by a group of heads.
Mat Attention(const Mat& q, const Mat& k, const Mat& v, const Config& c) {
  const int hd = c.head_dim, n = int(q.rows());
  const int group = c.num_attention_heads / c.num_key_value_heads;
  Mat out(n, q.cols());
  for (int h = 0; h < c.num_attention_heads; ++h) {
    const int kvh = h / group;
    Mat s = q.middleCols(h * hd, hd) * k.middleCols(kvh * hd, hd).transpose() / std::sqrt(double(hd));  // [n][n]
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) s(i, j) = -std::numeric_limits<double>::infinity();
      s.row(i).array() = (s.row(i).array() - s.row(i).maxCoeff()).exp();
      s.row(i) /= s.row(i).sum();
    }
    out.middleCols(h * hd, hd) = s * v.middleCols(kvh * hd, hd);
  }
  return out;
}

}  // namespace

Vec InverseFrequencies(const Config& c) {
  const int half = c.head_dim / 2;
  Vec f(half);
  for (int j = 0; j < half; ++j) f[j] = std::pow(c.rope_theta, -2.0 * j / c.head_dim);
  if (c.rope_type == "none") return f;
  if (c.rope_type == "linear") return f / c.factor;  // positions divided by factor
  if (c.rope_type != "llama3") throw std::runtime_error("reference: rope_type " + c.rope_type);
  if (c.original_max_position_embeddings == 0) {  // GGUF: the file's divisors
    for (int j = 0; j < half; ++j) f[j] /= c.freq_divisors.at(j);
    return f;
  }
  // Llama 3.1: wavelengths shorter than original/high keep their frequency, longer than
  // original/low are slowed by `factor`, in between a linear blend in original/wavelength.
  const double orig = c.original_max_position_embeddings;
  const double short_wave = orig / c.high_freq_factor, long_wave = orig / c.low_freq_factor;
  for (int j = 0; j < half; ++j) {
    const double wavelength = 2 * std::numbers::pi / f[j];
    if (wavelength > long_wave) {
      f[j] /= c.factor;
    } else if (wavelength >= short_wave) {
      const double w = (orig / wavelength - c.low_freq_factor) / (c.high_freq_factor - c.low_freq_factor);
      f[j] = (1 - w) * f[j] / c.factor + w * f[j];
    }
  }
  return f;
}

Mat Logits(const RefModel& m, const std::vector<int>& tokens) {
  const Config& c = m.config;
  const Vec inv_freq = InverseFrequencies(c);
  const Vec none;
  Mat x(tokens.size(), c.hidden_size);  // [n][hidden] residual stream
  for (size_t i = 0; i < tokens.size(); ++i) x.row(i) = m.embed_tokens.row(tokens[i]);
  for (const Layer& L : m.layers) {
    const Mat xn = RmsNormRows(x, L.input_layernorm, c.rms_norm_eps);
    Mat q = Linear(xn, L.q_proj, L.q_bias);  // [n][heads*hd]
    Mat k = Linear(xn, L.k_proj, L.k_bias);  // [n][kv*hd]
    const Mat v = Linear(xn, L.v_proj, L.v_bias);
    NormAndRotate(q, c.num_attention_heads, c.head_dim, L.q_norm, inv_freq, c.rms_norm_eps);
    NormAndRotate(k, c.num_key_value_heads, c.head_dim, L.k_norm, inv_freq, c.rms_norm_eps);
    x += Linear(Attention(q, k, v, c), L.o_proj, none);
    const Mat hn = RmsNormRows(x, L.post_attention_layernorm, c.rms_norm_eps);
    const Mat g = Linear(hn, L.gate_proj, none), u = Linear(hn, L.up_proj, none);  // [n][intermediate]
    const Mat act = (g.array() / (1.0 + (-g.array()).exp()) * u.array()).matrix();
    x += Linear(act, L.down_proj, none);
  }
  return RmsNormRows(x, m.norm, c.rms_norm_eps) * m.lm_head.transpose();  // [n][vocab]
}

}  // namespace specsweep::reference
