#include "decoders/candidate_trie.h"

#include <algorithm>
#include <numeric>

namespace specsweep {

void CandidateTrie::Insert(std::span<const int> tokens) {
  int at = -1;
  for (int t : tokens) {
    const uint64_t key = uint64_t(uint32_t(at + 1)) << 32 | uint32_t(t);
    auto [it, fresh] = child_.try_emplace(key, size());
    if (fresh) nodes_.push_back({t, at, at < 0 ? 0 : nodes_[at].depth + 1, 0});
    at = it->second;
    ++nodes_[at].count;
  }
}

void CandidateTrie::TopNodes(int budget, int root, DraftBlock& out) const {
  std::vector<int> order(nodes_.size());
  std::iota(order.begin(), order.end(), 0);
  // Frequency first (REST's pruning); a parent never ranks below its child.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return nodes_[a].count != nodes_[b].count ? nodes_[a].count > nodes_[b].count : nodes_[a].depth < nodes_[b].depth;
  });
  order.resize(std::min<size_t>(order.size(), std::max(budget, 0)));
  // Breadth first: depth, then rank.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return nodes_[a].depth < nodes_[b].depth; });
  std::vector<int> index(nodes_.size(), -1);  // trie node -> out index
  for (int n : order) {
    const Node& x = nodes_[n];
    index[n] = static_cast<int>(out.tokens.size());
    out.tokens.push_back(x.token);
    out.parents.push_back(x.parent < 0 ? root : index[x.parent]);
  }
}

void CandidateTrie::Clear() {
  nodes_.clear();
  child_.clear();
}

void DropParentsOfChain(DraftBlock& out) {
  for (size_t i = 0; i < out.parents.size(); ++i)
    if (out.parents[i] != static_cast<int>(i) - 1) return;
  out.parents.clear();
}

}  // namespace specsweep
