// Batched decoding (Decoder::GenerateBatch, issue #50): every sequence of a greedy
// batched speculative run equals its batch-1 autoregressive output whatever the batch,
// the draft and where each sequence stops; batched AR equals batch-1 AR; a batch of one
// is Generate; batched speculative sampling keeps the target's distribution; replayed
// acceptance realises its rate over the batch; the aggregate adds up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "decoders/decoder.h"
#include "decoders/sampler.h"
#include "decoders/speculative.h"
#include "base/error.h"
#include "models/forward.h"
#include "models/synthetic.h"
#include "tests/chi_square.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using chi::ChiSquare;
using chi::Critical;

LoadedModel Synthetic(uint64_t seed) {
  return LoadedModel{"synthetic", std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), seed)), nullptr};
}

// Prompts of different lengths (one of a single token, whose prefill is empty; one that
// reaches the context end of 128 before max_new_tokens).
std::vector<std::vector<int>> Prompts(int vocab) {
  std::vector<std::vector<int>> p;
  for (int len : {7, 1, 15, 110, 4}) {
    std::vector<int> ids{1};
    for (int i = 1; i < len; ++i) ids.push_back(3 + (i * 37 + len * 11) % (vocab - 3));
    p.push_back(ids);
  }
  return p;
}

// B prompts starting at prompt `from` (cyclically), so batches mix them differently.
std::vector<std::vector<int>> Batch(const std::vector<std::vector<int>>& all, int b, int from) {
  std::vector<std::vector<int>> out;
  for (int i = 0; i < b; ++i) out.push_back(all[(from + i) % all.size()]);
  return out;
}

constexpr int kNew = 24;

DecoderOptions Ar() {
  DecoderOptions o;
  o.max_new_tokens = kNew;
  return o;
}

struct Draft {
  std::string label;
  DraftSpec spec;
  std::vector<int> ks;
};

std::vector<Draft> Drafts() {
  return {{"q4_0", DraftSpec::Make(TargetDraft{0, QType::Q4_0}), {2, 4}},
          {"q8_0", DraftSpec::Make(TargetDraft{0, QType::Q8_0}), {2, 4}},
          {"early exit L=1", DraftSpec::Make(TargetDraft{1, std::nullopt}), {2, 4}},
          {"lookup", DraftSpec::Make(LookupDraft{}), {2, 4}},
          {"lookup tree", DraftSpec::Make(LookupDraft{}, DraftTree::Dynamic(8)), {8}},
          {"q8_0 static tree 2,2", DraftSpec::Make(TargetDraft{0, QType::Q8_0}, DraftTree::Static({2, 2})), {6}}};
}

// The target, and a copy whose EOS is a token one prompt's output reaches after a few
// tokens (so that sequence stops there, the others later or never).
std::vector<LoadedModel> Targets() {
  LoadedModel plain = Synthetic(1);
  const std::vector<int> out = MakeDecoder(plain, Ar())->Generate(Prompts(128)[2]).tokens;
  Model m = MakeSyntheticModel(TinyTestConfig(), 1);
  size_t j = 3;  // the first token at 3 or later that has not come before
  while (std::find(out.begin(), out.begin() + j, out.at(j)) != out.begin() + j) ++j;
  m.config.eos_id = out[j];
  return {plain, LoadedModel{"synthetic-eos", std::make_shared<const Model>(std::move(m)), nullptr}};
}

