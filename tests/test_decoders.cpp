// Decoders: greedy speculative decoding must reproduce autoregressive output token for
// token (every draft kind, K, policy and target quantization), stats must be consistent,
// and bad options must fail with one-line errors.
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoders/decoder.h"
#include "decoders/draft_policy.h"
#include "decoders/settings.h"
#include "harness/sweep/experiment.h"
#include "base/error.h"
#include "models/forward.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::SharedModelsDir;

std::vector<std::string> Prompts() { return testing::TinyStoriesPrompts(); }

LoadedModel Synthetic(const ModelConfig& c, uint64_t seed, const std::string& name) {
  return LoadedModel{name, std::make_shared<const Model>(MakeSyntheticModel(c, seed)), nullptr};
}

// Prompt ids: the tokenizer when there is one, else BOS + bytes folded into the vocab
// (synthetic models have no tokenizer; any ids exercise the decoders the same way).
std::vector<int> Encode(const LoadedModel& m, const std::string& text) {
  if (m.tokenizer) return m.tokenizer->Encode(text, true);
  const ModelConfig& c = m.model->config;
  std::vector<int> ids{c.bos_id};
  for (size_t i = 0; i < text.size() && i < 12; ++i)
    ids.push_back(3 + static_cast<unsigned char>(text[i]) % (c.vocab_size - 3));
  return ids;
}

LoadedModel Load(const std::string& name) {
  if (name == "synthetic") return Synthetic(TinyTestConfig(), 1, "synthetic");
  return LoadModel(name, SharedModelsDir());
}

// A separate same-vocabulary draft: random weights, a different shape and seed. It
// agrees with the target rarely, so rejection paths are exercised heavily.
LoadedModel SeparateDraft(const ModelConfig& target) {
  ModelConfig c = TinyTestConfig();
  c.vocab_size = target.vocab_size;
  c.max_seq_len = target.max_seq_len;
  c.n_layers = 1;
  c.bos_id = target.bos_id;
  c.eos_id = target.eos_id;
  return Synthetic(c, 99, "separate-synthetic");
}

struct DraftKind {
  std::string label;
  DecoderKind kind;
  int layers = 0;
  std::optional<QType> quant;
  bool separate = false;
};

std::vector<DraftKind> DraftKinds(int n_layers) {
  std::vector<DraftKind> v{{"self-spec q4_0", DecoderKind::Speculative, 0, QType::Q4_0},
                           {"self-spec q8_0", DecoderKind::Speculative, 0, QType::Q8_0},
                           {"separate draft", DecoderKind::Speculative, 0, std::nullopt, true}};
  for (int l = 1; l <= n_layers; ++l)
    v.push_back({"early exit L=" + std::to_string(l), DecoderKind::Speculative, l, std::nullopt});
  return v;
}

constexpr int kGenTokens = 24;

// (model, target weight format, KV cache type)
class Lossless : public ::testing::TestWithParam<std::tuple<std::string, std::string, std::string>> {};

TEST_P(Lossless, GreedySpeculativeEqualsAutoregressive) {
  const auto& [model_name, quant_name, kv_name] = GetParam();
  if (model_name != "synthetic" && SharedModelsDir().empty()) GTEST_SKIP() << "no shared models";
  LoadedModel base = Load(model_name);
  const QType tq = ParseQType(quant_name);
  LoadedModel target = tq == QType::F32 ? base : WithQuant(base, tq);
  const LoadedModel separate = SeparateDraft(target.model->config);
  const auto prompts = Prompts();
  ASSERT_GE(prompts.size(), 20u);

  DecoderOptions ar;
  ar.max_new_tokens = kGenTokens;
  ar.kv_type = ParseKvType(kv_name);  // the speculative decoders copy it below
  auto ar_dec = MakeDecoder(target, ar);
  std::vector<std::vector<int>> prompt_ids, expected;
  for (const auto& p : prompts) {
    prompt_ids.push_back(Encode(target, p));
    expected.push_back(ar_dec->Generate(prompt_ids.back()).tokens);
  }
  // A real model must produce something: guards against a vacuous comparison.
  ASSERT_FALSE(expected[0].empty());

  int64_t drafted = 0, accepted = 0;
  for (const DraftKind& dk : DraftKinds(target.model->config.n_layers)) {
    for (int k : {1, 2, 4, 8}) {
      for (KPolicy pol : {KPolicy::Constant, KPolicy::Heuristic, KPolicy::Threshold, KPolicy::Adaptive}) {
        DecoderOptions o = ar;
        o.kind = dk.kind;
        o.k = k;
        o.k_policy = pol;
        o.draft = DraftSpec::Make(TargetDraft{dk.layers, dk.quant});
        o.draft_p_min = 0.5f;
        auto dec = dk.separate ? MakeDecoder(target, o, separate) : MakeDecoder(target, o);
        for (size_t i = 0; i < prompts.size(); ++i) {
          GenerationResult r = dec->Generate(prompt_ids[i]);
          ASSERT_EQ(r.tokens, expected[i]) << model_name << "@" << quant_name << " kv " << kv_name << " " << dk.label
                                           << " K=" << k << " policy=" << KPolicyName(pol) << " prompt: " << prompts[i];
          drafted += r.stats.drafted;
          accepted += r.stats.accepted;
        }
      }
    }
  }
  // Both outcomes of verification must have happened, or the comparison proves little.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
}

