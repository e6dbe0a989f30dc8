#include "decoders/verify.h"

#include <algorithm>

#include "base/error.h"

namespace specsweep {
namespace {

// The draft's nodes by parent: children of node u (-1: the root) in index order.
class Children {
 public:
  explicit Children(const DraftView& d) : k_(static_cast<int>(d.tokens.size())), chain_(d.parents.empty()) {
    if (chain_) return;
    first_.assign(k_ + 1, -1);
    next_.assign(k_, -1);
    for (int i = k_ - 1; i >= 0; --i) {
      const int p = d.parents[i];
      next_[i] = first_[p + 1];
      first_[p + 1] = i;
    }
  }
  int First(int u) const { return chain_ ? (u + 1 < k_ ? u + 1 : -1) : first_[u + 1]; }
  int Next(int c) const { return chain_ ? -1 : next_[c]; }

 private:
  int k_;
  bool chain_;
  std::vector<int> first_, next_;  // [k+1] first child of u+1, [k] next sibling
};

void CheckShapes(const DraftView& d, std::span<const float> target_logits, int vocab) {
  const size_t k = d.tokens.size(), rows = k + 1;
  if (target_logits.size() < rows * vocab)
    Fail("verify: target_logits: {} values, need [{}][{}]", target_logits.size(), rows, vocab);
  for (int t : d.tokens)
    if (t < 0 || t >= vocab) Fail("verify: draft: token {} outside vocabulary of {}", t, vocab);
  if (!d.parents.empty() && d.parents.size() != k) Fail("verify: parents: {} for {} tokens", d.parents.size(), k);
  for (size_t i = 0; i < d.parents.size(); ++i)
    if (d.parents[i] < -1 || d.parents[i] >= static_cast<int>(i))
      Fail("verify: parents: node {} has parent {} (need -1 <= parent < node)", i, d.parents[i]);
  if (!d.probs.empty() && d.probs.size() < k * vocab)
    Fail("verify: draft_probs: {} values, need [{}][{}]", d.probs.size(), k, vocab);
}

}  // namespace

Verdict VerifyGreedy(const DraftView& d, std::span<const float> target_logits, int vocab) {
  CheckShapes(d, target_logits, vocab);
  const Children children(d);
  Verdict v;
  for (int u = -1;;) {
    const int best = Argmax(target_logits.subspan(static_cast<size_t>(u + 1) * vocab, vocab));
    int c = children.First(u);
    while (c >= 0 && d.tokens[c] != best) c = children.Next(c);
    if (c < 0) {
      v.next = best;
      v.n_accepted = static_cast<int>(v.path.size());
      return v;
    }
    v.path.push_back(u = c);
  }
}

Verdict VerifySampling(const DraftView& d, std::span<const float> target_logits, int vocab, const SamplingParams& sp,
                       Rng& rng, AcceptRule rule) {
  CheckShapes(d, target_logits, vocab);
  const Children children(d);
  const bool one_hot = d.probs.empty();
  Verdict v;
  std::vector<float> r;  // [vocab] the current target distribution, unnormalised, mass `mass`
  for (int u = -1;;) {
    ComputeProbs(target_logits.subspan(static_cast<size_t>(u + 1) * vocab, vocab), sp, r);
    double mass = 1.0;
    int c = children.First(u);
    for (; c >= 0; c = children.Next(c)) {
      const int x = d.tokens[c];
      if (one_hot) {
        // u < r(x)/mass; then r without x.
        if (rule == AcceptRule::AlwaysAccept || rng.Uniform() * mass < static_cast<double>(r[x])) break;
        mass -= r[x];
        r[x] = 0.0f;
        continue;
      }
      std::span<const float> q = d.probs.subspan(static_cast<size_t>(c) * vocab, vocab);
      // u < r/(mass q) written without division; q(x) > 0 since x was drawn from q.
      if (rule == AcceptRule::AlwaysAccept ||
          rng.Uniform() * static_cast<double>(q[x]) * mass < static_cast<double>(r[x]))
        break;
      // Residual max(0, r - q); it has mass whenever a rejection is possible (r(x) < q(x)
      // implies some other token has r > q). Scaling q by mass keeps r's scale.
      double left = 0.0;
      std::vector<float> res(vocab);  // [vocab]
      for (int t = 0; t < vocab; ++t) left += res[t] = std::max(0.0f, r[t] - static_cast<float>(mass * q[t]));
      if (left > 0.0) r.swap(res), mass = left;
    }
    if (c < 0) {  // every child rejected, or a leaf: draw from what is left
      v.next = SampleFromProbs(r, rng);
      v.n_accepted = static_cast<int>(v.path.size());
      return v;
    }
    v.path.push_back(u = c);
  }
}

Verdict VerifyReplayed(int n_accepted, std::span<const float> target_logits, int vocab, const SamplingParams& sp,
                       Rng& rng) {
  std::vector<int> path(std::max(0, n_accepted));
  for (int i = 0; i < n_accepted; ++i) path[i] = i;  // a chain's prefix
  return VerifyReplayedPath(std::move(path), target_logits, vocab, sp, rng);
}

Verdict VerifyReplayedPath(std::vector<int> path, std::span<const float> target_logits, int vocab,
                           const SamplingParams& sp, Rng& rng) {
  const int row_of_next = path.empty() ? 0 : path.back() + 1;
  if (target_logits.size() < (static_cast<size_t>(row_of_next) + 1) * vocab)
    Fail("verify: replayed: the accepted path ends at node {}, but target_logits has {} values of [K+1][{}]",
         row_of_next - 1, target_logits.size(), vocab);
  std::span<const float> row = target_logits.subspan(static_cast<size_t>(row_of_next) * vocab, vocab);
  Verdict v{static_cast<int>(path.size()), -1, std::move(path)};
  if (sp.greedy()) {
    v.next = Argmax(row);
    return v;
  }
  std::vector<float> p;  // [vocab]
  ComputeProbs(row, sp, p);
  v.next = SampleFromProbs(p, rng);
  return v;
}

}  // namespace specsweep
