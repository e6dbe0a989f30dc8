// Next-token latency (decoders/common.h FinishStats): the tokens a speculative step emits
// together with the first token took no time after it, so they are not in the denominator.
#include <gtest/gtest.h>

#include <chrono>

#include "decoders/common.h"
#include "decoders/decoder.h"
#include "tests/replay_fixtures.h"

namespace specsweep {
namespace {

using testing::PromptIds;
using testing::Tiny;

TEST(NextTokenLatency, TokensOfTheFirstEmissionAreNotCountedAfterIt) {
  const Clock::time_point start{};
  const auto at = [&](int ms) { return start + std::chrono::milliseconds(ms); };
  GenerationStats s;
  s.generated_tokens = 10;
  FinishStats(s, start, FirstEmission{at(400), 4}, at(1000));  // 4 tokens at 400 ms, 6 in the next 600
  EXPECT_NEAR(s.first_token_latency_s, 0.4, 1e-9);
  EXPECT_NEAR(s.mean_next_token_latency_s, 0.6 / 6, 1e-9);
  FinishStats(s, start, FirstEmission{at(400), 1}, at(1000));  // one token first (autoregressive)
  EXPECT_NEAR(s.mean_next_token_latency_s, 0.6 / 9, 1e-9);
  s.generated_tokens = 4;
  FinishStats(s, start, FirstEmission{at(400), 4}, at(400));  // everything in the first emission
  EXPECT_EQ(s.mean_next_token_latency_s, 0.0);
}

// Every draft accepted: the first step emits K + 1 tokens; the latency after it is the later
// steps' time over their tokens (before the fix the denominator was generated - 1).
TEST(NextTokenLatency, SpeculativeFirstStepsDraftsAreLeftOut) {
  const LoadedModel m = Tiny();
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.draft = DraftSpec::Make(TargetDraft{0, QType::Q4_0});
  o.k = 4;
  o.max_new_tokens = 25;
  o.stop_at_eos = false;
  o.acceptance_source = ParseAcceptanceSource("positions=[1.0]", "test");
  const GenerationStats s = MakeDecoder(m, o)->Generate(PromptIds(0, m.model->config.vocab_size)).stats;
  ASSERT_EQ(s.generated_tokens, 25);
  ASSERT_EQ(s.accepted_per_step.front(), 4);
  const double after_first = s.total_s - s.first_token_latency_s;
  EXPECT_NEAR(s.mean_next_token_latency_s * (25 - 5), after_first, 1e-9 * (1 + after_first));
}

}  // namespace
}  // namespace specsweep