std::string LosslessName(const ::testing::TestParamInfo<Lossless::ParamType>& info) {
  std::string s = std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_kv" + std::get<2>(info.param);
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}
INSTANTIATE_TEST_SUITE_P(All, Lossless,
                         ::testing::Combine(::testing::Values("synthetic", "tinystories-260k", "tinystories-656k"),
                                            ::testing::Values("f32", "f16", "bf16", "q8_0", "q4_0"),
                                            ::testing::Values("f32")),
                         LosslessName);
// The half KV cache changes the target's own output, never the equality (260K is
// left out: its cases take 15-20 s each).
INSTANTIATE_TEST_SUITE_P(HalfKv, Lossless,
                         ::testing::Combine(::testing::Values("synthetic", "tinystories-656k"),
                                            ::testing::Values("f32", "q4_0"), ::testing::Values("f16")),
                         LosslessName);

// Invariants every run must satisfy, greedy and sampled, for each decoder kind.
void CheckStats(const GenerationResult& r, const std::vector<int>& streamed, int max_k, bool speculative) {
  const GenerationStats& s = r.stats;
  EXPECT_EQ(s.generated_tokens, static_cast<int>(r.tokens.size()));
  EXPECT_EQ(streamed, r.tokens);  // sum of emitted batches == generated
  EXPECT_LE(s.accepted, s.drafted);
  EXPECT_GE(s.accepted, 0);
  EXPECT_EQ(std::accumulate(s.drafted_at_pos.begin(), s.drafted_at_pos.end(), int64_t{0}), s.drafted);
  EXPECT_EQ(std::accumulate(s.accepted_at_pos.begin(), s.accepted_at_pos.end(), int64_t{0}), s.accepted);
  for (size_t i = 0; i < s.accepted_at_pos.size(); ++i) {
    EXPECT_LE(s.accepted_at_pos[i], s.drafted_at_pos[i]);
    // Acceptance is a prefix: position i+2 accepted implies i+1 accepted.
    if (i > 0) {
      EXPECT_LE(s.accepted_at_pos[i], s.accepted_at_pos[i - 1]);
    }
  }
  EXPECT_EQ(std::accumulate(s.k_per_step.begin(), s.k_per_step.end(), int64_t{0}), s.drafted);
  if (speculative) {
    EXPECT_EQ(static_cast<int>(s.k_per_step.size()), s.target_calls);
    for (int k : s.k_per_step) EXPECT_LE(k, max_k);
    EXPECT_GE(s.mean_accepted_length(), 1.0);
    EXPECT_LE(s.mean_accepted_length(), max_k + 1.0);
    EXPECT_EQ(s.generated_tokens, s.target_calls + s.accepted);  // a + 1 tokens per step
  } else {
    EXPECT_EQ(s.target_calls, s.generated_tokens);  // the prefill yields the first token: a call like the rest
    EXPECT_EQ(s.drafted, 0);
  }
  EXPECT_GT(s.total_s, 0.0);
  for (double t : {s.prefill_s, s.draft_s, s.verify_s, s.other_s}) EXPECT_GE(t, 0.0);
  EXPECT_LE(s.prefill_s + s.draft_s + s.verify_s, s.total_s * 1.0001);
  EXPECT_GT(s.first_token_latency_s, 0.0);
  EXPECT_LE(s.first_token_latency_s, s.total_s);
  EXPECT_GT(s.mean_next_token_latency_s, 0.0);
  EXPECT_GT(s.tokens_per_s, 0.0);
}

