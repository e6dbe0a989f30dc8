// The shared speculative loop (Leviathan et al. 2023, Algorithm 1; llama.cpp
// speculative-simple shape), whatever proposes the tokens:
//   prefill the target on prompt[0..n-1); drafter.Begin(prompt); last = prompt[n-1]
//   repeat: K = policy, clipped to the context and max_new_tokens
//           d1..dk = drafter.Propose(seq, K)           (k <= K; k = 0 is a plain step)
//           ONE target Forward over [last, d1..dk] -> k+1 logit rows
//             (a token tree: one Forward with the tree mask, SpecInfer)
//           verify (the Verifier chosen when the decoder is built, verifier.h)
//           emit the accepted path d.. + next; the target cache keeps n_seq + a
//             positions (a tree: the path moved to them); drafter.Rollback(n_seq + a)
// Under a replayed acceptance source (acceptance_source.h) only the verifier differs: a is
// drawn from the source (and, replaying a trace, K is the recorded one). A model's token
// tree replays a trace's recorded tree and accepted path, or draws a along the tree's
// first-child path (alpha, positions; static trees).
#include <algorithm>
#include <optional>
#include <vector>

#include "decoders/common.h"
#include "decoders/draft_policy.h"
#include "decoders/draft_tree.h"
#include "decoders/sampler.h"
#include "decoders/speculative.h"
#include "decoders/verifier.h"
#include "base/error.h"
#include "models/forward.h"

namespace specsweep {
namespace {

// The target's side of a generation: its cache, one step's verification pass, and the
// cache cut back to what the step accepted.
class TargetPass {
 public:
  TargetPass(const LoadedModel& target, const Runtime& rt, int context, KvType kv_type, int64_t reach)
      : target_(target), rt_(rt), cache_(target.model->config, 0, context, kv_type) {
    cache_.Reserve(static_cast<int>(std::min<int64_t>(context, reach)));
  }
  // Everything but the last prompt token: it is fed with the first draft block.
  void Prefill(std::span<const int> prompt) {
    if (prompt.size() > 1) Forward(rt_, *target_.model, prompt.first(prompt.size() - 1), 0, cache_, false);
  }
  // One Forward over [seq.back(), d1..dk] (a tree: with the tree mask, the root at slot
  // n_seq - 1 and node i at n_seq + i): the target's rows [kd+1][vocab].
  std::span<const float> Verify(std::span<const int> seq, const DraftBlock& d, GenerationStats& st) {
    const int n_seq = static_cast<int>(seq.size());
    inputs_.assign(1, seq.back());
    inputs_.insert(inputs_.end(), d.tokens.begin(), d.tokens.end());
    slots_.clear();
    if (!d.parents.empty()) {
      slots_.push_back(n_seq - 2);
      for (int p : d.parents) slots_.push_back(n_seq + p);
    }
    std::span<const float> tl = Forward(rt_, *target_.model, inputs_, n_seq - 1, cache_, true, slots_);
    CheckLogits(tl, target_.model->config.vocab_size, target_.name, n_seq - 1, st.target_calls);
    ++st.target_calls;
    return tl;
  }
  std::span<const int> inputs() const { return inputs_; }  // the last Verify's: last token, then the draft
  // The cache keeps last + the accepted path (n_seq + a positions): a chain's prefix, or
  // a tree's path moved to them.
  void KeepAccepted(int n_seq, const DraftBlock& d, const Verdict& v) {
    if (d.parents.empty()) return cache_.Truncate(n_seq + v.n_accepted);
    slots_.assign(1, n_seq - 1);
    for (int i : v.path) slots_.push_back(n_seq + i);
    cache_.KeepPath(slots_);
  }

