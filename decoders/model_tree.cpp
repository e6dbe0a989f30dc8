// A draft model's token trees (draft_tree.h): grown level by level, one draft call per
// depth with the tree mask. What grows is one of three pieces -- a static shape
// (SpecInfer/Sequoia), a dynamic tree (EAGLE-2) or a recorded tree replayed
// (acceptance_source.h) -- around one loop; the tree leaves the cache at the step's
// Rollback, which keeps the accepted path.
#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

#include "base/error.h"
#include "decoders/draft_tree.h"

namespace specsweep {
namespace {

// A node grown by the draft before selection.
struct Grown {
  int token, parent;  // parent: index in the grown list, -1 for the root
  double score;       // cumulative draft probability of the path (dynamic trees)
  int rank;           // among its parent's candidate children (0: the draft's best)
  int slot = -1;      // draft cache slot once run (expanded), else -1
};

// The nodes grown so far; in sampling mode with a static shape (SpecInfer's i.i.d.
// children) each node's q.
struct GrownTree {
  std::vector<Grown> nodes;
  std::vector<float> q;  // [nodes][vocab] (i.i.d. only)
};

// One more draft call over n positions in a by-size histogram ([n-1]).
void CountCall(std::vector<int64_t>& by_size, int n) {
  if (by_size.size() < size_t(n)) by_size.resize(n, 0);
  ++by_size[n - 1];
}

std::vector<int> AllNodes(const std::vector<Grown>& nodes) {
  std::vector<int> all(nodes.size());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// How a tree grows: how deep and how many nodes at most, which of each depth's new
// nodes the next draft call runs (expands), and which nodes it proposes.
class TreeGrowth {
 public:
  virtual ~TreeGrowth() = default;
  virtual int MaxDepth() const = 0;
  virtual int GrowCap() const { return std::numeric_limits<int>::max(); }
  // Cuts `added`, the nodes just grown at `depth`, to those the next call runs.
  virtual void Expand(const std::vector<Grown>& nodes, std::vector<int>& added, int depth) = 0;
  // The proposed nodes in grown order (parents before children).
  virtual std::vector<int> Chosen(const std::vector<Grown>& nodes) const = 0;
};

// SpecInfer/Sequoia: the shape's every node, grown breadth first up to k, each depth
// expanded whole.
class StaticGrowth final : public TreeGrowth {
 public:
  StaticGrowth(const TreeShape& shape, int k) : depth_(static_cast<int>(shape.branching.size())), k_(k) {}
  int MaxDepth() const override { return depth_; }
  int GrowCap() const override { return k_; }
  void Expand(const std::vector<Grown>&, std::vector<int>&, int) override {}
  std::vector<int> Chosen(const std::vector<Grown>& nodes) const override { return AllNodes(nodes); }

 private:
  int depth_, k_;
};

// EAGLE-2: each depth expands its kDynamicTopK best new nodes; the tree proposes the
// min(k, budget) best by score.
class DynamicGrowth final : public TreeGrowth {
 public:
  DynamicGrowth(const TreeShape& shape, int k) : keep_(std::min(k, shape.budget)) {}
  int MaxDepth() const override { return keep_; }
  // Except the new nodes that cannot enter the final top `keep`: a child scores at most
  // its parent, and later-grown nodes lose ties, so their subtrees would be dropped
  // anyway (the kept tree is unchanged).
  void Expand(const std::vector<Grown>& nodes, std::vector<int>& added, int) override {
    std::stable_sort(added.begin(), added.end(), [&](int a, int b) { return nodes[a].score > nodes[b].score; });
    if (added.size() > size_t(kDynamicTopK)) added.resize(kDynamicTopK);
    if (static_cast<int>(nodes.size()) < keep_) return;
    std::vector<double> scores;
    for (const Grown& g : nodes) scores.push_back(g.score);
    std::nth_element(scores.begin(), scores.begin() + keep_ - 1, scores.end(), std::greater<>());
    std::erase_if(added, [&](int a) { return nodes[a].score <= scores[keep_ - 1]; });
  }
  std::vector<int> Chosen(const std::vector<Grown>& nodes) const override {
    std::vector<int> chosen = AllNodes(nodes);
    if (static_cast<int>(chosen.size()) <= keep_) return chosen;
    std::stable_sort(chosen.begin(), chosen.end(), [&](int a, int b) { return nodes[a].score > nodes[b].score; });
    chosen.resize(keep_);
    std::sort(chosen.begin(), chosen.end());
    return chosen;
  }

 private:
  int keep_;
};

// Replay of a recorded tree (TreeStep) with its recorded draft calls, grown from the
// shape's candidate children without a cap: which grown node each recorded node is is
// found by (parent, rank) as the growth reaches it.
class ReplayedGrowth final : public TreeGrowth {
 public:
  ReplayedGrowth(const TreeStep& t, const TreeShape& shape, int k)
      : t_(t), grown_(t.parents.size(), -1), has_child_(t.parents.size(), false) {
    if (static_cast<int>(t.parents.size()) > k)
      Fail("acceptance replay: the recorded tree has {} nodes, K is {} (ClipTree cuts it first)", t.parents.size(), k);
    if (!shape.branching.empty() && MaxDepth() > static_cast<int>(shape.branching.size()))
      Fail(
          "acceptance replay: the recorded tree runs {} draft calls, this draft's static shape at most {}: replay a "
          "trace recorded with the same draft shape",
          MaxDepth() - 1, shape.branching.size() - 1);
    for (int p : t.parents)
      if (p >= 0) has_child_[p] = true;
  }
  int MaxDepth() const override { return static_cast<int>(t_.expanded.size()) + 1; }
  void Expand(const std::vector<Grown>& nodes, std::vector<int>& added, int depth) override {
    Map(nodes, added);
    if (depth + 1 < MaxDepth()) added = Expanded(nodes, added, depth);
  }
  std::vector<int> Chosen(const std::vector<Grown>&) const override {
    for (size_t i = 0; i < grown_.size(); ++i)
      if (grown_[i] < 0)
        Fail(
            "acceptance replay: the recorded tree's node {} (rank {} below node {}) is not among the children "
            "this draft grows: replay a trace recorded with the same draft shape",
            i, t_.ranks[i], t_.parents[i]);
    return grown_;
  }

 private:
  // Maps the recorded nodes among the just-grown `added`.
  void Map(const std::vector<Grown>& g, const std::vector<int>& added) {
    for (size_t i = 0; i < grown_.size(); ++i) {
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
  std::vector<int> Expanded(const std::vector<Grown>& g, std::vector<int> added, int call) const {
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
  int Recorded(int a) const {
    const auto it = std::find(grown_.begin(), grown_.end(), a);
    return it == grown_.end() ? -1 : static_cast<int>(it - grown_.begin());
  }

  const TreeStep& t_;
  std::vector<int> grown_;       // [n] grown-list index of recorded node i (-1: not yet grown)
  std::vector<bool> has_child_;  // [n]
};

std::unique_ptr<TreeGrowth> MakeGrowth(const TreeShape& shape, int k, const TreeStep* recorded) {
  if (recorded) return std::make_unique<ReplayedGrowth>(*recorded, shape, k);
  if (shape.branching.empty()) return std::make_unique<DynamicGrowth>(shape, k);
  return std::make_unique<StaticGrowth>(shape, k);
}

// Catches the cache up on seq: the root's logits are the last row. A greedy dynamic
// tree's calibration learns from the last step's root and keeps this one's.
std::span<const float> CatchUp(const TreeDraft& t, ModelDraftState& s, std::span<const int> seq, GenerationStats& st) {
  const int n_seq = static_cast<int>(seq.size());
  CountCall(st.draft_calls_by_size, n_seq - s.cache->length());
  std::span<const float> l = Forward(t.rt, t.model, seq.subspan(s.cache->length()), s.cache->length(), *s.cache, false);
  ++st.draft_calls;
  if (t.shape.branching.empty() && t.sampling.greedy()) {
    s.calibration.Learn(seq);
    s.calibration.row.assign(l.begin(), l.end());
    s.calibration.row_pos = n_seq - 1;
  }
  return l;
}

// Grows the candidate children of each node of `frontier` (at `depth`; rows: their
// logits [frontier][vocab]), up to `cap` nodes in all: the new nodes' indices.
std::vector<int> GrowChildren(const TreeDraft& t, int depth, double tau, std::span<const float> rows,
                              const std::vector<int>& frontier, int cap, Rng& rng, GrownTree& g) {
  const int vocab = t.model.config.vocab_size;
  const bool dynamic = t.shape.branching.empty();
  const bool iid = !dynamic && !t.sampling.greedy();  // SpecInfer's sampled expansion
  std::vector<float> q;                               // [vocab]
  std::vector<int> top;
  std::vector<double> pr;  // each candidate's chance of acceptance (dynamic; TreeCalibration)
  std::vector<int> added;
  for (size_t f = 0; f < frontier.size(); ++f) {
    const int u = frontier[f];
    NodeCandidates(rows.subspan(f * vocab, vocab), t.shape, depth, t.sampling, tau, q, top, pr);
    const int b = dynamic ? static_cast<int>(top.size()) : t.shape.branching[depth];
    for (int j = 0; j < b && static_cast<int>(g.nodes.size()) < cap; ++j) {
      const double score = dynamic ? (u < 0 ? 1.0 : g.nodes[u].score) * pr[j] : 0.0;
      g.nodes.push_back({iid ? SampleFromProbs(q, rng) : top[j], u, score, j});
      added.push_back(static_cast<int>(g.nodes.size()) - 1);
      if (iid) g.q.insert(g.q.end(), q.begin(), q.end());
    }
  }
  return added;
}

// Runs the nodes `run` with the tree mask, each below its parent's slot (the root's:
// n_seq - 1): their logits [run][vocab].
std::span<const float> RunNodes(const TreeDraft& t, ModelDraftState& s, int n_seq, const std::vector<int>& run,
                                GrownTree& g, DraftBlock& out, GenerationStats& st) {
  std::vector<int> toks, parents;
  for (int a : run) {
    toks.push_back(g.nodes[a].token);
    parents.push_back(g.nodes[a].parent < 0 ? n_seq - 1 : g.nodes[g.nodes[a].parent].slot);
    g.nodes[a].slot = s.cache->length() + static_cast<int>(toks.size()) - 1;
  }
  std::span<const float> l = Forward(t.rt, t.model, toks, s.cache->length(), *s.cache, true, parents);
  s.tree_tokens.insert(s.tree_tokens.end(), toks.begin(), toks.end());
  ++st.draft_calls;
  CountCall(st.draft_tree_calls_by_size, static_cast<int>(toks.size()));
  out.expanded.push_back(static_cast<int>(toks.size()));
  return l;
}

// The chosen nodes (grown order) into `out`, parents renumbered.
void WriteChosen(const std::vector<int>& chosen, const GrownTree& g, int vocab, DraftBlock& out) {
  std::vector<int> index(g.nodes.size(), -1);
  for (size_t i = 0; i < chosen.size(); ++i) {
    const Grown& n = g.nodes[chosen[i]];
    const int p = n.parent < 0 ? -1 : index[n.parent];
    // A parent scores at least its child and was grown first, so the stable order keeps
    // it whenever it keeps the child (a recorded tree lists parents first).
    if (n.parent >= 0 && p < 0) Fail("draft tree: node {} kept without its parent", chosen[i]);
    index[chosen[i]] = static_cast<int>(i);
    out.tokens.push_back(n.token);
    out.parents.push_back(p);
    out.ranks.push_back(n.rank);
    if (!g.q.empty())
      out.probs.insert(out.probs.end(), &g.q[size_t(chosen[i]) * vocab], &g.q[size_t(chosen[i] + 1) * vocab]);
  }
}

}  // namespace

void ProposeModelTree(const TreeDraft& t, ModelDraftState& s, const DraftRequest& r, Rng& rng, DraftBlock& out,
                      GenerationStats& st) {
  const std::unique_ptr<TreeGrowth> growth = MakeGrowth(t.shape, r.k, r.recorded);
  const int n_seq = static_cast<int>(r.seq.size());
  std::span<const float> l = CatchUp(t, s, r.seq, st);
  const double tau = s.calibration.Tau();
  std::vector<float> rows(l.begin(), l.end());  // [frontier][vocab] logits of the frontier
  std::vector<int> frontier{-1};                // grown-list indices of the nodes just run (-1: the root)
  GrownTree g;
  for (int depth = 0; depth < growth->MaxDepth(); ++depth) {
    std::vector<int> added = GrowChildren(t, depth, tau, rows, frontier, growth->GrowCap(), rng, g);
    growth->Expand(g.nodes, added, depth);
    // The draft's cache holds every expanded node: stop at its context end.
    if (depth + 1 == growth->MaxDepth() || added.empty() ||
        s.cache->length() + static_cast<int>(added.size()) > s.cache->capacity())
      break;
    l = RunNodes(t, s, n_seq, added, g, out, st);  // [added][vocab]
    rows.assign(l.begin(), l.end());
    frontier = std::move(added);
  }
  WriteChosen(growth->Chosen(g.nodes), g, t.model.config.vocab_size, out);
}

void RollbackTree(ModelDraftState& s, std::span<const int> seq) {
  KVCache& cache = *s.cache;
  if (!cache.has_tree()) return;
  // seq's last token is never kept: its logits are the next root's, so it is fed.
  const int from = cache.tree_from();
  std::vector<int> path;
  for (int j = from, u = from - 1; j + 1 < static_cast<int>(seq.size()); ++j) {
    int next = -1;
    for (int slot = u + 1; slot < cache.length() && next < 0; ++slot)
      if (cache.parent(slot) == u && s.tree_tokens[slot - from] == seq[j]) next = slot;
    if (next < 0) break;
    path.push_back(u = next);
  }
  cache.KeepPath(path);
  s.tree_tokens.clear();
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

}  // namespace specsweep