TEST(Decoders, StatsInvariants) {
  LoadedModel t = Synthetic(TinyTestConfig(), 1, "synthetic");
  const std::vector<int> prompt{1, 5, 9, 14, 20};
  for (float temp : {0.0f, 1.0f}) {
    for (auto [kind, layers, pol, k] :
         std::vector<std::tuple<DecoderKind, int, KPolicy, int>>{{DecoderKind::Autoregressive, 0, KPolicy::Constant, 4},
                                                                 {DecoderKind::Speculative, 1, KPolicy::Constant, 4},
                                                                 {DecoderKind::Speculative, 1, KPolicy::Heuristic, 2},
                                                                 {DecoderKind::Speculative, 1, KPolicy::Threshold, 5},
                                                                 {DecoderKind::Speculative, 1, KPolicy::Adaptive, 4}}) {
      DecoderOptions o;
      o.kind = kind;
      o.draft = DraftSpec::Make(TargetDraft{layers, std::nullopt});
      o.k_policy = pol;
      o.k = k;
      o.max_new_tokens = 40;
      o.stop_at_eos = false;
      o.sampling.temperature = temp;
      o.sampling.seed = 7;
      auto dec = MakeDecoder(t, o);
      std::vector<int> streamed;
      GenerationResult r = dec->Generate(prompt, [&](std::span<const int> toks) {
        EXPECT_FALSE(toks.empty());
        streamed.insert(streamed.end(), toks.begin(), toks.end());
      });
      SCOPED_TRACE(std::string(DecoderKindName(kind)) + " " + std::string(KPolicyName(pol)) +
                   " temp=" + std::to_string(temp));
      EXPECT_EQ(r.stats.generated_tokens, 40);
      EXPECT_EQ(r.stats.prompt_tokens, 5);
      EXPECT_FALSE(r.stats.stopped_at_eos);
      // Heuristic K grows by 2 per fully accepted step; bound it by the step count.
      const int max_k = pol == KPolicy::Heuristic ? k + 2 * 40 : k;  // adaptive too: k bounds it
      CheckStats(r, streamed, max_k, kind != DecoderKind::Autoregressive);
      if (pol == KPolicy::Adaptive) {
        // Adaptive drafts at least kMinSteps unless max_new_tokens clips the step: K is
        // then <= remaining - 1 < kMinSteps, which only the last kMinSteps steps can be.
        const auto& ks = r.stats.k_per_step;
        for (size_t i = 0; i + AdaptivePolicy::kMinSteps < ks.size(); ++i)
          EXPECT_GE(ks[i], AdaptivePolicy::kMinSteps) << "step " << i;
      }
    }
  }
}

TEST(Decoders, SamplingIsDeterministicPerSeed) {
  LoadedModel t = Synthetic(TinyTestConfig(), 1, "synthetic");
  const std::vector<int> prompt{1, 7, 3};
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.draft = DraftSpec::Make(TargetDraft{1, std::nullopt});
  o.max_new_tokens = 30;
  o.stop_at_eos = false;
  o.sampling.temperature = 1.0f;
  o.sampling.top_k = 40;
  o.sampling.top_p = 0.9f;
  o.sampling.seed = 3;
  auto a = MakeDecoder(t, o)->Generate(prompt).tokens;
  EXPECT_EQ(a, MakeDecoder(t, o)->Generate(prompt).tokens);
  o.sampling.seed = 4;
  EXPECT_NE(a, MakeDecoder(t, o)->Generate(prompt).tokens);
}