 private:
  const LoadedModel& target_;
  Runtime rt_;
  KVCache cache_;
  std::vector<int> inputs_;  // [k+1] last accepted token, d1..dk
  std::vector<int> slots_;   // [k+1] a tree's parent slots (Forward), then the kept path
};

// One step's counts: drafted and accepted, per step and per position (a tree: per
// depth, the nodes drafted there and the accepted path's node), and a model tree's shape.
void RecordStep(GenerationStats& st, const DraftBlock& d, const Verdict& v, bool model_tree) {
  const int kd = static_cast<int>(d.tokens.size());
  st.k_per_step.push_back(kd);
  st.accepted_per_step.push_back(v.n_accepted);
  if (model_tree) st.tree_per_step.push_back({d.parents, d.ranks, d.expanded, v.path});
  st.drafted += kd;
  st.accepted += v.n_accepted;
  if (static_cast<int>(st.drafted_at_pos.size()) < kd) {
    st.drafted_at_pos.resize(kd, 0);
    st.accepted_at_pos.resize(kd, 0);
  }
  std::vector<int> depth(kd);
  for (int i = 0; i < kd; ++i) {
    const int parent = d.parents.empty() ? i - 1 : d.parents[i];
    depth[i] = parent < 0 ? 0 : depth[parent] + 1;
  }
  for (int i = 0; i < kd; ++i) ++st.drafted_at_pos[depth[i]];
  for (int i = 0; i < v.n_accepted; ++i) ++st.accepted_at_pos[i];
}

// Replaying a trace of trees: the step's recorded tree, cut as its drafter would cut it
// when larger than K (into `clipped`); null otherwise.
const TreeStep* StepTree(AcceptanceReplay* replay, int k, bool grown_order, TreeStep& clipped) {
  const TreeStep* recorded = replay ? replay->NextTree() : nullptr;
  if (!recorded || static_cast<int>(recorded->parents.size()) <= k) return recorded;
  clipped = ClipTree(*recorded, k, grown_order);
  return &clipped;
}

// A speculative run's state (DecoderState): the replayed source's stream, whose draws
// run on across the run's generations, and the drafter's.
struct SpeculativeState : DecoderState {
  std::optional<AcceptanceReplay> replay;
  std::unique_ptr<DraftState> draft;
};

class SpeculativeDecoder : public Decoder {
 public:
  SpeculativeDecoder(const LoadedModel& target, std::unique_ptr<Drafter> drafter, const DecoderOptions& o,
                     AcceptRule rule, const Runtime& rt)
      : target_(target),
        drafter_(std::move(drafter)),
        opt_(o),
        rt_(rt),
        verifier_(MakeVerifier(o, target.model->config.vocab_size, rule)) {
    // A source that cannot replay (no rates, a trace not loaded) fails when the decoder is built.
    if (o.acceptance_source.replayed()) AcceptanceReplay(o.acceptance_source, o.sampling.seed);
  }
  const DecoderOptions& options() const override { return opt_; }
  std::unique_ptr<DecoderState> NewState() const override {
    auto s = std::make_unique<SpeculativeState>();
    if (opt_.acceptance_source.replayed()) s->replay.emplace(opt_.acceptance_source, opt_.sampling.seed);
    s->draft = drafter_->NewState();
    return s;
  }
  using Decoder::Generate;
  GenerationResult Generate(std::span<const int> prompt, DecoderState& state, const TokenCallback& cb) const override;
  CallCosts MeasureCallCosts(std::span<const int> prompt, int target_n_max, int reps, const DecoderState& state,
                             int batch) const override {
    CallCosts c;
    if (target_n_max > 0)
      c.target_s =
          TimeForwardCalls(rt_, *target_.model, 0, opt_.kv_type, prompt, target_n_max, reps, true, false, {}, batch);
    // A tree's call holds at most K nodes, a catch-up K + 1 tokens.
    const int n_tree = opt_.draft.IsTree() ? std::min(opt_.k + 1, drafter_->context() - int(prompt.size())) : 0;
    DraftCallCosts d =
        drafter_->MeasureCallCosts(*static_cast<const SpeculativeState&>(state).draft, prompt, n_tree, reps, batch);
    c.draft_s = std::move(d.draft_s);
    c.draft_tree_s = std::move(d.draft_tree_s);
    return c;
  }
  std::map<std::string, int> draft_types() const override { return drafter_->matrix_types(); }

 private:
  // The step's draft into `d` (none when r.k is 0).
  void Propose(DraftState& s, const DraftRequest& r, Rng& rng, DraftBlock& d, GenerationStats& st) const {
    d.Clear();
    if (r.k > 0) drafter_->Propose(s, r, rng, d, st);
    const int kd = static_cast<int>(d.tokens.size()), k = r.k;
    if (kd > k) Fail("decoder: drafter '{}' proposed {} tokens, K is {}", drafter_->name(), kd, k);
  }
  // Emits the accepted drafts then the target's token, stopping at EOS (returns true).
  bool Emit(const DraftBlock& d, const Verdict& v, std::vector<int>& seq, GenerationResult& res,
            const TokenCallback& cb, FirstEmission& first) const {
    GenerationStats& st = res.stats;
    const size_t emitted_from = res.tokens.size();
    for (int i = 0; i <= v.n_accepted && !st.stopped_at_eos; ++i) {
      const int tok = i < v.n_accepted ? d.tokens[v.path[i]] : v.next;
      if (opt_.stop_at_eos && target_.model->config.IsStop(tok))
        st.stopped_at_eos = true;
      else
        res.tokens.push_back(tok), seq.push_back(tok);
    }
    const int n_new = static_cast<int>(res.tokens.size() - emitted_from);
    if (st.generated_tokens == 0 && n_new > 0) first = {Clock::now(), n_new};
    st.generated_tokens += n_new;
    if (cb && n_new > 0) cb(std::span<const int>(res.tokens).subspan(emitted_from));
    return st.stopped_at_eos;
  }

