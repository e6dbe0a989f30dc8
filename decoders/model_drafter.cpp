// Same-vocabulary draft model (Leviathan et al. 2023, Algorithm 1, lines 2-4):
//   for i = 1..K: q_i = M_q(prefix + d_1..d_{i-1}); d_i = argmax q_i (greedy) or d_i ~ q_i
// with its own KV cache. The first Forward of a step also catches the cache up on the
// tokens emitted since (the last step's correction/bonus, or the last prompt token).
// With a TreeShape it proposes a token tree instead (draft_tree.h).
#include <algorithm>

#include "decoders/common.h"
#include "decoders/draft_tree.h"
#include "models/forward.h"

namespace specsweep {
namespace {

class ModelDrafter : public Drafter {
 public:
  ModelDrafter(std::shared_ptr<const Model> model, int layers, std::string name, KvType kv_type,
               const SamplingParams& sampling, TreeShape tree, const Runtime& rt)
      : model_(std::move(model)), layers_(layers), name_(std::move(name)), kv_type_(kv_type),
        sampling_(sampling), tree_(std::move(tree)), rt_(rt) {}
  const std::string& name() const override { return name_; }
  int context() const override { return model_->config.max_seq_len; }

  void Begin(std::span<const int> prompt) override {
    cache_ = std::make_unique<KVCache>(model_->config, layers_, 0, kv_type_);
    calibration_.Reset();  // per generation: a prompt's drafts never depend on another's
    // Everything but the last prompt token: it is fed with the first draft position.
    if (prompt.size() > 1) Forward(rt_, *model_, prompt.first(prompt.size() - 1), 0, *cache_, false);
  }

  void Propose(std::span<const int> seq, int k, DraftPolicy& policy, Rng& rng, DraftBlock& out,
               GenerationStats& st) override {
    if (tree_.is_tree())
      return ProposeModelTree(rt_, *model_, *cache_, tree_tokens_, seq, k, tree_, sampling_, calibration_, rng, out, st);
    const bool greedy = sampling_.greedy();
    std::span<const int> feed = seq.subspan(cache_->length());  // catch-up + first position
    for (int i = 0; i < k; ++i) {
      const int pos = cache_->length() + static_cast<int>(feed.size()) - 1;
      std::span<const float> logits = Forward(rt_, *model_, feed, cache_->length(), *cache_, false);  // [1][vocab]
      CheckLogits(logits, model_->config.vocab_size, "draft " + name_, pos, st.target_calls);
      ++st.draft_calls;
      float top;
      if (greedy) {
        top = policy.UsesTopProb() ? MaxSoftmaxProb(logits) : 1.0f;  // the softmax only when read
      } else {
        ComputeProbs(logits, sampling_, q_);
        top = *std::max_element(q_.begin(), q_.end());
      }
      const DraftAction act = policy.OnDraft(i + 1, top);
      if (act == DraftAction::DropAndStop) break;
      out.tokens.push_back(greedy ? Argmax(logits) : SampleFromProbs(q_, rng));
      if (!greedy) out.probs.insert(out.probs.end(), q_.begin(), q_.end());
      if (act == DraftAction::KeepAndStop) break;
      feed = std::span<const int>(&out.tokens.back(), 1);
    }
  }

  void ProposeRecorded(std::span<const int> seq, int k, const TreeStep& step, Rng& rng, DraftBlock& out,
                       GenerationStats& st) override {
    if (!tree_.is_tree()) Drafter::ProposeRecorded(seq, k, step, rng, out, st);  // fails: a chain
    ProposeModelTree(rt_, *model_, *cache_, tree_tokens_, seq, k, tree_, sampling_, calibration_, rng, out, st, &step);
  }

  // The draft keeps whatever prefix of the target's positions it holds (a tree: the
  // next Propose keeps the path the sequence took).
  void Rollback(int keep) override {
    if (!cache_->has_tree()) cache_->Truncate(std::min(cache_->length(), keep));
  }
  // A draft call returns the last position's logits only.
  std::map<std::string, int> matrix_types() const override { return MatrixTypeCounts(*model_, layers_); }
  std::vector<double> MeasureCallCosts(std::span<const int> prompt, int reps) override {
    return TimeForwardCalls(rt_, *model_, layers_, kv_type_, prompt, 2, reps, false);
  }
  // A tree's calls are priced with the drafter's work on the rows they return (candidate
  // children, softmax; for the catch-up the root's and the calibration's), at the tau of
  // the drafter's latest generation.
  std::vector<double> MeasureTreeCallCosts(std::span<const int> prompt, int n_max, bool tree, int reps) override {
    const int vocab = model_->config.vocab_size;
    const double tau = calibration_.Tau();
    return TimeForwardCalls(rt_, *model_, layers_, kv_type_, prompt, n_max, reps, false, tree,
                            [&](std::span<const float> rows) {
                              return TreeRowsWork(rows, vocab, !tree, tree_, sampling_, tau);
                            });
  }

 private:
  std::shared_ptr<const Model> model_;
  int layers_;
  std::string name_;
  KvType kv_type_;
  SamplingParams sampling_;
  TreeShape tree_;
  std::unique_ptr<KVCache> cache_;
  std::vector<int> tree_tokens_;  // the token of each tree slot of cache_ (trees only)
  TreeCalibration calibration_;   // greedy dynamic trees
  std::vector<float> q_;  // [vocab]
  Runtime rt_;
};

}  // namespace

std::unique_ptr<Drafter> MakeModelDrafter(std::shared_ptr<const Model> model, int layers, std::string name,
                                          KvType kv_type, const SamplingParams& sampling, const TreeShape& tree,
                                          const Runtime& rt) {
  return std::make_unique<ModelDrafter>(std::move(model), layers, std::move(name), kv_type, sampling, tree, rt);
}

}  // namespace specsweep