TEST(Decoders, StopsAtEosAndContext) {
  LoadedModel t = Synthetic(TinyTestConfig(), 1, "synthetic");
  // Make the greedy continuation of this prompt EOS: whatever AR emits first becomes EOS.
  const std::vector<int> prompt{1, 11, 12};
  DecoderOptions o;
  o.max_new_tokens = 1;
  o.stop_at_eos = false;
  const int first = MakeDecoder(t, o)->Generate(prompt).tokens.at(0);
  LoadedModel t2{"synthetic-eos", std::make_shared<const Model>([&] {
                   Model m = MakeSyntheticModel(TinyTestConfig(), 1);
                   m.config.eos_id = first;
                   return m;
                 }()),
                 nullptr};
  for (DecoderKind kind : {DecoderKind::Autoregressive, DecoderKind::Speculative}) {
    DecoderOptions e;
    e.kind = kind;
    e.draft = DraftSpec::Make(TargetDraft{1, std::nullopt});
    e.max_new_tokens = 10;
    GenerationResult r = MakeDecoder(t2, e)->Generate(prompt);
    EXPECT_TRUE(r.tokens.empty()) << DecoderKindName(kind);
    EXPECT_TRUE(r.stats.stopped_at_eos);
  }
  // Context: the sequence never exceeds max_seq_len, for AR and speculative alike.
  std::vector<int> long_prompt(TinyTestConfig().max_seq_len - 5, 9);
  for (DecoderKind kind : {DecoderKind::Autoregressive, DecoderKind::Speculative}) {
    DecoderOptions e;
    e.kind = kind;
    e.draft = DraftSpec::Make(TargetDraft{1, std::nullopt});
    e.k = 8;
    e.stop_at_eos = false;
    e.max_new_tokens = 100;
    GenerationResult r = MakeDecoder(t, e)->Generate(long_prompt);
    EXPECT_EQ(r.tokens.size(), 5u) << DecoderKindName(kind);
  }
}

TEST(Decoders, Policies) {
  auto h = MakeHeuristicPolicy(4);
  EXPECT_EQ(h->NextK(), 4);
  h->Update(4, 4);
  EXPECT_EQ(h->NextK(), 6);
  h->Update(6, 2);
  EXPECT_EQ(h->NextK(), 5);
  for (int i = 0; i < 10; ++i) h->Update(1, 0);
  EXPECT_EQ(h->NextK(), 1);

  auto th = MakeThresholdPolicy(5, 0.6f);
  EXPECT_EQ(th->OnDraft(1, 0.7f), DraftAction::Keep);
  EXPECT_EQ(th->OnDraft(2, 0.5f), DraftAction::DropAndStop);

  // Only the policies that read the draft's confidence make greedy decoding compute it;
  // the others ignore any value.
  EXPECT_TRUE(th->UsesTopProb());
  EXPECT_FALSE(h->UsesTopProb());
  EXPECT_FALSE(MakeConstantPolicy(3)->UsesTopProb());
  for (float p : {0.0f, 0.5f, 1.0f}) {
    EXPECT_EQ(h->OnDraft(1, p), DraftAction::Keep);
    EXPECT_EQ(MakeConstantPolicy(3)->OnDraft(1, p), DraftAction::Keep);
  }

  AdaptivePolicy a(8);
  EXPECT_TRUE(a.UsesTopProb());
  EXPECT_EQ(a.NextK(), 8);
  EXPECT_EQ(a.OnDraft(2, 0.1f), DraftAction::Keep);  // below th but fewer than 3 drafted
  EXPECT_EQ(a.OnDraft(3, 0.1f), DraftAction::KeepAndStop);
  EXPECT_EQ(a.OnDraft(3, 0.9f), DraftAction::Keep);
  // matchness = 0.5*0 + 0.5*1 = 0.5 < 0.9 -> th_new = 0.81 -> th = 0.9*0.8 + 0.1*0.81
  a.Update(4, 4);
  EXPECT_NEAR(a.matchness(), 0.5, 1e-12);
  EXPECT_NEAR(a.threshold(), 0.801, 1e-12);
  // Two more full steps of 4: matchness 0.75, 0.875 (< 0.9, th rises), then 0.9375 with
  // drafted != 8: th falls by 0.001.
  a.Update(4, 4);
  a.Update(4, 4);
  const double th3 = a.threshold();
  EXPECT_NEAR(th3, 0.803, 1e-12);
  a.Update(4, 4);
  EXPECT_NEAR(a.threshold(), th3 - 0.001, 1e-12);
  // High matchness with a full-length step (8 drafted) keeps th.
  a.Update(8, 8);
  const double th5 = a.threshold();
  EXPECT_NEAR(th5, th3 - 0.001, 1e-12);
}