  LoadedModel target_;
  std::unique_ptr<Drafter> drafter_;
  DecoderOptions opt_;
  Runtime rt_;
  std::unique_ptr<const Verifier> verifier_;
  bool model_tree_ = opt_.draft.IsTree() && !opt_.draft.ModelFree();  // records tree_per_step
};

GenerationResult SpeculativeDecoder::Generate(std::span<const int> prompt, DecoderState& state,
                                              const TokenCallback& cb) const {
  SpeculativeState& run = static_cast<SpeculativeState&>(state);
  // A same-vocabulary draft holds the same positions: the shorter context rules.
  const int context = std::min(target_.model->config.max_seq_len, drafter_->context());
  CheckPrompt(prompt, target_.model->config.vocab_size, context, target_.name);
  GenerationResult res;
  GenerationStats& st = res.stats;
  st.prompt_tokens = static_cast<int>(prompt.size());
  Rng rng(opt_.sampling.seed);
  AcceptanceReplay* replay = run.replay ? &*run.replay : nullptr;
  if (replay) replay->BeginGeneration();
  // Replaying a trace, K is the recorded one and every draft token is proposed (what a
  // constant policy's OnDraft does); the recorded run's policy already decided.
  const bool replay_k = replay && replay->NextK() >= 0;
  auto policy = replay_k ? MakeConstantPolicy(opt_.k) : MakeDraftPolicy(opt_);
  // The positions this run can reach (a verify block may run K + 1 past the last token).
  TargetPass target(target_, rt_, context, opt_.kv_type, int64_t(prompt.size()) + opt_.max_new_tokens + opt_.k + 1);
  std::vector<int> seq(prompt.begin(), prompt.end());  // [prompt + generated] token ids
  DraftBlock draft;
  const auto start = Clock::now();
  FirstEmission first{start, 0};

  auto t0 = Clock::now();
  target.Prefill(prompt);
  drafter_->Begin(*run.draft, prompt);
  st.prefill_s = Seconds(t0, Clock::now());
  for (bool done = false; !done && st.generated_tokens < opt_.max_new_tokens && int(seq.size()) < context;) {
    const int n_seq = static_cast<int>(seq.size());
    // A step writes positions n_seq-1 .. n_seq-1+K and emits up to K+1 tokens.
    const int k = std::max(0, std::min({replay_k ? replay->NextK() : policy->NextK(), context - n_seq - 1,
                                        opt_.max_new_tokens - st.generated_tokens - 1}));
    t0 = Clock::now();
    TreeStep clipped;
    const TreeStep* recorded = StepTree(replay, k, !opt_.draft.branching().empty(), clipped);
    Propose(*run.draft, {seq, k, *policy, recorded}, rng, draft, st);
    st.draft_s += Seconds(t0, Clock::now());

    t0 = Clock::now();
    std::span<const float> tl = target.Verify(seq, draft, st);  // [kd+1][vocab]
    const Verdict v = verifier_->Verify({draft, tl, rng, replay, recorded});
    drafter_->Observe(*run.draft, target.inputs(), tl, target_.model->config.vocab_size);
    st.verify_s += Seconds(t0, Clock::now());

    policy->Update(static_cast<int>(draft.tokens.size()), v.n_accepted);
    RecordStep(st, draft, v, model_tree_);
    done = Emit(draft, v, seq, res, cb, first);
    // The drafter keeps what still matches (a tree: the path seq took) and catches up next step.
    target.KeepAccepted(n_seq, draft, v);
    t0 = Clock::now();
    drafter_->Rollback(*run.draft, seq, n_seq + v.n_accepted);
    st.draft_s += Seconds(t0, Clock::now());
  }
  FinishStats(st, start, first, Clock::now());
  res.text = DecodeGenerated(target_.tokenizer.get(), prompt, res.tokens);
  return res;
}

}  // namespace

std::unique_ptr<Decoder> MakeSpeculativeDecoder(const LoadedModel& target, ModelDraft draft, const DecoderOptions& o,
                                                AcceptRule rule, const Runtime& rt) {
  ValidateSpeculativeOptions(target, o);
  if (!draft.model) Fail("decoder: draft: no model");
  const ModelConfig& tc = target.model->config;
  const ModelConfig& dc = draft.model->config;
  if (dc.vocab_size != tc.vocab_size)
    Fail("decoder: draft: vocabulary mismatch: draft '{}' has vocab_size {}, target '{}' has {}", draft.name,
         dc.vocab_size, target.name, tc.vocab_size);
  if (draft.layers < 0 || draft.layers > dc.n_layers)
    Fail("decoder: draft.layers: must be in [1, {}] for draft '{}', got {}", dc.n_layers, draft.name, draft.layers);
  return MakeSpeculativeDecoder(target,
                                MakeModelDrafter(std::move(draft.model), draft.layers, draft.name, o.DraftKvType(),
                                                 o.sampling, TreeShape{o.draft.branching(), o.draft.tree_budget()}, rt),
                                o, rule, rt);
}

std::unique_ptr<Decoder> MakeSpeculativeDecoder(const LoadedModel& target, std::unique_ptr<Drafter> drafter,
                                                const DecoderOptions& o, AcceptRule rule, const Runtime& rt) {
  ValidateSpeculativeOptions(target, o);
  if (!drafter) Fail("decoder: draft: no drafter");
  return std::make_unique<SpeculativeDecoder>(target, std::move(drafter), o, rule, rt);
}

}  // namespace specsweep
