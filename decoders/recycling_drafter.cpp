// Token recycling (Luo et al. 2024, "Turning Trash into Treasure"): the target's logits
// at every verified position are kept as an adjacency table M[t] = the top-k tokens the
// target ranked after token t; a draft tree is read out of it breadth first from the
// last token, node with token t getting children M[t][0..b) (b = branching at its
// depth). No model; deterministic given what was verified, so q is one-hot (verify.h).
#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "decoders/drafter.h"

namespace specsweep {
namespace {

class RecyclingDrafter : public Drafter {
 public:
  explicit RecyclingDrafter(std::vector<int> branching)
      : branching_(std::move(branching)),
        top_(*std::max_element(branching_.begin(), branching_.end())),
        name_(fmt::format("recycling(branching={})", fmt::join(branching_, ","))) {}
  const std::string& name() const override { return name_; }
  std::unique_ptr<DraftState> NewState() const override { return std::make_unique<State>(); }
  void Begin(DraftState& s, std::span<const int>) const override { static_cast<State&>(s).table.clear(); }

  void Propose(DraftState& state, const DraftRequest& r, Rng&, DraftBlock& out, GenerationStats&) const override {
    const auto& table = static_cast<State&>(state).table;
    const std::span<const int> seq = r.seq;
    const int k = r.k;
    std::vector<int> level{-1};  // nodes of the current depth (-1: the root, seq.back())
    auto token = [&](int u) { return u < 0 ? seq.back() : out.tokens[u]; };
    for (size_t d = 0; d < branching_.size() && !level.empty(); ++d) {
      std::vector<int> next;
      for (int u : level) {
        auto it = table.find(token(u));
        if (it == table.end()) continue;
        for (int j = 0; j < branching_[d] && static_cast<int>(out.tokens.size()) < k; ++j) {
          out.tokens.push_back(it->second[j]);
          out.parents.push_back(u);
          next.push_back(static_cast<int>(out.tokens.size()) - 1);
        }
      }
      level.swap(next);
    }
  }

  void Observe(DraftState& state, std::span<const int> inputs, std::span<const float> logits,
               int vocab) const override {
    auto& table = static_cast<State&>(state).table;
    std::vector<int> ids(vocab);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const float* row = &logits[i * size_t(vocab)];
      std::iota(ids.begin(), ids.end(), 0);
      std::partial_sort(ids.begin(), ids.begin() + top_, ids.end(),
                        [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
      table[inputs[i]].assign(ids.begin(), ids.begin() + top_);
    }
  }

 private:
  std::vector<int> branching_;
  int top_;
  std::string name_;
  struct State : DraftState {
    std::unordered_map<int, std::vector<int>> table;  // token -> [top_] ids the target ranked next
  };
};

}  // namespace

std::unique_ptr<Drafter> MakeRecyclingDrafter(std::vector<int> branching) {
  return std::make_unique<RecyclingDrafter>(std::move(branching));
}

}  // namespace specsweep