TEST(Decoders, ThresholdPolicyShortensSteps) {
  LoadedModel t = Synthetic(TinyTestConfig(), 1, "synthetic");
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.draft = DraftSpec::Make(TargetDraft{1, std::nullopt});
  o.k = 6;
  o.k_policy = KPolicy::Threshold;
  o.draft_p_min = 0.2f;
  o.max_new_tokens = 40;
  o.stop_at_eos = false;
  GenerationResult r = MakeDecoder(t, o)->Generate(std::vector<int>{1, 4, 8});
  int shorter = 0;
  for (size_t i = 0; i + 1 < r.stats.k_per_step.size(); ++i) shorter += r.stats.k_per_step[i] < 6;
  EXPECT_GT(shorter, 0);  // a near-uniform random draft is rarely confident
}

using testing::ErrorOf;

TEST(Decoders, BadInputs) {
  LoadedModel t = Synthetic(TinyTestConfig(), 1, "synthetic");
  const int ctx = TinyTestConfig().max_seq_len, nl = TinyTestConfig().n_layers;
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.draft = DraftSpec::Make(TargetDraft{1, std::nullopt});
  auto err = [&](DecoderOptions x) { return ErrorOf([&] { MakeDecoder(t, x); }); };
  auto with = [&](auto f) {
    DecoderOptions x = o;
    f(x);
    return err(x);
  };
  EXPECT_NE(with([](auto& x) { x.k = 0; }).find("k: must be in [1, 127]"), std::string::npos);
  EXPECT_NE(with([&](auto& x) { x.k = ctx; }).find("k:"), std::string::npos);
  EXPECT_EQ(with([&](auto& x) { x.k = ctx - 1; }), "");
  EXPECT_NE(with([](auto& x) {
              x.draft = DraftSpec::Make(TargetDraft{-1, std::nullopt});
            }).find("draft.layers"),
            std::string::npos);
  EXPECT_NE(with([&](auto& x) {
              x.draft = DraftSpec::Make(TargetDraft{nl + 1, std::nullopt});
            }).find("draft.layers: must be in [1, 2]"),
            std::string::npos);
  EXPECT_NE(with([](auto& x) { x.draft_p_min = 0.0f; }).find("draft_p_min"), std::string::npos);
  EXPECT_NE(with([](auto& x) { x.draft_p_min = 1.0f; }).find("draft_p_min"), std::string::npos);
  EXPECT_NE(with([](auto& x) { x.draft = DraftSpec{}; }).find("speculative decoding needs a draft"), std::string::npos);
  EXPECT_NE(with([](auto& x) { x.sampling.top_p = 0.0f; }).find("top_p"), std::string::npos);
  EXPECT_NE(with([](auto& x) {
              x.draft = DraftSpec::Make(TargetDraft{5, QType::Q4_0});
            }).find("draft.layers"),
            std::string::npos);

  ModelConfig small = TinyTestConfig();
  small.vocab_size = 64;
  LoadedModel other = Synthetic(small, 2, "other");
  const std::string mismatch = ErrorOf([&] { MakeDecoder(t, o, other); });
  EXPECT_NE(mismatch.find("vocab_size 64"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("128"), std::string::npos) << mismatch;

  auto dec = MakeDecoder(t, o);
  EXPECT_NE(ErrorOf([&] { dec->Generate(std::vector<int>(ctx + 1, 5)); }).find("longer than the context"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { dec->Generate(std::vector<int>{}); }).find("prompt: empty"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { dec->Generate(std::vector<int>{1, 500}); }).find("outside vocabulary"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseKPolicy("fast"); }).find("k_policy"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseDecoderKind("beam"); }).find("unknown decoder 'beam'"), std::string::npos);
  for (const std::string& e : {mismatch}) EXPECT_EQ(e.find('\n'), std::string::npos);
}

