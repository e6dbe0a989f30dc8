// REST: retrieval-based speculative decoding (He et al. 2023). No model: the draft is
// retrieved from a datastore built once from a text corpus.
//   datastore: the corpus in target tokens (documents separated), and its suffix array
//   each step: for n = 16 down to 1, q = the last n tokens of seq;
//              the suffixes starting with q (binary search); stop at the first n with any
//     merge the (up to 5000) continuations of 10 tokens that follow them into a trie,
//       each node counting the continuations through it
//     draft tree = the tree_budget nodes of highest count (REST prunes by frequency)
// Deterministic given seq: q is one-hot (verify.h).
#include <algorithm>
#include <fstream>
#include <numeric>

#include <fmt/format.h>

#include "base/error.h"
#include "base/text_input.h"
#include "decoders/candidate_trie.h"
#include "models/tokenizer.h"

namespace specsweep {
namespace {

constexpr int kMaxSuffix = 16;     // longest suffix of seq searched (REST's n_max)
constexpr int kMaxMatches = 5000;  // continuations merged at most
constexpr int kContinuation = 10;  // tokens of each continuation
constexpr int kSeparator = -1;     // between documents: never matches, ends continuations

class RestDrafter : public Drafter {
 public:
  RestDrafter(std::vector<int> corpus, int tree_budget, std::string name)
      : text_(std::move(corpus)), budget_(tree_budget), name_(std::move(name)) {
    // Suffixes ordered by their first kMaxSuffix tokens: enough for every query.
    suffixes_.resize(text_.size());
    std::iota(suffixes_.begin(), suffixes_.end(), 0);
    std::stable_sort(suffixes_.begin(), suffixes_.end(), [&](int a, int b) { return Less(Head(a), Head(b)); });
  }
  const std::string& name() const override { return name_; }
  void Propose(DraftState&, const DraftRequest& r, Rng&, DraftBlock& out, GenerationStats&) const override {
    const std::span<const int> seq = r.seq;
    CandidateTrie trie;
    const int len = static_cast<int>(seq.size());
    for (int n = std::min(kMaxSuffix, len); n >= 1 && trie.size() == 0; --n) {
      std::span<const int> q = seq.subspan(len - n);
      // Suffixes whose first n tokens equal q: a contiguous run of the order.
      auto first = std::partition_point(suffixes_.begin(), suffixes_.end(), [&](int s) { return Less(Head(s, n), q); });
      int taken = 0;
      for (auto it = first; it != suffixes_.end() && taken < kMaxMatches; ++it) {
        std::span<const int> h = Head(*it, n);
        if (!std::equal(h.begin(), h.end(), q.begin(), q.end())) break;
        std::span<const int> cont = Head(*it + n, kContinuation);
        cont = cont.first(static_cast<size_t>(std::find(cont.begin(), cont.end(), kSeparator) - cont.begin()));
        if (!cont.empty()) trie.Insert(cont), ++taken;
      }
    }
    trie.TopNodes(std::min(r.k, budget_), -1, out);
    DropParentsOfChain(out);
  }

 private:
  // Up to m tokens of the corpus from position s (fewer at its end).
  std::span<const int> Head(int s, int m = kMaxSuffix) const {
    const int n = static_cast<int>(text_.size());
    return std::span<const int>(text_).subspan(std::min(s, n), std::max(0, std::min(m, n - s)));
  }
  static bool Less(std::span<const int> a, std::span<const int> b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

  std::vector<int> text_;      // [n] corpus tokens, documents separated by kSeparator
  std::vector<int> suffixes_;  // [n] suffix starts in order (a suffix array on kMaxSuffix tokens)
  int budget_;
  std::string name_;
};

}  // namespace

std::vector<int> ReadRestCorpus(const std::string& path, const Tokenizer& tokenizer) {
  std::ifstream f = OpenTextInput(path, "rest corpus");
  std::vector<int> text;
  for (std::string line; std::getline(f, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::vector<int> ids = tokenizer.Encode(line, false);
    text.insert(text.end(), ids.begin(), ids.end());
    text.push_back(kSeparator);
  }
  if (text.empty()) Fail("{}: the rest corpus has no text", path);
  return text;
}

std::unique_ptr<Drafter> MakeRestDrafter(std::vector<int> corpus, int tree_budget, const std::string& label) {
  if (tree_budget < 1) Fail("decoder: draft: rest needs a tree_budget >= 1, got {}", tree_budget);
  const size_t n = corpus.size();
  return std::make_unique<RestDrafter>(std::move(corpus), tree_budget,
                                       fmt::format("rest({}, {} tokens, tree_budget={})", label, n, tree_budget));
}

}  // namespace specsweep
