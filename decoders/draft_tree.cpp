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

// A node grown by the draft before selection.
struct Grown {
  int token, parent;  // parent: index in the grown list, -1 for the root
  double score;       // cumulative draft probability of the path (dynamic trees)
  int rank;           // among its parent's candidate children (0: the draft's best)
  int slot = -1;      // draft cache slot once run (expanded), else -1
};

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

// One more draft call over n positions in a by-size histogram ([n-1]).
void CountCall(std::vector<int64_t>& by_size, int n) {
  if (by_size.size() < size_t(n)) by_size.resize(n, 0);
  ++by_size[n - 1];
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

// Keeps the path of the cached tree that seq follows (its accepted tokens), drops the
// rest. seq's last token is never kept: its logits are the new root's, so it is fed.
void KeepFollowedPath(KVCache& cache, const std::vector<int>& tree_tokens, std::span<const int> seq) {
  if (!cache.has_tree()) return;
  const int from = cache.tree_from();
  std::vector<int> path;
  for (int j = from, u = from - 1; j + 1 < static_cast<int>(seq.size()); ++j) {
    int next = -1;
    for (int s = u + 1; s < cache.length() && next < 0; ++s)
      if (cache.parent(s) == u && tree_tokens[s - from] == seq[j]) next = s;
    if (next < 0) break;
    path.push_back(u = next);
  }
  cache.KeepPath(path);
}

namespace {

// Replay of a recorded tree (TreeStep): which grown node each recorded node is, found by
// (parent, rank) as the growth reaches it.
class RecordedTree {
 public:
  explicit RecordedTree(const TreeStep& t)
      : t_(t), grown_(t.parents.size(), -1), has_child_(t.parents.size(), false) {
    for (int p : t.parents)
      if (p >= 0) has_child_[p] = true;
  }
  int nodes() const { return static_cast<int>(grown_.size()); }
  int grown(int i) const { return grown_[i]; }
  // Maps the recorded nodes among the just-grown `added`; true when `a` is one.
  void Map(const std::vector<Grown>& g, const std::vector<int>& added) {
    for (int i = 0; i < nodes(); ++i) {
      if (grown_[i] >= 0) continue;
      const int p = t_.parents[i] < 0 ? -1 : grown_[t_.parents[i]];
      if (t_.parents[i] >= 0 && p < 0) continue;
      for (int a : added)
        if (g[a].parent == p && g[a].rank == t_.ranks[i]) grown_[i] = a;
    }
  }
  // The nodes of `added` the recorded call `call` runs: those with recorded children,
  // then the other recorded ones, then the rest, to the recorded call's size; each by
  // score as the dynamic tree picks them (a kept leaf the real run expanded outscored
  // the kept leaves it did not).
  std::vector<int> Expand(const std::vector<Grown>& g, std::vector<int> added, int call) const {
    std::stable_sort(added.begin(), added.end(), [&](int a, int b) { return g[a].score > g[b].score; });
    std::vector<int> out;
    for (int pass = 0; pass < 3; ++pass)
      for (int a : added) {
        const int i = Recorded(a);
        const bool take = pass == 0 ? i >= 0 && has_child_[i] : pass == 1 ? i >= 0 && !has_child_[i] : i < 0;
        if (take && (pass == 0 || static_cast<int>(out.size()) < t_.expanded[call])) out.push_back(a);
      }
    return out;
  }

 private:
  int Recorded(int a) const {
    for (int i = 0; i < nodes(); ++i)
      if (grown_[i] == a) return i;
    return -1;
  }
  const TreeStep& t_;
  std::vector<int> grown_;      // [n] grown-list index of recorded node i (-1: not yet grown)
  std::vector<bool> has_child_;  // [n]
};

}  // namespace

void ProposeModelTree(const Runtime& rt, const Model& model, KVCache& cache, std::vector<int>& tree_tokens, std::span<const int> seq,
                      int k, const TreeShape& shape, const SamplingParams& sampling, TreeCalibration& cal, Rng& rng,
                      DraftBlock& out, GenerationStats& st, const TreeStep* replay) {
  KeepFollowedPath(cache, tree_tokens, seq);
  tree_tokens.clear();
  const int vocab = model.config.vocab_size;
  const bool dynamic = shape.branching.empty();
  const bool iid = !dynamic && !sampling.greedy();  // SpecInfer's sampled expansion
  const int n_seq = static_cast<int>(seq.size());
  const int keep = dynamic ? std::min(k, shape.budget) : k;  // nodes proposed at most
  // Replay: the recorded calls, and growth without the cap (the recorded nodes are kept).
  std::optional<RecordedTree> rec;
  if (replay) {
    if (static_cast<int>(replay->parents.size()) > k)
      Fail("acceptance replay: the recorded tree has {} nodes, K is {} (ClipTree cuts it first)", replay->parents.size(), k);
    rec.emplace(*replay);
  }
  const int max_depth = rec ? static_cast<int>(replay->expanded.size()) + 1
                            : dynamic ? keep : static_cast<int>(shape.branching.size());
  if (rec && !dynamic && max_depth > static_cast<int>(shape.branching.size()))
    Fail("acceptance replay: the recorded tree runs {} draft calls, this draft's static shape at most {}: replay a "
         "trace recorded with the same draft shape", max_depth - 1, shape.branching.size() - 1);
  const int grow_cap = rec || dynamic ? std::numeric_limits<int>::max() : k;
  // Catch up; the root's logits are the last row.
  CountCall(st.draft_calls_by_size, n_seq - cache.length());
  std::span<const float> l = Forward(rt, model, seq.subspan(cache.length()), cache.length(), cache, false);
  ++st.draft_calls;
  const bool calibrate = dynamic && sampling.greedy();
  if (calibrate) {  // learn from the last step's root, keep this one's
    cal.Learn(seq);
    cal.row.assign(l.begin(), l.end());
    cal.row_pos = n_seq - 1;
  }
  const double tau = cal.Tau();
  std::vector<float> rows(l.begin(), l.end());  // [frontier][vocab] logits of the frontier
  std::vector<Grown> nodes;
  std::vector<int> frontier{-1};  // grown-list indices of the nodes just run (-1: the root)
  std::vector<float> q, node_q;   // [vocab]; [nodes][vocab] each node's q (iid only)
  std::vector<int> top;
  std::vector<double> pr;  // each candidate's chance of acceptance (dynamic; TreeCalibration)
  for (int depth = 0; depth < max_depth; ++depth) {
    std::vector<int> added;
    for (size_t f = 0; f < frontier.size(); ++f) {
      const int u = frontier[f];
      NodeCandidates(std::span<const float>(&rows[f * vocab], vocab), shape, depth, sampling, tau, q, top, pr);
      const int b = dynamic ? static_cast<int>(top.size()) : shape.branching[depth];
      for (int j = 0; j < b && static_cast<int>(nodes.size()) < grow_cap; ++j) {
        const double score = dynamic ? (u < 0 ? 1.0 : nodes[u].score) * pr[j] : 0.0;
        nodes.push_back({iid ? SampleFromProbs(q, rng) : top[j], u, score, j});
        added.push_back(static_cast<int>(nodes.size()) - 1);
        if (iid) node_q.insert(node_q.end(), q.begin(), q.end());
      }
    }
    if (rec) {
      rec->Map(nodes, added);
      if (depth + 1 < max_depth) added = rec->Expand(nodes, added, depth);
    } else if (dynamic) {
      // Expand the kDynamicTopK best new nodes, except those that cannot enter the final
      // top `keep`: a child scores at most its parent, and later-grown nodes lose ties,
      // so their subtrees would be dropped anyway (the kept tree is unchanged).
      std::stable_sort(added.begin(), added.end(), [&](int a, int b) { return nodes[a].score > nodes[b].score; });
      if (added.size() > size_t(kDynamicTopK)) added.resize(kDynamicTopK);
      if (static_cast<int>(nodes.size()) >= keep) {
        std::vector<double> scores;
        for (const Grown& g : nodes) scores.push_back(g.score);
        std::nth_element(scores.begin(), scores.begin() + keep - 1, scores.end(), std::greater<>());
        std::erase_if(added, [&](int a) { return nodes[a].score <= scores[keep - 1]; });
      }
    }
    // The draft's cache holds every expanded node: stop at its context end.
    if (depth + 1 == max_depth || added.empty() || cache.length() + static_cast<int>(added.size()) > cache.capacity())
      break;
    // Run the nodes to expand with the tree mask, each below its parent's slot.
    std::vector<int> toks, parents;
    for (int a : added) {
      toks.push_back(nodes[a].token);
      parents.push_back(nodes[a].parent < 0 ? n_seq - 1 : nodes[nodes[a].parent].slot);
      nodes[a].slot = cache.length() + static_cast<int>(toks.size()) - 1;
    }
    l = Forward(rt, model, toks, cache.length(), cache, true, parents);  // [added][vocab]
    tree_tokens.insert(tree_tokens.end(), toks.begin(), toks.end());
    ++st.draft_calls;
    CountCall(st.draft_tree_calls_by_size, static_cast<int>(toks.size()));
    out.expanded.push_back(static_cast<int>(toks.size()));
    rows.assign(l.begin(), l.end());
    frontier = added;
  }

  // Every node (static), the `keep` best by score (dynamic) or the recorded ones
  // (replay), in grown order (parents before children), parents renumbered.
  std::vector<int> chosen(nodes.size());
  std::iota(chosen.begin(), chosen.end(), 0);
  if (rec) {
    chosen.clear();
    for (int i = 0; i < rec->nodes(); ++i) {
      if (rec->grown(i) < 0)
        Fail("acceptance replay: the recorded tree's node {} (rank {} below node {}) is not among the children "
             "this draft grows: replay a trace recorded with the same draft shape",
             i, replay->ranks[i], replay->parents[i]);
      chosen.push_back(rec->grown(i));
    }
  } else if (static_cast<int>(chosen.size()) > keep) {
    std::stable_sort(chosen.begin(), chosen.end(), [&](int a, int b) { return nodes[a].score > nodes[b].score; });
    chosen.resize(keep);
    std::sort(chosen.begin(), chosen.end());
  }
  std::vector<int> index(nodes.size(), -1);
  for (size_t i = 0; i < chosen.size(); ++i) {
    const Grown& g = nodes[chosen[i]];
    const int p = g.parent < 0 ? -1 : index[g.parent];
    // A parent scores at least its child and was grown first, so the stable order keeps
    // it whenever it keeps the child (a recorded tree lists parents first).
    if (g.parent >= 0 && p < 0) Fail("draft tree: node {} kept without its parent", chosen[i]);
    index[chosen[i]] = static_cast<int>(i);
    out.tokens.push_back(g.token);
    out.parents.push_back(p);
    out.ranks.push_back(g.rank);
    if (iid) out.probs.insert(out.probs.end(), &node_q[size_t(chosen[i]) * vocab], &node_q[size_t(chosen[i] + 1) * vocab]);
  }
}

TreeStep ClipTree(const TreeStep& t, int k, bool grown_order) {
  const int n = static_cast<int>(t.parents.size());
  if (n <= k) return t;
  std::vector<bool> keep(n, false);
  int kept = 0;
  if (!grown_order)  // the path runs down from the root: any prefix of it is a tree
    for (int i : t.path)
      if (kept < k) keep[i] = true, ++kept;
  for (int i = 0; i < n && kept < k; ++i)  // a parent precedes its child, so is decided
    if (!keep[i] && (t.parents[i] < 0 || keep[t.parents[i]])) keep[i] = true, ++kept;
  std::vector<int> index(n, -1);  // [n] the node's index in the cut tree
  TreeStep out;
  out.expanded = t.expanded;
  for (int i = 0; i < n; ++i)
    if (keep[i]) {
      index[i] = static_cast<int>(out.parents.size());
      out.parents.push_back(t.parents[i] < 0 ? -1 : index[t.parents[i]]);
      out.ranks.push_back(t.ranks[i]);
    }
  for (int i : t.path) {
    if (!keep[i]) break;
    out.path.push_back(index[i]);
  }
  return out;
}

void Drafter::ProposeRecorded(std::span<const int>, int, const TreeStep&, Rng&, DraftBlock&, GenerationStats&) {
  Fail("acceptance replay: drafter '{}' cannot replay a recorded token tree (a trace of a model-drafted tree "
       "replays on a model-drafted tree)", name());
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
