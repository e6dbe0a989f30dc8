// The batched autoregressive loop (Decoder::GenerateBatch), the baseline of a batched
// speculative run at the same B:
//   ONE target ForwardBatch over every prompt (its last position's logits each)
//   repeat while a sequence is live:
//     every live sequence takes its next token (AdvanceAr: greedy, or drawn from its own
//       Rng(SequenceSeed(seed, b)); b = 0: the seed, so a batch of one is Generate)
//     ONE target ForwardBatch over the live sequences' last tokens
//   A sequence that finishes (EOS, max_new_tokens, the context end) leaves the batch:
//   later calls hold only the live sequences (no padding).
// Each sequence's stats carry the batch's prefill and the time of the calls it took part
// in (verify_s, decode_forward_*); batch_target_calls counts every call, the prefill
// included (it yields the first tokens, as in Generate).
#include <deque>
#include <vector>

#include "decoders/autoregressive.h"
#include "decoders/batch.h"
#include "models/forward.h"

namespace specsweep {

namespace {

// One decode step of the live lanes: each takes its token from its rows; those that go
// on run in one ForwardBatch, whose rows replace theirs. Returns the lanes still live.
std::vector<ArLane*> ArBatchStep(std::vector<ArLane*>& live, std::vector<std::span<const float>>& rows,
                                 const LoadedModel& target, const DecoderOptions& o, const Runtime& rt,
                                 KVCache::Scratch& scratch, BatchClock& clock) {
  const ModelConfig& c = target.model->config;
  std::vector<ArLane*> next;
  std::vector<std::span<const float>> next_rows;
  for (size_t b = 0; b < live.size(); ++b) {
    if (AdvanceAr(*live[b], rows[b], o, c, {}))
      next.push_back(live[b]);
    else
      live[b]->end = Clock::now();
  }
  if (next.empty()) return next;
  std::vector<SequenceCall> calls;
  for (ArLane* l : next)
    calls.push_back({std::span<const int>(&l->res.tokens.back(), 1), l->n_seq - 1, &l->cache, false});
  const auto t0 = Clock::now();
  rows = ForwardBatch(rt, *target.model, calls, scratch);  // [live][1][vocab]
  const double forward_s = Seconds(t0, Clock::now());
  ++clock.target_calls;
  clock.decode_forward_s.push_back(forward_s);
  for (size_t b = 0; b < next.size(); ++b) {
    RecordArDecodeCall(*next[b], forward_s);
    CountArCall(*next[b], rows[b], target);
  }
  return next;
}

}  // namespace

std::vector<GenerationResult> GenerateAutoregressiveBatch(const LoadedModel& target, const DecoderOptions& o,
                                                          const Runtime& rt, std::span<const std::vector<int>> prompts,
                                                          GenerationStats& aggregate) {
  const ModelConfig& c = target.model->config;
  for (const std::vector<int>& p : prompts) CheckPrompt(p, c.vocab_size, c.max_seq_len, target.name);
  std::deque<ArLane> lanes;  // never moved: the steps hold pointers to them
  for (size_t b = 0; b < prompts.size(); ++b)
    lanes.emplace_back(c, o, prompts[b], SequenceSeed(o.sampling.seed, static_cast<int>(b)));
  KVCache::Scratch scratch;  // the batched calls'
  BatchClock clock;
  std::vector<SequenceCall> calls;
  std::vector<ArLane*> live;
  for (ArLane& l : lanes) {
    l.first = {clock.start, 1};
    calls.push_back({l.prompt, 0, &l.cache, false});
    live.push_back(&l);
  }
  auto t0 = Clock::now();
  std::vector<std::span<const float>> rows;  // [live][1][vocab]
  if (!calls.empty()) {
    rows = ForwardBatch(rt, *target.model, calls, scratch);
    ++clock.target_calls;
  }
  clock.prefill_s = Seconds(t0, Clock::now());
  for (size_t b = 0; b < lanes.size(); ++b) {
    lanes[b].res.stats.prefill_s = clock.prefill_s;
    CountArCall(lanes[b], rows[b], target);
  }
  while (!live.empty()) {
    t0 = Clock::now();
    live = ArBatchStep(live, rows, target, o, rt, scratch, clock);
    clock.verify_s += Seconds(t0, Clock::now());
  }
  std::vector<GenerationResult> out;
  for (ArLane& l : lanes) out.push_back(FinishAr(l, target, clock.start));
  aggregate = AggregateBatch(out, clock, Clock::now());
  return out;
}

}  // namespace specsweep
