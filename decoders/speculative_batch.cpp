// The batched speculative loop (Decoder::GenerateBatch): B sequences in lockstep, each
// with its own target cache, draft state, K policy and random source, through the same
// step as Generate (Plan, Judge, Conclude: speculative.cpp):
//   prefill every prompt[0..n-1) in ONE target ForwardBatch; drafter.BeginBatch
//   repeat while a sequence is live:
//     every live sequence b: K_b = its policy, clipped to its context and max_new_tokens
//     drafter.ProposeBatch: d_b1..d_bk for each (a model's chain: one draft ForwardBatch
//       per draft position over the sequences still drafting)
//     ONE target ForwardBatch over every live sequence's [last_b, d_b1..d_bk]
//       (sum of k_b + 1 rows; a tree with its mask)
//     per sequence: verify (ragged: each accepts its own a_b), emit, its target cache
//       keeps n_b + a_b positions, drafter.Rollback to its own length
//   A sequence that finishes (EOS, max_new_tokens, the context end) leaves the batch:
//   later calls hold only the live sequences (no padding).
// Sequence b draws from Rng(SequenceSeed(seed, b)) (b = 0: the seed itself, so a batch of
// one is Generate) and runs on a draft state of its own (b = 0: the run's, whose
// calibration MeasureCallCosts reads). Replayed acceptance: alpha and positions draw from
// the run's one stream, the live sequences in sequence order each step, so the batch's
// draws together realise the declared rates (stratified over all of them); a trace gives
// sequence b the run's next generation g + b, as B generations one after another would.
// Each sequence's stats carry the batch's prefill and the draft and verify time of the
// steps it took part in; its latencies run on the batch's clock (FinishStats at the step
// it left). batch_target_calls counts the verification calls (the prefill yields no
// token), batch_draft_calls the drafter's calls (a ForwardBatch once).
#include <algorithm>
#include <deque>
#include <vector>

#include "decoders/speculative_loop.h"

namespace specsweep {

void SpeculativeDecoder::MakeLanes(std::span<const std::vector<int>> prompts, SpeculativeState& run,
                                   std::deque<SpecLane>& lanes, std::vector<std::unique_ptr<DraftState>>& own_drafts,
                                   std::vector<AcceptanceReplay>& own_replays) const {
  const bool trace = opt_.acceptance_source.kind == AcceptanceSource::Kind::Trace;
  own_replays.reserve(prompts.size());  // the lanes point into it
  for (size_t b = 0; b < prompts.size(); ++b) {
    AcceptanceReplay* replay = run.replay ? &*run.replay : nullptr;
    if (replay) replay->BeginGeneration();
    // A trace: generation g + b's steps, with a place in them of its own.
    if (replay && trace) replay = &own_replays.emplace_back(*run.replay);
    DraftState* draft = b == 0 ? run.draft.get() : own_drafts.emplace_back(drafter_->NewState()).get();
    lanes.emplace_back(target_, rt_, opt_, Context(), prompts[b], *draft, replay,
                       SequenceSeed(opt_.sampling.seed, static_cast<int>(b)));
  }
}

void SpeculativeDecoder::BatchPrefill(std::deque<SpecLane>& lanes, std::span<const std::vector<int>> prompts,
                                      KVCache::Scratch& scratch) const {
  std::vector<SequenceCall> calls;
  std::vector<DraftState*> states;
  for (size_t b = 0; b < lanes.size(); ++b) {
    if (const auto c = lanes[b].target.PrefillCall(prompts[b])) calls.push_back(*c);
    states.push_back(&lanes[b].draft);
  }
  if (!calls.empty()) ForwardBatch(rt_, *target_.model, calls, scratch);
  drafter_->BeginBatch(states, prompts);
}

void SpeculativeDecoder::BatchStep(std::span<SpecLane* const> live, KVCache::Scratch& scratch,
                                   BatchClock& clock) const {
  // Draft K_b tokens for every live sequence (K_b = 0: it verifies its last token alone).
  auto t0 = Clock::now();
  std::vector<DraftLane> drafting;
  for (SpecLane* l : live) {
    Plan(*l);
    if (l->k > 0)
      drafting.push_back({l->draft, {l->seq, l->k, *l->policy, l->recorded}, l->rng, l->block, l->res.stats});
  }
  if (!drafting.empty()) clock.draft_calls += drafter_->ProposeBatch(drafting);
  for (SpecLane* l : live) CheckDraft(*l);
  const double draft_s = Seconds(t0, Clock::now());

  // ONE target call over all B x (k_b + 1) positions; each sequence accepts on its own.
  t0 = Clock::now();
  std::vector<SequenceCall> calls;
  for (SpecLane* l : live) calls.push_back(l->target.VerifyCall(l->seq, l->block));
  const std::vector<std::span<const float>> rows = ForwardBatch(rt_, *target_.model, calls, scratch);
  ++clock.target_calls;
  for (size_t b = 0; b < live.size(); ++b) Judge(*live[b], rows[b]);
  const double verify_s = Seconds(t0, Clock::now());
  clock.draft_s += draft_s;
  clock.verify_s += verify_s;

  // Emit; each cache rolls back to its own length (ragged).
  for (SpecLane* l : live) {
    GenerationStats& st = l->res.stats;
    st.verify_s += verify_s;
    const double rollback_from = st.draft_s += draft_s;
    Conclude(*l, {});
    clock.draft_s += st.draft_s - rollback_from;
    if (l->done) l->end = Clock::now();
  }
}

std::vector<GenerationResult> SpeculativeDecoder::GenerateBatch(std::span<const std::vector<int>> prompts,
                                                                DecoderState& state, GenerationStats& aggregate) const {
  SpeculativeState& run = static_cast<SpeculativeState&>(state);
  for (const std::vector<int>& p : prompts) CheckPrompt(p, target_.model->config.vocab_size, Context(), target_.name);
  std::deque<SpecLane> lanes;  // never moved: the steps hold pointers to them
  std::vector<std::unique_ptr<DraftState>> own_drafts;
  std::vector<AcceptanceReplay> own_replays;
  MakeLanes(prompts, run, lanes, own_drafts, own_replays);
  KVCache::Scratch scratch;  // the target's batched calls
  BatchClock clock;
  const auto t0 = Clock::now();
  BatchPrefill(lanes, prompts, scratch);
  clock.prefill_s = Seconds(t0, Clock::now());
  std::vector<SpecLane*> live;
  for (SpecLane& l : lanes) {
    l.first = {clock.start, 0};
    l.res.stats.prefill_s = clock.prefill_s;
    l.end = Clock::now();
    if (!l.done) live.push_back(&l);
  }
  while (!live.empty()) {
    BatchStep(live, scratch, clock);
    std::erase_if(live, [](const SpecLane* l) { return l->done; });
  }
  std::vector<GenerationResult> out;
  for (size_t b = 0; b < lanes.size(); ++b) {
    SpecLane& l = lanes[b];
    FinishStats(l.res.stats, clock.start, l.first, l.end);
    l.res.text = DecodeGenerated(target_.tokenizer.get(), prompts[b], l.res.tokens);
    out.push_back(std::move(l.res));
  }
  aggregate = AggregateBatch(out, clock, Clock::now());
  return out;
}

}  // namespace specsweep
