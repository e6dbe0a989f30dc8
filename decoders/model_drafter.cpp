// Same-vocabulary draft model (Leviathan et al. 2023, Algorithm 1, lines 2-4):
//   for i = 1..K: q_i = M_q(prefix + d_1..d_{i-1}); d_i = argmax q_i (greedy) or d_i ~ q_i
// with its own KV cache. The first Forward of a step also catches the cache up on the
// tokens emitted since (the last step's correction/bonus, or the last prompt token).
// With a TreeShape it proposes a token tree instead (draft_tree.h).
#include <algorithm>

#include "decoders/common.h"
#include "base/error.h"
#include "decoders/draft_tree.h"
#include "models/forward.h"

namespace specsweep {
namespace {

class ModelDrafter : public Drafter {
 public:
  ModelDrafter(std::shared_ptr<const Model> model, int layers, std::string name, KvType kv_type,
               const SamplingParams& sampling, TreeShape tree, const Runtime& rt)
      : model_(std::move(model)),
        layers_(layers),
        name_(std::move(name)),
        kv_type_(kv_type),
        tree_{*model_, std::move(tree), sampling, rt} {}
  const std::string& name() const override { return name_; }
  int context() const override { return model_->config.max_seq_len; }
  std::unique_ptr<DraftState> NewState() const override { return std::make_unique<ModelDraftState>(); }

  void Begin(DraftState& state, std::span<const int> prompt) const override {
    ModelDraftState& s = static_cast<ModelDraftState&>(state);
    s.cache = std::make_unique<KVCache>(model_->config, layers_, 0, kv_type_);
    s.tree_tokens.clear();
    s.calibration.Reset();  // per generation: a prompt's drafts never depend on another's
    // Everything but the last prompt token: it is fed with the first draft position.
    if (prompt.size() > 1) Forward(tree_.rt, *model_, prompt.first(prompt.size() - 1), 0, *s.cache, false);
  }

  void Propose(DraftState& state, const DraftRequest& r, Rng& rng, DraftBlock& out,
               GenerationStats& st) const override {
    ModelDraftState& s = static_cast<ModelDraftState&>(state);
    if (tree_.shape.is_tree()) return ProposeModelTree(tree_, s, r, rng, out, st);
    if (r.recorded)
      Fail(
          "acceptance replay: drafter '{}' cannot replay a recorded token tree (a trace of a model-drafted tree "
          "replays on a model-drafted tree)",
          name_);
    const bool greedy = tree_.sampling.greedy();
    std::span<const int> feed = r.seq.subspan(s.cache->length());  // catch-up + first position
    for (int i = 0; i < r.k; ++i) {
      const int pos = s.cache->length() + static_cast<int>(feed.size()) - 1;
      std::span<const float> logits =
          Forward(tree_.rt, *model_, feed, s.cache->length(), *s.cache, false);  // [1][vocab]
      CheckLogits(logits, model_->config.vocab_size, "draft " + name_, pos, st.target_calls);
      ++st.draft_calls;
      float top;
      if (greedy) {
        top = r.policy.UsesTopProb() ? MaxSoftmaxProb(logits) : 1.0f;  // the softmax only when read
      } else {
        ComputeProbs(logits, tree_.sampling, s.q);
        top = *std::max_element(s.q.begin(), s.q.end());
      }
      const DraftAction act = r.policy.OnDraft(i + 1, top);
      if (act == DraftAction::DropAndStop) break;
      out.tokens.push_back(greedy ? Argmax(logits) : SampleFromProbs(s.q, rng));
      if (!greedy) out.probs.insert(out.probs.end(), s.q.begin(), s.q.end());
      if (act == DraftAction::KeepAndStop) break;
      feed = std::span<const int>(&out.tokens.back(), 1);
    }
  }

  // The draft keeps whatever prefix of the target's positions it holds (a tree: the
  // path the sequence took through it).
  void Rollback(DraftState& state, std::span<const int> seq, int keep) const override {
    ModelDraftState& s = static_cast<ModelDraftState&>(state);
    RollbackTree(s, seq);
    s.cache->Truncate(std::min(s.cache->length(), keep));
  }
  // A draft call returns the last position's logits only.
  std::map<std::string, int> matrix_types() const override { return MatrixTypeCounts(*model_, layers_); }
  // A tree's calls are priced with the drafter's work on the rows they return (candidate
  // children, softmax; for the catch-up the root's and the calibration's), at the tau of
  // the run's latest generation.
  DraftCallCosts MeasureCallCosts(const DraftState& state, std::span<const int> prompt, int n_tree_max, int reps,
                                  int batch) const override {
    if (!tree_.shape.is_tree() || n_tree_max <= 0)
      return {TimeForwardCalls(tree_.rt, *model_, layers_, kv_type_, prompt, 2, reps, false, false, {}, batch), {}};
    const int vocab = model_->config.vocab_size;
    const double tau = static_cast<const ModelDraftState&>(state).calibration.Tau();
    auto time = [&](bool tree) {
      return TimeForwardCalls(tree_.rt, *model_, layers_, kv_type_, prompt, n_tree_max, reps, false, tree,
                              [&](std::span<const float> rows) {
                                return TreeRowsWork(rows, vocab, !tree, tree_.shape, tree_.sampling, tau);
                              });
    };
    DraftCallCosts c;
    c.draft_s = time(false);
    c.draft_tree_s = time(true);
    return c;
  }

 private:
  std::shared_ptr<const Model> model_;
  int layers_;
  std::string name_;
  KvType kv_type_;
  TreeDraft tree_;  // its shape (not a tree: a chain) and the sampling settings
};

}  // namespace

std::unique_ptr<Drafter> MakeModelDrafter(std::shared_ptr<const Model> model, int layers, std::string name,
                                          KvType kv_type, const SamplingParams& sampling, const TreeShape& tree,
                                          const Runtime& rt) {
  return std::make_unique<ModelDrafter>(std::move(model), layers, std::move(name), kv_type, sampling, tree, rt);
}

}  // namespace specsweep
