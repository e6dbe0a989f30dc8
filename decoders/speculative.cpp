// The shared speculative loop (Leviathan et al. 2023, Algorithm 1; llama.cpp
// speculative-simple shape), whatever proposes the tokens:
//   prefill the target on prompt[0..n-1); drafter.Begin(prompt); last = prompt[n-1]
//   repeat: K = policy, clipped to the context and max_new_tokens
//           d1..dk = drafter.Propose(seq, K)           (k <= K; k = 0 is a plain step)
//           ONE target Forward over [last, d1..dk] -> k+1 logit rows
//             (a token tree: one Forward with the tree mask, SpecInfer)
//           verify -> emit the accepted path d.. + next; the target cache keeps
//             n_seq + a positions (a tree: the path moved to them); drafter.Rollback(n_seq + a)
// Under a replayed acceptance source (acceptance_source.h) only "verify" differs: a is
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
#include "base/error.h"
#include "models/forward.h"

namespace specsweep {
namespace {

class SpeculativeDecoder : public Decoder {
 public:
  SpeculativeDecoder(const LoadedModel& target, std::unique_ptr<Drafter> drafter, const DecoderOptions& o,
                     AcceptRule rule, const Runtime& rt)
      : target_(target), drafter_(std::move(drafter)), opt_(o), rule_(rule), rt_(rt) {
    if (o.acceptance_source.replayed()) replay_.emplace(o.acceptance_source, o.sampling.seed);
  }
  const DecoderOptions& options() const override { return opt_; }
  GenerationResult Generate(std::span<const int> prompt, const TokenCallback& cb) override;
  CallCosts MeasureCallCosts(std::span<const int> prompt, int target_n_max, int reps) override {
    CallCosts c;
    if (target_n_max > 0)
      c.target_s = TimeForwardCalls(rt_, *target_.model, 0, opt_.kv_type, prompt, target_n_max, reps, true);
    c.draft_s = drafter_->MeasureCallCosts(prompt, reps);
    if (opt_.draft.IsTree()) {  // a call holds at most K tree nodes, a catch-up K + 1 tokens
      const int n_max = std::min(opt_.k + 1, drafter_->context() - static_cast<int>(prompt.size()));
      if (std::vector<double> s = drafter_->MeasureTreeCallCosts(prompt, n_max, false, reps); !s.empty()) {
        c.draft_s = std::move(s);
        c.draft_tree_s = drafter_->MeasureTreeCallCosts(prompt, n_max, true, reps);
      }
    }
    return c;
  }
  std::map<std::string, int> draft_types() const override { return drafter_->matrix_types(); }

 private:
  LoadedModel target_;
  std::unique_ptr<Drafter> drafter_;
  DecoderOptions opt_;
  AcceptRule rule_;
  Runtime rt_;
  std::optional<AcceptanceReplay> replay_;  // its draws run on across generations
  bool model_tree_ = opt_.draft.IsTree() && !opt_.draft.ModelFree();  // records tree_per_step