// --- CLI (real models only: the CLI loads models by name) ---

TEST(GenerateCli, GreedyTextAndSpeculativeAgree) {
  if (SharedModelsDir().empty()) GTEST_SKIP() << "no shared models";
  const std::string m = SharedModelsDir();
  auto ar = testing::RunCli(
      {"generate", "--models", m, "--model", "tinystories-260k", "--prompt", "Once upon a time", "-n", "20"});
  ASSERT_EQ(ar.exit_code, 0) << ar.err;
  EXPECT_NE(ar.out.find("Once upon a time, there was a little girl named Lily"), std::string::npos) << ar.out;
  EXPECT_NE(ar.out.find("tokens/s"), std::string::npos);
  auto ss = testing::RunCli({"generate", "--models", m, "--model", "tinystories-260k", "--prompt", "Once upon a time",
                             "-n", "20", "--decoder", "self-spec", "--json"});
  ASSERT_EQ(ss.exit_code, 0) << ss.err;
  auto j = nlohmann::json::parse(ss.out);
  EXPECT_EQ(j["decoder"], "speculative");  // self-spec is its alias
  EXPECT_EQ(j["speculative"]["draft"], "q4_0");
  EXPECT_EQ(j["generated_tokens"], 20);
  EXPECT_NE(j["text"].get<std::string>().find("there was a little girl named Lily"), std::string::npos);
  EXPECT_GT(j["stats"]["drafted"].get<int>(), 0);
}

TEST(GenerateCli, Errors) {
  if (SharedModelsDir().empty()) GTEST_SKIP() << "no shared models";
  const std::string m = SharedModelsDir();
  std::string long_prompt;
  for (int i = 0; i < 600; ++i) long_prompt += "the dog ran. ";
  auto r = testing::RunCli({"generate", "--models", m, "--model", "tinystories-260k", "--prompt", long_prompt});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("longer than the context"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // A draft with another tokenizer bridges through text, greedy only (tests/test_drafts.cpp).
  r = testing::RunCli({"generate", "--models", m, "--model", "tinystories-260k", "--prompt", "Hi", "--decoder",
                       "assisted", "--draft-model", "tinystories-656k", "--temp", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("another tokenizer"), std::string::npos) << r.err;
}

// The caller gives a decoder its drafts (DecoderEnv::drafts): a draft named by file and
// a quantized copy come from it, and without one a named draft is an Error.
struct CountingDrafts : DraftModels {
  LoadedModel draft;
  mutable int loads = 0, quantized = 0;
  LoadedModel Load(const std::string& name) const override {
    ++loads;
    LoadedModel d = draft;
    d.name = name;
    return d;
  }
  std::shared_ptr<const Model> Quantized(const std::shared_ptr<const Model>& m, QType t) const override {
    ++quantized;
    return std::make_shared<const Model>(QuantizeModel(*m, t));
  }
};

TEST(MakeDecoder, DraftsComeFromTheCaller) {
  const LoadedModel target = Synthetic(TinyTestConfig(), 1, "target");
  DecoderOptions ar;
  ar.max_new_tokens = 8;
  const std::vector<int> prompt = {1, 4, 9};
  const std::vector<int> expected = MakeDecoder(target, ar)->Generate(prompt).tokens;
  DecoderOptions o = ar;
  o.kind = DecoderKind::Speculative;
  o.k = 2;
  o.draft = ParseDraftSpec("model=tiny-draft", "test");
  testing::ExpectError([&] { MakeDecoder(target, o); }, {"'tiny-draft'", "no draft models"});
  CountingDrafts drafts;
  drafts.draft = Synthetic(TinyTestConfig(), 2, "");
  EXPECT_EQ(MakeDecoder(target, o, DecoderEnv{Runtime{}, &drafts})->Generate(prompt).tokens, expected);
  EXPECT_EQ(drafts.loads, 1);
  EXPECT_EQ(drafts.quantized, 0);
  o.draft = ParseDraftSpec("model=tiny-draft+q8_0", "test");
  EXPECT_EQ(MakeDecoder(target, o, DecoderEnv{Runtime{}, &drafts})->Generate(prompt).tokens, expected);
  EXPECT_EQ(drafts.quantized, 1);
}

// A decoder runs on the runtime it is given: any thread count gives the same tokens.
TEST(MakeDecoder, RuntimeChangesNoToken) {
  const LoadedModel target = Synthetic(TinyTestConfig(), 3, "target");
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.k = 3;
  o.max_new_tokens = 12;
  o.draft = ParseDraftSpec("q4_0", "test");
  const std::vector<int> prompt = {1, 7, 2};
  const std::vector<int> one = MakeDecoder(target, o)->Generate(prompt).tokens;
  DecoderEnv full{testing::Threads(2, TeamPolicy::kFull)};
  EXPECT_EQ(MakeDecoder(target, o, full)->Generate(prompt).tokens, one);
}

}  // namespace
}  // namespace specsweep

