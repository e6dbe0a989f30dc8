// Lookahead decoding (Fu et al. 2024, "Break the Sequential Dependency of LLM Inference
// Using Lookahead Decoding"; llama.cpp examples/lookahead): no draft model. The target's
// verification pass also runs a Jacobi window, whose trajectory fills an n-gram pool;
// the pool's n-grams starting with the last token are the next step's candidates.
//   window: N-1 levels x W columns of guessed tokens; level j column i stands at depth
//           i + j below the last token (column 0 of level 0 *is* the last token)
//   each step, ONE target Forward over a token tree holding
//     verification branch: the <= G pool n-grams starting with the last token (a trie)
//     lookahead branch:    level 0 as a chain (Jacobi's guess), and below its column i
//                          the column's levels 1..N-2 (each column sees the guess up to
//                          it, then its own trajectory: the paper's mask)
//   verify the whole tree (a window node the target agrees with is accepted too)
//   for each column i: next = argmax of the target at its newest level;
//     pool[level0[i]] += (level1[i], .., level_{N-2}[i], next)    (unique, the G latest)
//   slide the window: drop level 0, append the column's next tokens as the newest level
// The window rides in the verification pass, so its cost is measured with it (mean_k,
// verify time); there is no draft call. The window advances one Jacobi iteration per
// target pass, whatever was accepted. Candidates and window are deterministic given
// what the target computed (argmax, also when sampling): q is one-hot (verify.h).
#include <algorithm>
#include <deque>
#include <random>

#include <fmt/format.h>

#include "decoders/candidate_trie.h"
#include "decoders/sampler.h"

namespace specsweep {
namespace {

class LookaheadDrafter : public Drafter {
 public:
  LookaheadDrafter(int window, int ngram, int candidates)
      : w_(window),
        n_(ngram),
        g_(candidates),
        name_(fmt::format("lookahead(window={}, ngram={}, candidates={})", window, ngram, candidates)) {}
  const std::string& name() const override { return name_; }

  std::unique_ptr<DraftState> NewState() const override { return std::make_unique<State>(); }

  void Begin(DraftState& state, std::span<const int> prompt) const override {
    State& s = static_cast<State&>(state);
    // The paper starts the window from random tokens; ours are the prompt's (fixed seed).
    std::mt19937 pick(0);
    s.levels.assign(n_ - 1, std::vector<int>(w_));
    for (auto& level : s.levels)
      for (int& t : level) t = prompt[pick() % prompt.size()];
    s.pool.clear();
    s.newest.clear();
  }

  void Propose(DraftState& state, const DraftRequest& r, Rng&, DraftBlock& out, GenerationStats&) const override {
    State& s = static_cast<State&>(state);
    const int k = r.k;
    s.newest.clear();
    s.root = r.seq.back();
    // The window's first `cols` columns: all W, or as many as k holds when fewer tokens
    // are left (max_new_tokens, the context end), so the window still fills the pool.
    const int cols = WindowColumns(k);
    // Verification branch: the pool's n-grams that continue the last token.
    s.trie.Clear();
    if (auto it = s.pool.find(s.root); it != s.pool.end())
      for (const auto& tail : it->second) s.trie.Insert(tail);
    s.trie.TopNodes(cols > 0 ? k - LookaheadWindowNodes(cols, n_) : k, -1, out);
    if (cols == 0) return DropParentsOfChain(out);
    // Lookahead branch: level 0 a chain below the root, then each column's levels.
    std::vector<int> below(cols, -1);  // per column: the block index of its deepest node so far
    for (int i = 1; i < cols; ++i) below[i] = Add(s.levels[0][i], below[i - 1], out);
    for (int j = 1; j < n_ - 1; ++j)
      for (int i = 0; i < cols; ++i) below[i] = Add(s.levels[j][i], below[i], out);
    s.newest = below;  // N = 2: level 0 itself (column 0: the root)
  }

  void Observe(DraftState& state, std::span<const int> inputs, std::span<const float> logits,
               int vocab) const override {
    State& s = static_cast<State&>(state);
    if (s.newest.empty()) return;  // the window did not run this step
    const int cols = static_cast<int>(s.newest.size());
    std::vector<int> next = s.levels.back();  // columns that did not run keep their guesses
    for (int i = 0; i < cols; ++i) next[i] = Argmax(logits.subspan(size_t(s.newest[i] + 1) * vocab, vocab));
    for (int i = 0; i < cols; ++i) {
      std::vector<int> tail;  // [N-1]
      for (int j = 1; j < n_ - 1; ++j) tail.push_back(s.levels[j][i]);
      tail.push_back(next[i]);
      std::deque<std::vector<int>>& grams = s.pool[i == 0 ? s.root : s.levels[0][i]];
      if (std::find(grams.begin(), grams.end(), tail) != grams.end()) continue;
      grams.push_front(std::move(tail));
      if (static_cast<int>(grams.size()) > g_) grams.pop_back();
    }
    s.levels.erase(s.levels.begin());
    s.levels.push_back(std::move(next));
    s.newest.clear();
  }

 private:
  // Columns of the window that fit in k nodes ((c - 1) + (N - 2)c = c(N - 1) - 1 of them):
  // up to W, 0 when not even one fits.
  int WindowColumns(int k) const { return std::min(w_, (k + 1) / (n_ - 1)); }

  static int Add(int token, int parent, DraftBlock& out) {
    out.tokens.push_back(token);
    out.parents.push_back(parent);
    return static_cast<int>(out.tokens.size()) - 1;
  }

  int w_, n_, g_;
  std::string name_;
  struct State : DraftState {
    std::vector<std::vector<int>> levels;                        // [N-1][W] the window, oldest level first
    std::unordered_map<int, std::deque<std::vector<int>>> pool;  // first token -> <= G tails [N-1], latest first
    CandidateTrie trie;
    int root = -1;            // this step's last token
    std::vector<int> newest;  // [columns run] each one's newest-level node in the block (-1: the root); empty: none
  };
};

}  // namespace

int LookaheadWindowNodes(int window, int ngram) { return (window - 1) + (ngram - 2) * window; }

std::unique_ptr<Drafter> MakeLookaheadDrafter(int window, int ngram, int candidates) {
  return std::make_unique<LookaheadDrafter>(window, ngram, candidates);
}

}  // namespace specsweep
