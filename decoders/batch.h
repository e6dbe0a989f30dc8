// Shared by the batched loops (Decoder::GenerateBatch: autoregressive_batch.cpp,
// speculative_batch.cpp): the batch's own clock and calls, and its aggregate statistics.
#pragma once
#include <span>
#include <vector>

#include "decoders/common.h"

namespace specsweep {

// What the batch as a whole spent: its phases' wall time and its Forward calls (one
// ForwardBatch over the live sequences counts once).
struct BatchClock {
  Clock::time_point start = Clock::now();
  double prefill_s = 0, draft_s = 0, verify_s = 0;
  int target_calls = 0, draft_calls = 0;
  std::vector<double> decode_forward_s;  // autoregressive: each decode call's seconds
};

// A sequence's entry of the aggregate's per_sequence.
SequenceStats SequenceOf(const GenerationStats& s);

// The batch's statistics from its sequences' results (each already finished with
// FinishStats on the batch's clock): counts, drafted/accepted, target_calls and the
// per-position arrays summed over the sequences (AddStats); batch, batch_target_calls,
// batch_draft_calls and per_sequence; prefill/draft/verify/total the batch's wall time,
// tokens_per_s all tokens over (total - prefill); first-token and next-token latency the
// mean over the sequences; stopped_at_eos when every sequence stopped there.
GenerationStats AggregateBatch(std::span<const GenerationResult> results, const BatchClock& clock,
                               Clock::time_point end);

}  // namespace specsweep