  // A replayed step's accepted path through the tree `d`: the recorded path (its nodes
  // the step holds), or the first-child path cut at a count drawn from the source.
  std::vector<int> ReplayedPath(const DraftBlock& d, const TreeStep* recorded) {
    const int kd = static_cast<int>(d.tokens.size());
    std::vector<int> path;
    if (recorded) {
      for (int i : recorded->path)
        if (i < kd) path.push_back(i);
    } else {
      for (int u = -1;;) {
        const auto c = std::find(d.parents.begin(), d.parents.end(), u);
        if (c == d.parents.end()) break;
        path.push_back(u = static_cast<int>(c - d.parents.begin()));
      }
    }
    path.resize(std::min<size_t>(path.size(), replay_->Accepted(static_cast<int>(path.size()))));
    return path;
  }
};

GenerationResult SpeculativeDecoder::Generate(std::span<const int> prompt, const TokenCallback& cb) {
  const Model& tm = *target_.model;
  const ModelConfig& c = tm.config;
  const int vocab = c.vocab_size;
  // A same-vocabulary draft holds the same positions: the shorter context rules.
  const int context = std::min(c.max_seq_len, drafter_->context());
  CheckPrompt(prompt, vocab, context, target_.name);
  const bool greedy = opt_.sampling.greedy();

  GenerationResult res;
  GenerationStats& st = res.stats;
  st.prompt_tokens = static_cast<int>(prompt.size());
  Rng rng(opt_.sampling.seed);
  // Replaying a trace, K is the recorded one and every draft token is proposed (what a
  // constant policy's OnDraft does); the recorded run's policy already decided.
  if (replay_) replay_->BeginGeneration();
  const bool replay_k = replay_ && replay_->NextK() >= 0;
  auto policy = replay_k ? MakeConstantPolicy(opt_.k) : MakeDraftPolicy(opt_);
  KVCache tcache(c, 0, context, opt_.kv_type);
  // The positions this run can reach (a verify block may run K + 1 past the last token).
  const int64_t reach = int64_t(prompt.size()) + opt_.max_new_tokens + opt_.k + 1;
  tcache.Reserve(static_cast<int>(std::min<int64_t>(context, reach)));
  std::vector<int> seq(prompt.begin(), prompt.end());  // [prompt + generated] token ids
  DraftBlock draft;              // tokens [k], probs [k][vocab] or none (one-hot)
  std::vector<int> verify_in;    // [k+1] = last accepted token, d1..dk
  std::vector<int> slots;        // [k+1] a tree's parent slots (Forward), then the kept path
  const auto start = Clock::now();
  auto first = start;

  // Prefill everything but the last prompt token: it is fed with the first draft block.
  auto t0 = Clock::now();
  const int n_prefill = static_cast<int>(prompt.size()) - 1;
  if (n_prefill > 0) Forward(rt_, tm, prompt.first(n_prefill), 0, tcache, false);
  drafter_->Begin(prompt);
  st.prefill_s = Seconds(t0, Clock::now());

  bool done = false;
  while (!done && st.generated_tokens < opt_.max_new_tokens && static_cast<int>(seq.size()) < context) {
    const int n_seq = static_cast<int>(seq.size());
    // A step writes positions n_seq-1 .. n_seq-1+K and emits up to K+1 tokens.
    const int k = std::max(0, std::min({replay_k ? replay_->NextK() : policy->NextK(), context - n_seq - 1,
                                        opt_.max_new_tokens - st.generated_tokens - 1}));

    // --- draft ---
    t0 = Clock::now();
    draft.Clear();
    const TreeStep* recorded = replay_ ? replay_->NextTree() : nullptr;
    TreeStep clipped;  // a recorded tree larger than this step's K, cut as its drafter would
    if (recorded && static_cast<int>(recorded->parents.size()) > k) {
      clipped = ClipTree(*recorded, k, !opt_.draft.branching().empty());
      recorded = &clipped;
    }
    if (k > 0 && recorded) drafter_->ProposeRecorded(seq, k, *recorded, rng, draft, st);
    else if (k > 0) drafter_->Propose(seq, k, *policy, rng, draft, st);
    st.draft_s += Seconds(t0, Clock::now());
    const int kd = static_cast<int>(draft.tokens.size());
    if (kd > k) Fail("decoder: drafter '{}' proposed {} tokens, K is {}", drafter_->name(), kd, k);

    // --- verify: one target Forward over kd+1 positions ---
    t0 = Clock::now();
    verify_in.assign(1, seq.back());
    verify_in.insert(verify_in.end(), draft.tokens.begin(), draft.tokens.end());
    const bool tree = !draft.parents.empty();
    slots.clear();
    if (tree) {  // the root (last token) at slot n_seq - 1, draft node i at n_seq + i
      slots.push_back(n_seq - 2);
      for (int p : draft.parents) slots.push_back(n_seq + p);
    }
    std::span<const float> tl = Forward(rt_, tm, verify_in, n_seq - 1, tcache, true, slots);  // [kd+1][vocab]
    CheckLogits(tl, vocab, target_.name, n_seq - 1, st.target_calls);
    ++st.target_calls;
    const DraftView dv{draft.tokens, draft.parents, draft.probs};
    const Verdict v = replay_ && tree ? VerifyReplayedPath(ReplayedPath(draft, recorded), tl, vocab, opt_.sampling, rng)
                      : replay_       ? VerifyReplayed(replay_->Accepted(kd), tl, vocab, opt_.sampling, rng)
                      : greedy        ? VerifyGreedy(dv, tl, vocab)
                                      : VerifySampling(dv, tl, vocab, opt_.sampling, rng, rule_);
    drafter_->Observe(verify_in, tl, vocab);
    st.verify_s += Seconds(t0, Clock::now());

    // --- bookkeeping ---
    policy->Update(kd, v.n_accepted);
    st.k_per_step.push_back(kd);
    st.accepted_per_step.push_back(v.n_accepted);
    if (model_tree_) st.tree_per_step.push_back({draft.parents, draft.ranks, draft.expanded, v.path});
    st.drafted += kd;
    st.accepted += v.n_accepted;
    if (static_cast<int>(st.drafted_at_pos.size()) < kd) {
      st.drafted_at_pos.resize(kd, 0);
      st.accepted_at_pos.resize(kd, 0);
    }
    if (tree) {  // per depth: nodes drafted there, and the accepted path's node
      std::vector<int> depth(kd);
      for (int i = 0; i < kd; ++i) depth[i] = draft.parents[i] < 0 ? 0 : depth[draft.parents[i]] + 1;
      for (int i = 0; i < kd; ++i) ++st.drafted_at_pos[depth[i]];
    } else {
      for (int i = 0; i < kd; ++i) ++st.drafted_at_pos[i];
    }
    for (int i = 0; i < v.n_accepted; ++i) ++st.accepted_at_pos[i];

    // Emit accepted drafts then the target's token, stopping at EOS.
    const size_t emitted_from = res.tokens.size();
    for (int i = 0; i <= v.n_accepted; ++i) {
      const int tok = i < v.n_accepted ? draft.tokens[v.path[i]] : v.next;
      if (opt_.stop_at_eos && c.IsStop(tok)) {
        st.stopped_at_eos = done = true;
        break;
      }
      res.tokens.push_back(tok);
      seq.push_back(tok);
    }
    const int n_new = static_cast<int>(res.tokens.size() - emitted_from);
    if (st.generated_tokens == 0 && n_new > 0) first = Clock::now();
    st.generated_tokens += n_new;
    if (cb && n_new > 0) cb(std::span<const int>(res.tokens).subspan(emitted_from));

    // Roll back: the target keeps last + accepted drafts (n_seq + a positions); the
    // drafter keeps what still matches and catches up next step.
    const int keep = n_seq + v.n_accepted;
    if (tree) {
      slots.assign(1, n_seq - 1);
      for (int i : v.path) slots.push_back(n_seq + i);
      tcache.KeepPath(slots);
    } else {
      tcache.Truncate(keep);
    }
    t0 = Clock::now();
    drafter_->Rollback(keep);
    st.draft_s += Seconds(t0, Clock::now());
  }
  FinishStats(st, start, first, Clock::now());
  res.text = DecodeGenerated(target_.tokenizer.get(), prompt, res.tokens);
  return res;
}

}  // namespace

std::unique_ptr<Decoder> MakeSpeculativeDecoder(const LoadedModel& target, ModelDraft draft,
                                                const DecoderOptions& o, AcceptRule rule, const Runtime& rt) {
  ValidateSpeculativeOptions(target, o);
  if (!draft.model) Fail("decoder: draft: no model");
  const ModelConfig& tc = target.model->config;
  const ModelConfig& dc = draft.model->config;
  if (dc.vocab_size != tc.vocab_size)
    Fail("decoder: draft: vocabulary mismatch: draft '{}' has vocab_size {}, target '{}' has {}",
         draft.name, dc.vocab_size, target.name, tc.vocab_size);
  if (draft.layers < 0 || draft.layers > dc.n_layers)
    Fail("decoder: draft.layers: must be in [1, {}] for draft '{}', got {}", dc.n_layers, draft.name,
         draft.layers);
  return MakeSpeculativeDecoder(
      target, MakeModelDrafter(std::move(draft.model), draft.layers, draft.name, o.DraftKvType(), o.sampling,
                               TreeShape{o.draft.branching(), o.draft.tree_budget()}, rt),
      o, rule, rt);
}

std::unique_ptr<Decoder> MakeSpeculativeDecoder(const LoadedModel& target, std::unique_ptr<Drafter> drafter,
                                                const DecoderOptions& o, AcceptRule rule, const Runtime& rt) {
  ValidateSpeculativeOptions(target, o);
  if (!drafter) Fail("decoder: draft: no drafter");
  return std::make_unique<SpeculativeDecoder>(target, std::move(drafter), o, rule, rt);
}

}  // namespace specsweep
