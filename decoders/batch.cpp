#include "decoders/batch.h"

#include <algorithm>

namespace specsweep {

SequenceStats SequenceOf(const GenerationStats& s) {
  return {s.prompt_tokens,         s.generated_tokens,          s.target_calls,  s.drafted, s.accepted,
          s.first_token_latency_s, s.mean_next_token_latency_s, s.stopped_at_eos};
}

GenerationStats AggregateBatch(std::span<const GenerationResult> results, const BatchClock& clock,
                               Clock::time_point end) {
  GenerationStats a;
  a.stopped_at_eos = !results.empty();
  double first_sum = 0, next_sum = 0;
  for (const GenerationResult& r : results) {
    AddStats(a, r.stats);
    a.per_sequence.push_back(SequenceOf(r.stats));
    first_sum += r.stats.first_token_latency_s;
    next_sum += r.stats.mean_next_token_latency_s;
    a.stopped_at_eos = a.stopped_at_eos && r.stats.stopped_at_eos;
  }
  const int b = static_cast<int>(results.size());
  a.batch = b;
  a.batch_target_calls = clock.target_calls;
  a.batch_draft_calls = clock.draft_calls;
  // Times are the batch's, not the sum of its sequences' (which overlap).
  a.prefill_s = clock.prefill_s;
  a.draft_s = clock.draft_s;
  a.verify_s = clock.verify_s;
  a.total_s = Seconds(clock.start, end);
  a.other_s = std::max(0.0, a.total_s - a.prefill_s - a.draft_s - a.verify_s);
  a.decode_forward_calls = static_cast<int>(clock.decode_forward_s.size());
  a.decode_forward_s = 0;
  for (double t : clock.decode_forward_s) a.decode_forward_s += t;
  a.decode_forward_median_s = MedianOf(clock.decode_forward_s);
  a.first_token_latency_s = b ? first_sum / b : 0.0;
  a.mean_next_token_latency_s = b ? next_sum / b : 0.0;
  const double decode_s = a.total_s - a.prefill_s;
  a.tokens_per_s = decode_s > 0 ? a.generated_tokens / decode_s : 0.0;
  return a;
}

}  // namespace specsweep
