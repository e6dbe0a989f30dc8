// The batch part of an aggregated record: a batched point's size and how its sequences
// fared, from each run's per-sequence statistics (docs/batching.md).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "harness/report/aggregate_parts.h"
#include "harness/report/statistics.h"

namespace specsweep {

BatchFigures BuildBatchFigures(const RawRecord& r) {
  BatchFigures b;
  const std::string text = FieldText(r.params, "batch");
  b.batch = text.empty() ? 1 : std::max(1, std::atoi(text.c_str()));
  if (b.batch == 1) return b;
  std::vector<double> latency, acceptance, batch_calls;
  double sequence_calls = 0, slots = 0;
  for (const RawRun& run : r.runs) {
    const GenerationStats& s = run.stats;
    if (s.per_sequence.empty()) continue;
    batch_calls.push_back(double(s.batch_target_calls));
    for (const SequenceStats& q : s.per_sequence) {
      // A sequence of one token has no next-token latency (0 by definition): not a sample.
      if (q.generated_tokens > 1) latency.push_back(q.mean_next_token_latency_s);
      if (q.drafted > 0) acceptance.push_back(q.acceptance_rate());
      sequence_calls += q.target_calls;
    }
    slots += double(s.batch_target_calls) * double(s.per_sequence.size());
  }
  b.batch_target_calls = batch_calls.empty() ? NAN : Mean(batch_calls);
  if (!latency.empty()) {
    b.per_sequence_next_token_latency_s = Mean(latency);
    b.per_sequence_next_token_latency_min_s = *std::min_element(latency.begin(), latency.end());
    b.per_sequence_next_token_latency_max_s = *std::max_element(latency.begin(), latency.end());
  }
  if (!acceptance.empty()) {
    b.per_sequence_acceptance_min = *std::min_element(acceptance.begin(), acceptance.end());
    b.per_sequence_acceptance_max = *std::max_element(acceptance.begin(), acceptance.end());
  }
  b.batch_occupancy = slots > 0 ? sequence_calls / slots : NAN;
  return b;
}

}  // namespace specsweep