TEST(BatchDecoding, GreedyBatchedSpeculativeEqualsBatchOneAutoregressive) {
  for (const LoadedModel& target : Targets()) {
    const auto prompts = Prompts(target.model->config.vocab_size);
    auto ar = MakeDecoder(target, Ar());
    std::vector<GenerationResult> expected;
    for (const auto& p : prompts) expected.push_back(ar->Generate(p));
    bool eos = false, context_end = false;
    for (const GenerationResult& r : expected) {
      std::printf("  %s: prompt %d -> %d tokens%s\n", target.name.c_str(), r.stats.prompt_tokens,
                  r.stats.generated_tokens, r.stats.stopped_at_eos ? " (EOS)" : "");
      eos = eos || r.stats.stopped_at_eos;
      context_end = context_end || (!r.stats.stopped_at_eos && r.stats.generated_tokens < kNew);
    }
    if (target.name == "synthetic-eos") {
      EXPECT_TRUE(eos) << "no sequence stops at EOS";
    } else {
      EXPECT_TRUE(context_end) << "no sequence reaches the context end";
    }
    for (const Draft& d : Drafts())
      for (int k : d.ks) {
        DecoderOptions o = Ar();
        o.kind = DecoderKind::Speculative;
        o.k = k;
        o.draft = d.spec;
        auto dec = MakeDecoder(target, o);
        int64_t drafted = 0, accepted = 0;
        for (int b = 1; b <= 5; ++b) {
          const int from = b % 5;
          GenerationStats agg;
          auto state = dec->NewState();
          const std::vector<GenerationResult> got = dec->GenerateBatch(Batch(prompts, b, from), *state, agg);
          ASSERT_EQ(got.size(), size_t(b));
          for (int i = 0; i < b; ++i) {
            const GenerationResult& want = expected[(from + i) % 5];
            ASSERT_EQ(got[i].tokens, want.tokens) << target.name << " " << d.label << " K=" << k << " B=" << b
                                                  << " sequence " << i << " (prompt " << (from + i) % 5 << ")";
            EXPECT_EQ(got[i].stats.stopped_at_eos, want.stats.stopped_at_eos);
            EXPECT_EQ(got[i].stats.generated_tokens, int(want.tokens.size()));
          }
          drafted += agg.drafted, accepted += agg.accepted;
        }
        std::printf("  %s %s K=%d: %lld of %lld drafts accepted\n", target.name.c_str(), d.label.c_str(), k,
                    static_cast<long long>(accepted), static_cast<long long>(drafted));
        EXPECT_GT(accepted, 0) << "a vacuous comparison";
      }
  }
}

TEST(BatchDecoding, BatchedAutoregressiveEqualsBatchOne) {
  for (const LoadedModel& target : Targets()) {
    const auto prompts = Prompts(target.model->config.vocab_size);
    auto ar = MakeDecoder(target, Ar());
    for (int b = 1; b <= 5; ++b) {
      GenerationStats agg;
      auto state = ar->NewState();
      const auto batch = Batch(prompts, b, b);
      const std::vector<GenerationResult> got = ar->GenerateBatch(batch, *state, agg);
      for (int i = 0; i < b; ++i) {
        const GenerationResult want = ar->Generate(batch[i]);
        ASSERT_EQ(got[i].tokens, want.tokens) << target.name << " B=" << b << " sequence " << i;
        EXPECT_EQ(got[i].stats.target_calls, want.stats.target_calls);
        EXPECT_EQ(got[i].stats.decode_forward_calls, want.stats.decode_forward_calls);
        EXPECT_EQ(got[i].stats.stopped_at_eos, want.stats.stopped_at_eos);
      }
    }
  }
}

// Tokens and every count of a generation.
void ExpectSameGeneration(const GenerationResult& a, const GenerationResult& b, const std::string& what) {
  EXPECT_EQ(a.tokens, b.tokens) << what;
  const GenerationStats &x = a.stats, &y = b.stats;
  EXPECT_EQ(x.prompt_tokens, y.prompt_tokens) << what;
  EXPECT_EQ(x.generated_tokens, y.generated_tokens) << what;
  EXPECT_EQ(x.target_calls, y.target_calls) << what;
  EXPECT_EQ(x.draft_calls, y.draft_calls) << what;
  EXPECT_EQ(x.drafted, y.drafted) << what;
  EXPECT_EQ(x.accepted, y.accepted) << what;
  EXPECT_EQ(x.drafted_at_pos, y.drafted_at_pos) << what;
  EXPECT_EQ(x.accepted_at_pos, y.accepted_at_pos) << what;
  EXPECT_EQ(x.k_per_step, y.k_per_step) << what;
  EXPECT_EQ(x.accepted_per_step, y.accepted_per_step) << what;
  EXPECT_EQ(x.decode_forward_calls, y.decode_forward_calls) << what;
  EXPECT_EQ(x.stopped_at_eos, y.stopped_at_eos) << what;
}

