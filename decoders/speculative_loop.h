// The speculative loop's parts (speculative.cpp): the target's side of a sequence, one
// sequence's state through a generation (SpecLane) and the decoder, whose Generate runs
// one lane and GenerateBatch (speculative_batch.cpp) B lanes in lockstep. Internal to
// decoders/.
#pragma once
#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "decoders/batch.h"
#include "decoders/common.h"
#include "decoders/draft_policy.h"
#include "decoders/drafter.h"
#include "decoders/verifier.h"
#include "models/forward.h"

namespace specsweep {

// The target's side of a generation: its cache, one step's verification call, and the
// cache cut back to what the step accepted.
class TargetPass {
 public:
  TargetPass(const LoadedModel& target, const Runtime& rt, int context, KvType kv_type, int64_t reach)
      : target_(target), rt_(rt), cache_(target.model->config, 0, context, kv_type) {
    cache_.Reserve(static_cast<int>(std::min<int64_t>(context, reach)));
  }
  // Everything but the last prompt token (it is fed with the first draft block); none
  // for a one-token prompt.
  std::optional<SequenceCall> PrefillCall(std::span<const int> prompt) {
    if (prompt.size() <= 1) return std::nullopt;
    return SequenceCall{prompt.first(prompt.size() - 1), 0, &cache_, false};
  }
  void Prefill(std::span<const int> prompt) {
    if (const auto c = PrefillCall(prompt)) Forward(rt_, *target_.model, c->tokens, 0, cache_, false);
  }
  // The call over [seq.back(), d1..dk] (a tree: with the tree mask, the root at slot
  // n_seq - 1 and node i at n_seq + i), all logits.
  SequenceCall VerifyCall(std::span<const int> seq, const DraftBlock& d);
  // The call alone through Forward: its rows [kd+1][vocab], unchecked.
  std::span<const float> Verify(std::span<const int> seq, const DraftBlock& d) {
    const SequenceCall c = VerifyCall(seq, d);
    return Forward(rt_, *target_.model, c.tokens, c.start_pos, cache_, true, c.parents);
  }
  // The rows of a verification call, checked, the call counted.
  std::span<const float> Verified(std::span<const float> rows, int n_seq, GenerationStats& st) const;
  std::span<const int> inputs() const { return inputs_; }  // the last call's: last token, then the draft
  // The cache keeps last + the accepted path (n_seq + a positions): a chain's prefix, or
  // a tree's path moved to them.
  void KeepAccepted(int n_seq, const DraftBlock& d, const Verdict& v);

 private:
  const LoadedModel& target_;
  Runtime rt_;
  KVCache cache_;
  std::vector<int> inputs_;  // [k+1] last accepted token, d1..dk
  std::vector<int> slots_;   // [k+1] a tree's parent slots (Forward), then the kept path
};

// One step's counts: drafted and accepted, per step and per position (a tree: per
// depth, the nodes drafted there and the accepted path's node), and a model tree's shape.
void RecordStep(GenerationStats& st, const DraftBlock& d, const Verdict& v, bool model_tree);

// A speculative run's state (DecoderState): the replayed source's stream, whose draws
// run on across the run's generations, and the drafter's.
struct SpeculativeState : DecoderState {
  std::optional<AcceptanceReplay> replay;
  std::unique_ptr<DraftState> draft;
};

// One sequence's generation: what a step reads and leaves (Generate keeps one, a batch B).
struct SpecLane {
  SpecLane(const LoadedModel& target, const Runtime& rt, const DecoderOptions& o, int context,
           std::span<const int> prompt, DraftState& draft, AcceptanceReplay* replay, uint64_t seed);
  std::vector<int> seq;  // [prompt + generated] token ids
  TargetPass target;
  DraftState& draft;
  AcceptanceReplay* replay;  // null: the real rule
  // Replaying a trace, K is the recorded one and every draft token is proposed (what a
  // constant policy's OnDraft does); the recorded run's policy already decided.
  bool replay_k;
  std::unique_ptr<DraftPolicy> policy;
  Rng rng;  // sampling, draft sampling and speculative sampling of this sequence
  GenerationResult res;
  FirstEmission first;
  Clock::time_point end;  // when it left the batch
  // The step under way: its start length, K, the recorded tree (a trace), draft, verdict.
  int n_seq = 0, k = 0;
  TreeStep clipped;
  const TreeStep* recorded = nullptr;
  DraftBlock block;
  Verdict verdict;
  bool done = false;
};

class SpeculativeDecoder : public Decoder {
 public:
  SpeculativeDecoder(const LoadedModel& target, std::unique_ptr<Drafter> drafter, const DecoderOptions& o,
                     AcceptRule rule, const Runtime& rt);
  const DecoderOptions& options() const override { return opt_; }
  std::unique_ptr<DecoderState> NewState() const override;
  using Decoder::Generate;
  GenerationResult Generate(std::span<const int> prompt, DecoderState& state, const TokenCallback& cb) const override;
  std::vector<GenerationResult> GenerateBatch(std::span<const std::vector<int>> prompts, DecoderState& state,
                                              GenerationStats& aggregate) const override;
  CallCosts MeasureCallCosts(std::span<const int> prompt, int target_n_max, int reps, const DecoderState& state,
                             int batch) const override;
  std::map<std::string, int> draft_types() const override { return drafter_->matrix_types(); }

 private:
  // A same-vocabulary draft holds the same positions: the shorter context rules.
  int Context() const { return std::min(target_.model->config.max_seq_len, drafter_->context()); }
  // The step's K and recorded tree (a trace) into l.k, l.recorded; l.block cleared.
  void Plan(SpecLane& l) const;
  // Throws unless the drafter kept to K.
  void CheckDraft(const SpecLane& l) const;
  // The verdict on l's draft from the target's rows of its verification call.
  void Judge(SpecLane& l, std::span<const float> rows) const;
  // Emits the verdict's tokens, rolls the target and the draft back to the sequence's
  // length and marks the lane done (EOS, max_new_tokens, the context end).
  void Conclude(SpecLane& l, const TokenCallback& cb) const;
  // Emits the accepted drafts then the target's token, stopping at EOS (returns true).
  bool Emit(const DraftBlock& d, const Verdict& v, std::vector<int>& seq, GenerationResult& res,
            const TokenCallback& cb, FirstEmission& first) const;
  // GenerateBatch's lanes (each with its draft state, replay and random source) and steps.
  void MakeLanes(std::span<const std::vector<int>> prompts, SpeculativeState& run, std::deque<SpecLane>& lanes,
                 std::vector<std::unique_ptr<DraftState>>& own_drafts,
                 std::vector<AcceptanceReplay>& own_replays) const;
  void BatchPrefill(std::deque<SpecLane>& lanes, std::span<const std::vector<int>> prompts,
                    KVCache::Scratch& scratch) const;
  void BatchStep(std::span<SpecLane* const> live, KVCache::Scratch& scratch, BatchClock& clock) const;

  LoadedModel target_;
  std::unique_ptr<Drafter> drafter_;
  DecoderOptions opt_;
  Runtime rt_;
  std::unique_ptr<const Verifier> verifier_;
  bool model_tree_ = opt_.draft.IsTree() && !opt_.draft.ModelFree();  // records tree_per_step
};

}  // namespace specsweep
