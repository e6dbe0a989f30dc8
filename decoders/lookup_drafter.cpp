// Prompt lookup drafting (Saxena 2023 "prompt lookup decoding"; HF
// prompt_lookup_num_tokens; llama.cpp lookup; Spec-Bench PLD):
//   L = |seq|
//   for n = max_ngram down to min_ngram:
//     for s = L-n-1 down to 0:                      (most recent earlier occurrence first)
//       if seq[s .. s+n) == seq[L-n .. L):
//         return seq[s+n .. min(s+n+K, L))           (what followed it, at most K tokens)
//   return nothing                                   (the step then verifies K = 0)
// No model, so no draft cost beyond the search, and no distribution: the proposal is a
// deterministic function of seq, i.e. q is one-hot, which VerifySamplingOneHot turns
// into an exact acceptance rule (verify.h).
#include <algorithm>

#include <fmt/format.h>

#include "decoders/draft_tree.h"

namespace specsweep {

std::vector<int> LookupProposal(std::span<const int> seq, int k, int max_ngram, int min_ngram) {
  const int len = static_cast<int>(seq.size());
  for (int n = max_ngram; n >= min_ngram; --n) {
    if (len <= n) continue;  // the suffix needs an earlier occurrence before it
    std::span<const int> suffix = seq.subspan(len - n);
    for (int s = len - n - 1; s >= 0; --s) {
      if (!std::equal(suffix.begin(), suffix.end(), seq.begin() + s)) continue;
      const int from = s + n, to = std::min(from + k, len);  // from <= len - 1: never empty
      return {seq.begin() + from, seq.begin() + to};
    }
  }
  return {};
}

namespace {

class LookupDrafter : public Drafter {
 public:
  LookupDrafter(int max_ngram, int min_ngram, int tree_budget)
      : max_ngram_(max_ngram),
        min_ngram_(min_ngram),
        tree_budget_(tree_budget),
        name_(fmt::format("lookup(n={}..{}{})", max_ngram, min_ngram,
                          tree_budget ? fmt::format(", tree_budget={}", tree_budget) : "")) {}
  const std::string& name() const override { return name_; }
  void Propose(DraftState&, const DraftRequest& r, Rng&, DraftBlock& out, GenerationStats&) const override {
    if (tree_budget_ > 0) return LookupTree(r.seq, std::min(r.k, tree_budget_), max_ngram_, min_ngram_, out);
    out.tokens = LookupProposal(r.seq, r.k, max_ngram_, min_ngram_);
  }

 private:
  int max_ngram_, min_ngram_, tree_budget_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Drafter> MakeLookupDrafter(int max_ngram, int min_ngram, int tree_budget) {
  return std::make_unique<LookupDrafter>(max_ngram, min_ngram, tree_budget);
}

}  // namespace specsweep