// The decoders of a test: autoregressive, then speculative with each draft at its largest K.
std::vector<std::pair<std::string, DecoderOptions>> Configs() {
  std::vector<std::pair<std::string, DecoderOptions>> v{{"ar", Ar()}};
  for (const Draft& d : Drafts()) {
    DecoderOptions o = Ar();
    o.kind = DecoderKind::Speculative;
    o.k = d.ks.back();
    o.draft = d.spec;
    v.emplace_back(d.label, o);
  }
  return v;
}

TEST(BatchDecoding, BatchOfOneIsGenerate) {
  const LoadedModel target = Synthetic(1);
  const auto prompts = Prompts(target.model->config.vocab_size);
  for (float temperature : {0.0f, 1.0f})
    for (const char* source : {"measured", "alpha=0.8"})
      for (auto [label, o] : Configs()) {
        // Replay needs a speculative decoder, on a tree one with a model.
        const bool replayed = std::string(source) != "measured";
        if (replayed && (o.kind == DecoderKind::Autoregressive || (o.draft.IsTree() && o.draft.ModelFree()))) continue;
        o.sampling.temperature = temperature;
        o.sampling.seed = 7;
        o.acceptance_source = ParseAcceptanceSource(source, "test");
        auto dec = MakeDecoder(target, o);
        const std::string what = label + " " + source + " T=" + std::to_string(temperature);
        for (const auto& p : prompts) {
          auto s1 = dec->NewState(), s2 = dec->NewState();
          GenerationStats agg;
          const std::vector<GenerationResult> got = dec->GenerateBatch(std::vector<std::vector<int>>{p}, *s1, agg);
          const GenerationResult want = dec->Generate(p, *s2);
          ASSERT_EQ(got.size(), 1u);
          ExpectSameGeneration(got[0], want, what);
          EXPECT_EQ(agg.batch, 1);
          EXPECT_EQ(agg.batch_target_calls, want.stats.target_calls) << what;
          EXPECT_EQ(agg.batch_draft_calls, want.stats.draft_calls) << what;
          ASSERT_EQ(agg.per_sequence.size(), 1u);
          EXPECT_EQ(agg.generated_tokens, want.stats.generated_tokens) << what;
        }
      }
}

// The batch's aggregate: per-sequence entries are the results' stats, sums add up, one
// target call per step over the live sequences, draft positions batched.
TEST(BatchDecoding, AggregateAddsUp) {
  const LoadedModel target = Synthetic(1);
  const auto prompts = Prompts(target.model->config.vocab_size);
  for (const auto& [what, o] : Configs()) {
    auto dec = MakeDecoder(target, o);
    auto state = dec->NewState();
    GenerationStats agg;
    const std::vector<GenerationResult> res = dec->GenerateBatch(prompts, *state, agg);
    EXPECT_EQ(agg.batch, 5) << what;
    ASSERT_EQ(agg.per_sequence.size(), 5u) << what;
    int generated = 0, calls = 0, max_calls = 0, draft_calls = 0, max_draft_calls = 0;
    int64_t drafted = 0, accepted = 0;
    double first = 0;
    for (int i = 0; i < 5; ++i) {
      const GenerationStats& s = res[i].stats;
      const SequenceStats& q = agg.per_sequence[i];
      EXPECT_EQ(q.generated_tokens, int(res[i].tokens.size())) << what;
      EXPECT_EQ(q.generated_tokens, s.generated_tokens) << what;
      EXPECT_EQ(q.prompt_tokens, int(prompts[i].size())) << what;
      EXPECT_EQ(q.target_calls, s.target_calls) << what;
      EXPECT_EQ(q.drafted, s.drafted) << what;
      EXPECT_EQ(q.accepted, s.accepted) << what;
      EXPECT_EQ(q.first_token_latency_s, s.first_token_latency_s) << what;
      EXPECT_LE(s.first_token_latency_s, agg.total_s) << what;
      generated += q.generated_tokens, calls += q.target_calls, drafted += q.drafted, accepted += q.accepted;
      max_calls = std::max(max_calls, q.target_calls);
      draft_calls += s.draft_calls, max_draft_calls = std::max(max_draft_calls, s.draft_calls);
      first += q.first_token_latency_s;
    }
    EXPECT_EQ(agg.generated_tokens, generated) << what;
    EXPECT_EQ(agg.target_calls, calls) << what;
    EXPECT_EQ(agg.drafted, drafted) << what;
    EXPECT_EQ(agg.accepted, accepted) << what;
    // Every step runs one call over its live sequences: as many as the longest-lived took.
    EXPECT_EQ(agg.batch_target_calls, max_calls) << what;
    EXPECT_LT(agg.batch_target_calls, calls) << what;
    EXPECT_NEAR(agg.first_token_latency_s, first / 5, 1e-12) << what;
    EXPECT_NEAR(agg.tokens_per_s, generated / (agg.total_s - agg.prefill_s), 1e-9 * agg.tokens_per_s) << what;
    EXPECT_GE(agg.total_s, agg.prefill_s + agg.draft_s + agg.verify_s - 1e-9) << what;
    // A model's chain drafts each position of every drafting sequence in one call.
    if (what == "q4_0" || what == "q8_0" || what == "early exit L=1") {
      EXPECT_GE(agg.batch_draft_calls, max_draft_calls) << what;
      EXPECT_LT(agg.batch_draft_calls, draft_calls) << what;
    } else {
      EXPECT_EQ(agg.batch_draft_calls, draft_calls) << what;  // per sequence (or none)
    }
  }
}

