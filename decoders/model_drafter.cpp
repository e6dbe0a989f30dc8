// Same-vocabulary draft model (Leviathan et al. 2023, Algorithm 1, lines 2-4):
//   for i = 1..K: q_i = M_q(prefix + d_1..d_{i-1}); d_i = argmax q_i (greedy) or d_i ~ q_i
// with its own KV cache. The first Forward of a step also catches the cache up on the
// tokens emitted since (the last step's correction/bonus, or the last prompt token).
// With a TreeShape it proposes a token tree instead (draft_tree.h).
#include <algorithm>
#include <vector>

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
    ModelDraftState& s = Reset(state);
    // Everything but the last prompt token: it is fed with the first draft position.
    if (prompt.size() > 1) Forward(tree_.rt, *model_, prompt.first(prompt.size() - 1), 0, *s.cache, false);
  }
  // Every prompt's prefill in one ForwardBatch.
  void BeginBatch(std::span<DraftState* const> states, std::span<const std::vector<int>> prompts) const override {
    std::vector<SequenceCall> calls;
    for (size_t i = 0; i < states.size(); ++i) {
      ModelDraftState& s = Reset(*states[i]);
      const std::span<const int> p = prompts[i];
      if (p.size() > 1) calls.push_back({p.first(p.size() - 1), 0, s.cache.get(), false});
    }
    if (!calls.empty()) ForwardBatch(tree_.rt, *model_, calls, calls[0].cache->scratch);
  }

  void Propose(DraftState& state, const DraftRequest& r, Rng& rng, DraftBlock& out,
               GenerationStats& st) const override {
    ModelDraftState& s = static_cast<ModelDraftState&>(state);
    if (tree_.shape.is_tree()) return ProposeModelTree(tree_, s, r, rng, out, st);
    CheckChain(r);
    std::span<const int> feed = r.seq.subspan(s.cache->length());  // catch-up + first position
    for (int i = 0;; ++i) {
      const int pos = s.cache->length() + static_cast<int>(feed.size()) - 1;
      std::span<const float> logits =
          Forward(tree_.rt, *model_, feed, s.cache->length(), *s.cache, false);  // [1][vocab]
      if (!Take(s, r, i, logits, pos, rng, out, st)) break;
      feed = std::span<const int>(&out.tokens.back(), 1);
    }
  }
  // A chain: draft position i of every lane still drafting in ONE ForwardBatch (the
  // first also catches each cache up), so a batch's draft position costs one call.
  // Trees fall back to Propose per lane (their calls differ in shape from lane to lane).
  int ProposeBatch(std::span<const DraftLane> lanes) const override {
    if (tree_.shape.is_tree()) return Drafter::ProposeBatch(lanes);
    std::vector<std::span<const int>> feed;  // [lanes] the tokens of each lane's next call
    for (const DraftLane& l : lanes) {
      CheckChain(l.request);
      feed.push_back(l.request.seq.subspan(static_cast<ModelDraftState&>(l.state).cache->length()));
    }
    std::vector<size_t> live(lanes.size()), next;  // the lanes still drafting
    for (size_t j = 0; j < lanes.size(); ++j) live[j] = j;
    std::vector<SequenceCall> calls;
    int n_calls = 0;
    for (int i = 0; !live.empty(); ++i, ++n_calls) {
      calls.clear();
      for (size_t j : live) {
        KVCache* c = static_cast<ModelDraftState&>(lanes[j].state).cache.get();
        calls.push_back({feed[j], c->length(), c, false});
      }
      const std::vector<std::span<const float>> rows =
          ForwardBatch(tree_.rt, *model_, calls, calls[0].cache->scratch);  // [live][1][vocab]
      next.clear();
      for (size_t c = 0; c < live.size(); ++c) {
        const DraftLane& l = lanes[live[c]];
        const int pos = calls[c].start_pos + static_cast<int>(calls[c].tokens.size()) - 1;
        if (!Take(static_cast<ModelDraftState&>(l.state), l.request, i, rows[c], pos, l.rng, l.out, l.stats)) continue;
        feed[live[c]] = std::span<const int>(&l.out.tokens.back(), 1);
        next.push_back(live[c]);
      }
      live.swap(next);
    }
    return n_calls;
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
    // A batch's trees are grown one sequence after another (ProposeBatch falls back to
    // Propose), so each call costs B calls of one.
    DraftCallCosts c;
    c.draft_s = time(false);
    c.draft_tree_s = time(true);
    for (std::vector<double>* v : {&c.draft_s, &c.draft_tree_s})
      for (double& s : *v) s *= batch;
    return c;
  }

 private:
  // A fresh generation's state: an empty cache, no tree, the calibration reset (per
  // generation: a prompt's drafts never depend on another's).
  ModelDraftState& Reset(DraftState& state) const {
    ModelDraftState& s = static_cast<ModelDraftState&>(state);
    s.cache = std::make_unique<KVCache>(model_->config, layers_, 0, kv_type_);
    s.tree_tokens.clear();
    s.calibration.Reset();
    return s;
  }
  void CheckChain(const DraftRequest& r) const {
    if (r.recorded)
      Fail(
          "acceptance replay: drafter '{}' cannot replay a recorded token tree (a trace of a model-drafted tree "
          "replays on a model-drafted tree)",
          name_);
  }
  // Draft position i (0-based) of a chain from the draft's row at sequence position `pos`:
  // appends its token to `out` unless the policy drops it. False when drafting stops
  // (the policy, or r.k tokens reached).
  bool Take(ModelDraftState& s, const DraftRequest& r, int i, std::span<const float> logits, int pos, Rng& rng,
            DraftBlock& out, GenerationStats& st) const {
    CheckLogits(logits, model_->config.vocab_size, "draft " + name_, pos, st.target_calls);
    ++st.draft_calls;
    const bool greedy = tree_.sampling.greedy();
    float top;
    if (greedy) {
      top = r.policy.UsesTopProb() ? MaxSoftmaxProb(logits) : 1.0f;  // the softmax only when read
    } else {
      ComputeProbs(logits, tree_.sampling, s.q);
      top = *std::max_element(s.q.begin(), s.q.end());
    }
    const DraftAction act = r.policy.OnDraft(i + 1, top);
    if (act == DraftAction::DropAndStop) return false;
    out.tokens.push_back(greedy ? Argmax(logits) : SampleFromProbs(s.q, rng));
    if (!greedy) out.probs.insert(out.probs.end(), s.q.begin(), s.q.end());
    return act != DraftAction::KeepAndStop && i + 1 < r.k;
  }

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