namespace specsweep {
namespace {

// draft_kv_type, a setting carried whole by decoders/settings.h: its own KV cache type for
// the draft model only; lossless (the target verifies), and named in keys, names and params
// only when given, so older records keep their keys.
TEST(Decoders, DraftKvTypeIsLosslessAndNamedOnlyWhenGiven) {
  LoadedModel t = Synthetic(TinyTestConfig(), 1, "synthetic");
  const std::vector<int> prompt{1, 5, 9};
  DecoderOptions ar;
  ar.max_new_tokens = 24;
  ar.stop_at_eos = false;
  const std::vector<int> expected = MakeDecoder(t, ar)->Generate(prompt).tokens;
  DecoderOptions o = ar;
  o.kind = DecoderKind::Speculative;
  o.draft = DraftSpec::Make(TargetDraft{1, std::nullopt});
  const DecoderSetting& s = Setting("draft_kv_type");
  s.parse(o, "f16", "--draft-kv-type");
  EXPECT_EQ(o.DraftKvType(), KvType::F16);
  EXPECT_EQ(o.kv_type, KvType::F32);
  EXPECT_EQ(MakeDecoder(t, o)->Generate(prompt).tokens, expected);
  testing::ExpectError([&] { s.parse(o, "q8", "x"); }, {"x: 'q8' is not a KV cache type (f32, f16)"});

  Point p;
  p.model = "m";
  p.options = o;
  EXPECT_NE(p.Key().find(";draft_kv_type=f16"), std::string::npos) << p.Key();
  EXPECT_NE(p.Name().find("/draft_kv_type=f16"), std::string::npos) << p.Name();
  EXPECT_EQ(p.ParamsJson()["draft_kv_type"], "f16");
  EXPECT_EQ(PointFromParams(p.ParamsJson(), "t").Options().DraftKvType(), KvType::F16);
  EXPECT_EQ(p.Baseline().Key().find("draft_kv_type"), std::string::npos);
  p.options.draft_kv_type.reset();
  EXPECT_EQ(p.Key().find("draft_kv_type"), std::string::npos);
  EXPECT_FALSE(p.ParamsJson().contains("draft_kv_type"));

  // An experiment axis of the same name.
  const std::string dir = testing::TempDir();
  testing::WriteFile(dir + "/p.txt", "a b\n");
  nlohmann::json doc = {{"name", "d"},
                        {"models", {dir + "/p.txt"}},
                        {"prompts", {{"file", dir + "/p.txt"}, {"count", 1}}},
                        {"sweep", {{"draft_kv_type", {"f32", "f16"}}}},
                        {"decoders", {"ar", {{"decoder", "speculative"}, {"draft", "layers=1"}}}}};
  const Experiment e = ParseExperiment(doc, dir + "/e.yaml");
  ASSERT_EQ(e.points.size(), 3u);  // the baseline, then the draft with each KV type
  EXPECT_EQ(e.points[1].Options().DraftKvType(), KvType::F32);
  EXPECT_EQ(e.points[2].Options().DraftKvType(), KvType::F16);
  doc["sweep"]["draft_kv_type"] = "f8";
  testing::ExpectError([&] { ParseExperiment(doc, dir + "/e.yaml"); },
                       {"e.yaml: sweep.draft_kv_type: 'f8' is not a KV cache type (f32, f16)"});
}

}  // namespace
}  // namespace specsweep