// Replayed alpha = 0.8 over a batch: the batch's sequences share the run's stratified
// stream, so over all their full steps each position's accepted count stays within 3/4 of
// its visits times the rate, and the realised tau is Leviathan's.
TEST(BatchDecoding, ReplayedAlphaRealisesItsRateOverTheBatch) {
  const LoadedModel target = Synthetic(1);
  std::vector<std::vector<int>> prompts = Prompts(target.model->config.vocab_size);
  prompts.erase(prompts.begin() + 3);  // the long one: few full steps
  DecoderOptions o = Ar();
  o.max_new_tokens = 48;
  o.kind = DecoderKind::Speculative;
  o.k = 4;
  o.draft = DraftSpec::Make(TargetDraft{0, QType::Q4_0});
  o.acceptance_source = ParseAcceptanceSource("alpha=0.8", "test");
  auto dec = MakeDecoder(target, o);
  auto state = dec->NewState();
  std::vector<int64_t> visits(4, 0), accepted(4, 0);
  double emitted = 0, steps = 0;
  for (int round = 0; round < 2; ++round) {
    GenerationStats agg;
    for (const GenerationResult& r : dec->GenerateBatch(prompts, *state, agg))
      for (size_t j = 0; j < r.stats.k_per_step.size(); ++j) {
        if (r.stats.k_per_step[j] != 4) continue;
        const int a = r.stats.accepted_per_step[j];
        for (int i = 0; i <= std::min(a, 3); ++i) ++visits[i];
        for (int i = 0; i < a; ++i) ++accepted[i];
        emitted += a + 1, steps += 1;
      }
    for (int i = 0; i < 4; ++i)
      EXPECT_LT(std::abs(double(accepted[i]) - 0.8 * double(visits[i])), 0.75) << "position " << i;
  }
  EXPECT_GE(steps, 40);
  const double tau = (1 - std::pow(0.8, 5)) / (1 - 0.8);
  EXPECT_NEAR(emitted / steps, tau, 0.03 * tau);
}

// Replaying a trace, sequence b of a batch replays the run's generation g + b: the batch
// gives what B generations one after another give, step for step.
TEST(BatchDecoding, ReplayedTraceGivesEachSequenceItsGeneration) {
  const LoadedModel target = Synthetic(1);
  auto traces = std::make_shared<std::vector<AcceptanceTrace>>();
  for (int g = 0; g < 3; ++g) {
    AcceptanceTrace t;
    for (int i = 0; i < 12; ++i) t.push_back({2 + (g + i) % 3, (g * 5 + i) % 3, {}});
    traces->push_back(t);
  }
  DecoderOptions o = Ar();
  o.kind = DecoderKind::Speculative;
  o.draft = DraftSpec::Make(TargetDraft{0, QType::Q4_0});
  o.acceptance_source = ParseAcceptanceSource("trace=test.jsonl", "test");
  o.acceptance_source.traces = traces;
  auto dec = MakeDecoder(target, o);
  const auto prompts = Prompts(target.model->config.vocab_size);
  auto batch_run = dec->NewState(), one_run = dec->NewState();
  for (int round = 0; round < 2; ++round) {  // the run's generation count carries on
    GenerationStats agg;
    const std::vector<GenerationResult> got = dec->GenerateBatch(prompts, *batch_run, agg);
    for (size_t b = 0; b < prompts.size(); ++b) {
      const GenerationResult want = dec->Generate(prompts[b], *one_run);
      ExpectSameGeneration(got[b], want, "round " + std::to_string(round) + " sequence " + std::to_string(b));
    }
    const AcceptanceTrace& t = (*traces)[(round * prompts.size() + 1) % 3];  // sequence 1's
    EXPECT_EQ(got[1].stats.k_per_step.at(0), t[0].k);
    EXPECT_EQ(got[1].stats.accepted_per_step.at(0), t[0].accepted);
  }
}

