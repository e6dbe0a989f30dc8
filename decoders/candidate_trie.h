// Candidate continuations merged into a trie whose nodes count the candidates through
// them, read out as a token tree (REST's draft tree; lookahead's verification branch).
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "decoders/drafter.h"

namespace specsweep {

class CandidateTrie {
 public:
  // Adds a continuation of the sequence's last token: every prefix's node counts it.
  void Insert(std::span<const int> tokens);
  int size() const { return static_cast<int>(nodes_.size()); }
  // Appends the `budget` nodes most candidates pass through to out (ties: shallower,
  // then inserted first), parents before children; trie roots get parent `root`, the
  // others out-indices. A node counts at least its children, so the set is a tree.
  void TopNodes(int budget, int root, DraftBlock& out) const;
  void Clear();

 private:
  struct Node {
    int token, parent, depth, count;  // parent: trie index, -1 at depth 0
  };
  std::vector<Node> nodes_;                  // [nodes] in insertion order (parents first)
  std::unordered_map<uint64_t, int> child_;  // (parent + 1) << 32 | token -> node
};

// Clears out.parents when the block is a chain (node i below node i - 1), so chains are
// verified and counted as chains.
void DropParentsOfChain(DraftBlock& out);

}  // namespace specsweep
