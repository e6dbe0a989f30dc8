// Helpers shared by the tokenizer implementations: file reading, UTF-8 and byte
// pieces, and the greedy pair-merge loop common to score-BPE and rank-BPE.
#pragma once
#include <queue>
#include <string>
#include <string_view>
#include <vector>

namespace specsweep {

// Whole file as bytes; Error "path: cannot open" when missing or unreadable.
std::string ReadTokenizerFile(const std::string& path);

// 0..255 for a byte piece "<0xNN>" (hex, either case), else -1.
int ParseBytePiece(std::string_view piece);
// "<0xNN>" with upper-case hex, the spelling SentencePiece and HF use.
std::string BytePieceName(int byte);

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to);

// Byte length of the UTF-8 sequence starting at s[i] (1 for invalid lead bytes or a
// sequence cut short), so malformed text still splits into byte-sized "characters".
size_t Utf8CharLen(std::string_view s, size_t i);

// Result of looking up an adjacent pair: merged token id (-1: no merge) and its
// priority, lower merges first (rank-BPE: merge rank; score-BPE: -score).
struct PairMerge {
  int merged = -1;
  double priority = 0;
};

// Repeatedly merges the adjacent pair with the lowest priority, ties to the
// leftmost pair, until no pair merges. This is exactly the greedy loop of llama2.c
// run.c (best score, first index wins) and of HF BPE (lowest rank, lowest position),
// in O(n log n) with a heap of candidates over a linked list instead of rescanning
// the sequence after every merge. `lookup(a, b)` returns the PairMerge for ids a, b.
template <typename Lookup>
void MergePairs(std::vector<int>& ids, const Lookup& lookup) {
  const int n = static_cast<int>(ids.size());
  if (n < 2) return;
  // Linked list over the original positions; a merged symbol keeps its left
  // position, so position order is sequence order and gives the leftmost tie-break.
  std::vector<int> prev(n), next(n);  // [n] neighbours, -1 at the ends
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Cand {
    double priority;
    int left, left_id, right_id, merged;
  };
  auto worse = [](const Cand& a, const Cand& b) {
    return a.priority > b.priority || (a.priority == b.priority && a.left > b.left);
  };
  std::priority_queue<Cand, std::vector<Cand>, decltype(worse)> heap(worse);
  auto push = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    PairMerge m = lookup(ids[left], ids[next[left]]);
    if (m.merged >= 0) heap.push({m.priority, left, ids[left], ids[next[left]], m.merged});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<char> alive(n, 1);  // [n] 0 once merged into its left neighbour
  while (!heap.empty()) {
    Cand c = heap.top();
    heap.pop();
    // Stale entries: the left symbol was absorbed or either side changed since.
    if (!alive[c.left] || ids[c.left] != c.left_id) continue;
    int right = next[c.left];
    if (right < 0 || ids[right] != c.right_id) continue;
    ids[c.left] = c.merged;
    alive[right] = 0;
    next[c.left] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.left;
    push(prev[c.left]);
    push(c.left);
  }
  int out = 0;
  for (int i = 0; i >= 0; i = next[i]) ids[out++] = ids[i];
  ids.resize(out);
}

}  // namespace specsweep
