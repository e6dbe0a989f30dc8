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

#include "decoders/draft_tree.h"
#include "decoders/sampler.h"
#include "decoders/speculative.h"
#include "decoders/speculative_loop.h"
#include "base/error.h"

namespace specsweep {

SequenceCall TargetPass::VerifyCall(std::span<const int> seq, const DraftBlock& d) {
  const int n_seq = static_cast<int>(seq.size());
  inputs_.assign(1, seq.back());
  inputs_.insert(inputs_.end(), d.tokens.begin(), d.tokens.end());
  slots_.clear();
  if (!d.parents.empty()) {
    slots_.push_back(n_seq - 2);
    for (int p : d.parents) slots_.push_back(n_seq + p);
  }
  return {inputs_, n_seq - 1, &cache_, true, slots_};
}

std::span<const float> TargetPass::Verified(std::span<const float> rows, int n_seq, GenerationStats& st) const {
  CheckLogits(rows, target_.model->config.vocab_size, target_.name, n_seq - 1, st.target_calls);
  ++st.target_calls;
  return rows;
}

void TargetPass::KeepAccepted(int n_seq, const DraftBlock& d, const Verdict& v) {
  if (d.parents.empty()) return cache_.Truncate(n_seq + v.n_accepted);
  slots_.assign(1, n_seq - 1);
  for (int i : v.path) slots_.push_back(n_seq + i);
  cache_.KeepPath(slots_);
}

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

SpecLane::SpecLane(const LoadedModel& t, const Runtime& rt, const DecoderOptions& o, int context,
                   std::span<const int> prompt, DraftState& d, AcceptanceReplay* r, uint64_t seed)
    : seq(prompt.begin(), prompt.end()),
      // The positions this run can reach (a verify block may run K + 1 past the last token).
      target(t, rt, context, o.kv_type, int64_t(prompt.size()) + o.max_new_tokens + o.k + 1),
      draft(d),
      replay(r),
      replay_k(r && r->NextK() >= 0),
      policy(replay_k ? MakeConstantPolicy(o.k) : MakeDraftPolicy(o)),
      rng(seed),
      first{Clock::now(), 0} {
  res.stats.prompt_tokens = static_cast<int>(prompt.size());
  done = o.max_new_tokens <= 0 || int(prompt.size()) >= context;
}

SpeculativeDecoder::SpeculativeDecoder(const LoadedModel& target, std::unique_ptr<Drafter> drafter,
                                       const DecoderOptions& o, AcceptRule rule, const Runtime& rt)
    : target_(target),
      drafter_(std::move(drafter)),
      opt_(o),
      rt_(rt),
      verifier_(MakeVerifier(o, target.model->config.vocab_size, rule)) {
  // A source that cannot replay (no rates, a trace not loaded) fails when the decoder is built.
  if (o.acceptance_source.replayed()) AcceptanceReplay(o.acceptance_source, o.sampling.seed);
}

std::unique_ptr<DecoderState> SpeculativeDecoder::NewState() const {
  auto s = std::make_unique<SpeculativeState>();
  if (opt_.acceptance_source.replayed()) s->replay.emplace(opt_.acceptance_source, opt_.sampling.seed);
  s->draft = drafter_->NewState();
  return s;
}

CallCosts SpeculativeDecoder::MeasureCallCosts(std::span<const int> prompt, int target_n_max, int reps,
                                               const DecoderState& state, int batch) const {
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

void SpeculativeDecoder::Plan(SpecLane& l) const {
  l.n_seq = static_cast<int>(l.seq.size());
  // A step writes positions n_seq-1 .. n_seq-1+K and emits up to K+1 tokens.
  l.k = std::max(0, std::min({l.replay_k ? l.replay->NextK() : l.policy->NextK(), Context() - l.n_seq - 1,
                              opt_.max_new_tokens - l.res.stats.generated_tokens - 1}));
  // Replaying a trace of trees: the step's recorded tree, cut as its drafter would cut
  // it when larger than K.
  l.recorded = l.replay ? l.replay->NextTree() : nullptr;
  if (l.recorded && static_cast<int>(l.recorded->parents.size()) > l.k) {
    l.clipped = ClipTree(*l.recorded, l.k, !opt_.draft.branching().empty());
    l.recorded = &l.clipped;
  }
  l.block.Clear();
}

void SpeculativeDecoder::CheckDraft(const SpecLane& l) const {
  const int kd = static_cast<int>(l.block.tokens.size());
  if (kd > l.k) Fail("decoder: drafter '{}' proposed {} tokens, K is {}", drafter_->name(), kd, l.k);
}

void SpeculativeDecoder::Judge(SpecLane& l, std::span<const float> rows) const {
  const std::span<const float> tl = l.target.Verified(rows, l.n_seq, l.res.stats);  // [kd+1][vocab]
  l.verdict = verifier_->Verify({l.block, tl, l.rng, l.replay, l.recorded});
  drafter_->Observe(l.draft, l.target.inputs(), tl, target_.model->config.vocab_size);
}

void SpeculativeDecoder::Conclude(SpecLane& l, const TokenCallback& cb) const {
  GenerationStats& st = l.res.stats;
  l.policy->Update(static_cast<int>(l.block.tokens.size()), l.verdict.n_accepted);
  RecordStep(st, l.block, l.verdict, model_tree_);
  const bool eos = Emit(l.block, l.verdict, l.seq, l.res, cb, l.first);
  // The drafter keeps what still matches (a tree: the path seq took) and catches up next step.
  l.target.KeepAccepted(l.n_seq, l.block, l.verdict);
  const auto t0 = Clock::now();
  drafter_->Rollback(l.draft, l.seq, l.n_seq + l.verdict.n_accepted);
  st.draft_s += Seconds(t0, Clock::now());
  l.done = eos || st.generated_tokens >= opt_.max_new_tokens || int(l.seq.size()) >= Context();
}

bool SpeculativeDecoder::Emit(const DraftBlock& d, const Verdict& v, std::vector<int>& seq, GenerationResult& res,
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

GenerationResult SpeculativeDecoder::Generate(std::span<const int> prompt, DecoderState& state,
                                              const TokenCallback& cb) const {
  SpeculativeState& run = static_cast<SpeculativeState&>(state);
  CheckPrompt(prompt, target_.model->config.vocab_size, Context(), target_.name);
  AcceptanceReplay* replay = run.replay ? &*run.replay : nullptr;
  if (replay) replay->BeginGeneration();
  SpecLane l(target_, rt_, opt_, Context(), prompt, *run.draft, replay, opt_.sampling.seed);
  GenerationStats& st = l.res.stats;
  const auto start = Clock::now();
  l.first = {start, 0};

  auto t0 = Clock::now();
  l.target.Prefill(prompt);
  drafter_->Begin(l.draft, prompt);
  st.prefill_s = Seconds(t0, Clock::now());
  while (!l.done) {
    Plan(l);
    t0 = Clock::now();
    if (l.k > 0) drafter_->Propose(l.draft, {l.seq, l.k, *l.policy, l.recorded}, l.rng, l.block, st);
    CheckDraft(l);
    st.draft_s += Seconds(t0, Clock::now());

    t0 = Clock::now();
    Judge(l, l.target.Verify(l.seq, l.block));
    st.verify_s += Seconds(t0, Clock::now());
    Conclude(l, cb);
  }
  FinishStats(st, start, l.first, Clock::now());
  l.res.text = DecodeGenerated(target_.tokenizer.get(), prompt, l.res.tokens);
  return std::move(l.res);
}

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