// Sampling: over many seeds, the first token of sequences 0, 1 and 2 of a batch (two
// different prompts) follows the target's p at that prompt, for a separate-weights draft
// (many rejections) and a q4_0 self-draft.
TEST(BatchDecoding, BatchedSpeculativeSamplingKeepsTheTargetDistribution) {
  Model tm = MakeSyntheticModel(TinyTestConfig(), 1);
  float* w = reinterpret_cast<float*>(tm.output.data.data());  // peaked p: informative bins
  for (size_t i = 0; i < tm.output.bytes() / sizeof(float); ++i) w[i] *= 6.0f;
  const LoadedModel target{"sharpened", std::make_shared<const Model>(std::move(tm)), nullptr};
  const std::vector<std::vector<int>> prompts{{1, 17, 42, 99}, {1, 5, 60, 33, 71, 8}, {1, 17, 42, 99}};
  SamplingParams sp;
  sp.temperature = 1.0f;
  std::vector<std::vector<double>> p;  // [prompt] the target's p after it
  for (const auto& pr : prompts) {
    KVCache cache(target.model->config);
    std::vector<float> probs;
    ComputeProbs(Forward(testing::Serial(), *target.model, pr, 0, cache, false), sp, probs);
    p.emplace_back(probs.begin(), probs.end());
    EXPECT_LT(*std::max_element(probs.begin(), probs.end()), 0.9);  // not nearly deterministic
  }
  const ModelDraft other{std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), 2)), 0, "seed-2"};
  const ModelDraft q4{std::make_shared<const Model>(QuantizeModel(*target.model, QType::Q4_0)), 0, "q4_0"};
  for (const ModelDraft& draft : {other, q4}) {
    DecoderOptions o = Ar();
    o.kind = DecoderKind::Speculative;
    o.k = 4;
    o.max_new_tokens = 5;
    o.stop_at_eos = false;
    o.sampling = sp;
    std::vector<std::vector<int>> counts(prompts.size(), std::vector<int>(p[0].size()));
    for (int s = 0; s < 3000; ++s) {
      o.sampling.seed = 5000 + s;
      auto dec = MakeSpeculativeDecoder(target, draft, o);
      auto state = dec->NewState();
      GenerationStats agg;
      const std::vector<GenerationResult> r = dec->GenerateBatch(prompts, *state, agg);
      for (size_t i = 0; i < prompts.size(); ++i) ++counts[i][r[i].tokens.at(0)];
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      const auto [stat, df] = ChiSquare(counts[i], p[i]);
      EXPECT_GE(df, 5);
      EXPECT_LT(stat, Critical(df)) << draft.name << " sequence " << i << " df " << df;
    }
    // Sequences 0 and 2 share a prompt but not a random stream.
    EXPECT_NE(counts[0], counts[2]) << draft.name;
  }
}

// A decoder without a batched loop says so.
TEST(BatchDecoding, DecoderWithoutBatchLoopFails) {
  struct Plain : Decoder {
    DecoderOptions o;
    using Decoder::Generate;
    GenerationResult Generate(std::span<const int>, DecoderState&, const TokenCallback&) const override { return {}; }
    const DecoderOptions& options() const override { return o; }
    CallCosts MeasureCallCosts(std::span<const int>, int, int, const DecoderState&, int) const override { return {}; }
  } plain;
  auto state = plain.NewState();
  GenerationStats agg;
  testing::ExpectError([&] { plain.GenerateBatch(std::vector<std::vector<int>>{{1}}, *state, agg); },
                       {"decoder", "batch"});
}

}  // namespace
}  // namespace specsweep
