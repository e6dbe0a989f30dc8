#include "decoders/draft_tree.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>

#include "base/error.h"

namespace specsweep {
namespace {

// The m most probable tokens of q (descending; the lowest id first on ties), in one
// pass: a draft tree asks this of every node it expands.
std::vector<int> TopTokens(std::span<const float> q, int m) {
  m = std::min<int>(m, static_cast<int>(q.size()));
  std::vector<int> top;  // [<= m]
  for (int i = 0; i < static_cast<int>(q.size()); ++i) {
    if (static_cast<int>(top.size()) == m && !(q[i] > q[top.back()])) continue;
    top.insert(std::upper_bound(top.begin(), top.end(), i, [&](int a, int b) { return q[a] > q[b]; }), i);
    if (static_cast<int>(top.size()) > m) top.pop_back();
  }
  return top;
}

// log sum_x exp((row[x] - mx) / tau), mx = max(row). Terms below e^-40 are skipped: at
// most vocab x 4e-18 relative, and most of a sharp row (small tau) costs a compare, not
// an exp -- a dynamic tree evaluates this for every node it expands.
double LogSumExpAt(std::span<const float> row, float mx, double tau) {
  const float floor = mx - static_cast<float>(40.0 * tau);
  double z = 0;
  for (float x : row)
    if (x >= floor) z += std::exp(double(x - mx) / tau);
  return std::log(z);
}

// softmax(row / tau) of each token in `ids`.
std::vector<double> SoftmaxAt(std::span<const float> row, const std::vector<int>& ids, double tau) {
  const float mx = *std::max_element(row.begin(), row.end());
  const double lz = LogSumExpAt(row, mx, tau);
  std::vector<double> p;
  for (int t : ids) p.push_back(std::exp(double(row[t] - mx) / tau - lz));
  return p;
}

}  // namespace

double TreeCalibration::Tau() const {
  if (observed == 0) return 1.0;
  return kTaus[std::max_element(loglik.begin(), loglik.end()) - loglik.begin()];
}

void TreeCalibration::Observe(std::span<const float> r, int t) {
  const float mx = *std::max_element(r.begin(), r.end());
  for (size_t i = 0; i < kTaus.size(); ++i) loglik[i] += double(r[t] - mx) / kTaus[i] - LogSumExpAt(r, mx, kTaus[i]);
  ++observed;
}

void TreeCalibration::Learn(std::span<const int> seq) {
  if (row_pos < 0 || row_pos + 1 >= static_cast<int>(seq.size())) return;
  Observe(row, seq[row_pos + 1]);
  row_pos = -1;
}

void NodeCandidates(std::span<const float> row, const TreeShape& shape, int depth, const SamplingParams& sampling,
                    double tau, std::vector<float>& q, std::vector<int>& tokens, std::vector<double>& pr) {
  const bool dynamic = shape.branching.empty();
  tokens.clear();
  pr.clear();
  if (!dynamic && !sampling.greedy()) {  // i.i.d. children: the caller draws them from q
    ComputeProbs(row, sampling, q);
    return;
  }
  tokens = TopTokens(row, dynamic ? kDynamicTopK : shape.branching[depth]);
  if (!dynamic) return;
  if (sampling.greedy()) {
    pr = SoftmaxAt(row, tokens, tau);
  } else {
    ComputeProbs(row, sampling, q);
    for (int t : tokens) pr.push_back(q[t]);
  }
}

double TreeRowsWork(std::span<const float> rows, int vocab, bool root, const TreeShape& shape,
                    const SamplingParams& sampling, double tau) {
  const bool dynamic = shape.branching.empty();
  const int depth = root || dynamic ? 0 : std::min<int>(1, shape.branching.size() - 1);
  std::vector<float> q;
  std::vector<int> tokens;
  std::vector<double> pr;
  Rng rng(1);
  double sink = 0;
  for (size_t r = 0; r + vocab <= rows.size(); r += vocab) {
    std::span<const float> row = rows.subspan(r, vocab);
    if (root && dynamic && sampling.greedy()) {  // TreeCalibration::Learn and the kept row
      TreeCalibration scratch;
      scratch.Observe(row, Argmax(row));
      scratch.row.assign(row.begin(), row.end());
      sink += scratch.loglik[0];
    }
    NodeCandidates(row, shape, depth, sampling, tau, q, tokens, pr);
    if (!dynamic && !sampling.greedy())
      for (int j = 0; j < shape.branching[depth]; ++j) sink += SampleFromProbs(q, rng);
    for (double p : pr) sink += p;
    for (int t : tokens) sink += t;
  }
  return sink;
}

void LookupTree(std::span<const int> seq, int k, int max_ngram, int min_ngram, DraftBlock& out) {
  const int len = static_cast<int>(seq.size());
  // Where the continuations start: every earlier occurrence of the longest suffix n-gram
  // that recurs, most recent first.
  std::vector<int> from;
  for (int n = max_ngram; n >= min_ngram && from.empty(); --n) {
    if (len <= n) continue;
    std::span<const int> suffix = seq.subspan(len - n);
    for (int s = len - n - 1; s >= 0; --s)
      if (std::equal(suffix.begin(), suffix.end(), seq.begin() + s)) from.push_back(s + n);
  }
  // Merge them breadth first (every continuation's first token before any second one),
  // so a small budget holds the alternatives rather than one long copy.
  std::vector<int>& tok = out.tokens;
  std::vector<int>& par = out.parents;
  std::vector<int> at(from.size(), -1);  // each continuation's trie node so far
  for (int depth = 0; depth < k && static_cast<int>(tok.size()) < k; ++depth) {
    bool grew = false;
    for (size_t m = 0; m < from.size() && static_cast<int>(tok.size()) < k; ++m) {
      const int i = from[m] + depth;
      if (i >= len || (depth > 0 && at[m] < 0)) continue;
      int c = -1;
      for (int j = 0; j < static_cast<int>(tok.size()) && c < 0; ++j)
        if (par[j] == at[m] && tok[j] == seq[i]) c = j;
      if (c < 0) {
        tok.push_back(seq[i]);
        par.push_back(at[m]);
        c = static_cast<int>(tok.size()) - 1;
      }
      at[m] = c;
      grew = true;
    }
    if (!grew) break;
  }
  bool chain = true;
  for (size_t i = 0; i < par.size(); ++i) chain &= par[i] == static_cast<int>(i) - 1;
  if (chain) par.clear();
}

}  // namespace specsweep
