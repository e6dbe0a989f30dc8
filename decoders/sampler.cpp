#include "decoders/sampler.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <numeric>

#include "base/error.h"

namespace specsweep {

int Argmax(std::span<const float> x) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(x.size()); ++i)
    if (x[i] > x[best]) best = i;  // strict: the first maximum is kept
  return best;
}

int FirstNonFinite(std::span<const float> x) {
  constexpr uint32_t kExp = 0x7f800000u;  // all exponent bits set: Inf or NaN
  uint32_t any = 0;
  for (float v : x) any |= uint32_t((std::bit_cast<uint32_t>(v) & kExp) == kExp);
  if (!any) return -1;
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i])) return static_cast<int>(i);
  return -1;
}

float MaxSoftmaxProb(std::span<const float> logits) {
  const float mx = logits[Argmax(logits)];
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
  return static_cast<float>(1.0 / sum);  // exp(max - max) / sum
}

void ComputeProbs(std::span<const float> logits, const SamplingParams& sp, std::vector<float>& probs) {
  const int n = static_cast<int>(logits.size());
  probs.assign(n, 0.0f);  // [vocab]
  const int top = Argmax(logits);
  if (!std::isfinite(logits[top])) Fail("sampler: logits: non-finite value at token {}", top);
  if (sp.greedy()) {
    probs[top] = 1.0f;
    return;
  }
  const double inv_t = 1.0 / sp.temperature;
  const bool use_k = sp.top_k > 0 && sp.top_k < n;
  const bool use_p = sp.top_p < 1.0f;
  if (!use_k && !use_p) {
    // Full softmax in double: p and q must be accurate where their ratio is taken.
    double sum = 0.0;
    std::vector<double> e(n);  // [vocab]
    for (int i = 0; i < n; ++i) sum += e[i] = std::exp((static_cast<double>(logits[i]) - logits[top]) * inv_t);
    for (int i = 0; i < n; ++i) probs[i] = static_cast<float>(e[i] / sum);
    return;
  }
  // Candidate order (logit desc, index asc); only the first m are ever needed.
  std::vector<int> idx(n);  // [vocab] token ids
  std::iota(idx.begin(), idx.end(), 0);
  auto before = [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  int m = use_k ? sp.top_k : n;
  if (use_k)
    std::partial_sort(idx.begin(), idx.begin() + m, idx.end(), before);
  else
    std::sort(idx.begin(), idx.end(), before);
  std::vector<double> e(m);  // [m] unnormalised weights of the candidates, descending
  double sum = 0.0;
  for (int j = 0; j < m; ++j) sum += e[j] = std::exp((static_cast<double>(logits[idx[j]]) - logits[top]) * inv_t);
  if (use_p) {
    // Smallest prefix whose mass reaches top_p (at least one token).
    double cum = 0.0;
    int keep = 0;
    while (keep < m) {
      cum += e[keep++] / sum;
      if (cum >= sp.top_p) break;
    }
    m = keep;
    sum = 0.0;
    for (int j = 0; j < m; ++j) sum += e[j];
  }
  for (int j = 0; j < m; ++j) probs[idx[j]] = static_cast<float>(e[j] / sum);
}

int SampleFromProbs(std::span<const float> probs, Rng& rng) {
  double total = 0.0;
  for (float p : probs) total += p;
  if (!(total > 0.0)) Fail("sampler: probs: distribution has no mass");
  const double u = rng.Uniform() * total;
  double cum = 0.0;
  int last = 0;
  for (int i = 0; i < static_cast<int>(probs.size()); ++i) {
    if (probs[i] <= 0.0f) continue;
    cum += probs[i];
    last = i;
    if (u < cum) return i;
  }
  return last;  // rounding left u just above the running sum: last token with mass
}

void ValidateSampling(const SamplingParams& sp, const char* what) {
  if (!std::isfinite(sp.temperature)) Fail("{}: temperature: must be finite", what);
  if (sp.top_k < 0) Fail("{}: top_k: must be >= 0 (0 = off), got {}", what, sp.top_k);
  if (!(sp.top_p > 0.0f && sp.top_p <= 1.0f)) Fail("{}: top_p: must be in (0, 1] (1 = off), got {}", what, sp.top_p);
}

}  // namespace specsweep
