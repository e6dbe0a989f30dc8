// Harness: experiment parsing and grid expansion, error messages of bad files, results
// aggregation math, the regression check, resume, passage cuts, CLI exit codes.
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "harness/report/load.h"
#include "harness/report/aggregate.h"
#include "harness/report/check.h"
#include "harness/sweep/experiment.h"
#include "harness/report/plot.h"
#include "harness/sweep/prompts.h"
#include "harness/store/results.h"
#include "harness/measure/draft_store.h"
#include "harness/pipeline.h"
#include "harness/store/sha256.h"
#include "harness/report/statistics.h"
#include "harness/report/table.h"
#include "base/error.h"
#include "models/gguf.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {
namespace {

using testing::ReadFile;
using testing::RunCli;
using testing::TempDir;
using testing::WriteFile;

// A tiny random-weight model as a GGUF file, so the harness runs without shared models.
struct Fixture {
  std::string dir, model, prompts;
};
const Fixture& Files() {
  static Fixture f = [] {
    Fixture x;
    x.dir = TempDir();
    x.model = x.dir + "/tiny.gguf";
    testing::WriteTinyGguf(x.model, 7);
    x.prompts = x.dir + "/prompts.txt";
    WriteFile(x.prompts, "Once upon a time\nThe dog ran\n\nA big red ball\n");
    return x;
  }();
  return f;
}

std::string WriteExp(const std::string& name, const std::string& body) {
  std::string p = Files().dir + "/" + name;
  WriteFile(p, body);
  return p;
}

// --------------------------------------------------------------------------- parsing

TEST(Experiment, ExpandsGridPerDecoderWithBaselinesFirst) {
  const auto& f = Files();
  std::string p = WriteExp("grid.yaml", R"(
name: grid
models: [")" + f.model + R"("]
prompts: {file: ")" + f.prompts + R"(", count: 2}
repetitions: 2
sweep:
  k: [2, 3]
  max_new_tokens: 8
decoders:
  - decoder: speculative
    draft: [layers=1, q8_0]
  - self-spec
)");
  Experiment e = LoadExperiment(p);
  EXPECT_EQ(e.name, "grid");
  EXPECT_EQ(e.repetitions, 2);
  EXPECT_EQ(e.prompts.count, 2);
  // 1 AR baseline (added, not listed) + 2 K x 2 drafts + 2 K self-spec (speculative, q4_0).
  ASSERT_EQ(e.points.size(), 7u);
  EXPECT_EQ(e.points[0].options.kind, DecoderKind::Autoregressive);
  EXPECT_EQ(e.points[0].options.k, 0);
  std::set<std::string> keys;
  int self_spec = 0;
  for (auto& pt : e.points) {
    EXPECT_TRUE(keys.insert(pt.Key()).second) << pt.Key();
    EXPECT_EQ(pt.options.max_new_tokens, 8);
    if (pt.speculative()) {
      EXPECT_EQ(pt.Baseline().Key(), e.points[0].Key());
    }
    if (pt.speculative()) {
      EXPECT_EQ(pt.options.kind, DecoderKind::Speculative);
    }
    if (pt.speculative() && pt.options.draft.Label() == "q4_0") ++self_spec;  // the self-spec default, made explicit
  }
  EXPECT_EQ(self_spec, 2);
  // The same experiment as JSON expands to the same keys.
  json doc = ReadYamlAsJson(p);
  std::string pj = WriteExp("grid.json", doc.dump());
  Experiment ej = LoadExperiment(pj);
  ASSERT_EQ(ej.points.size(), e.points.size());
  for (size_t i = 0; i < e.points.size(); ++i) EXPECT_EQ(ej.points[i].Key(), e.points[i].Key());
  // Params round-trip to the same point.
  for (auto& pt : e.points) EXPECT_EQ(PointFromParams(pt.ParamsJson(), "t").Key(), pt.Key());
}

TEST(Experiment, SamplingAxesAndDedup) {
  const auto& f = Files();
  std::string p = WriteExp("samp.yaml", R"(
name: samp
models: [")" + f.model + R"("]
prompts: {file: ")" + f.prompts + R"(", count: 1}
sweep:
  sampling: {temperature: [0, 0.8], seed: [1, 2]}
decoders: [ar, ar]
)");
  Experiment e = LoadExperiment(p);
  // Greedy ignores the seed (one point); temperature 0.8 gives one point per seed.
  EXPECT_EQ(e.points.size(), 3u);
}

// kv_type is an axis like any other; f32 points keep the keys they had before it existed,
// so committed baselines still match.
TEST(Experiment, KvTypeAxis) {
  const auto& f = Files();
  std::string p = WriteExp("kv.yaml", R"(
name: kv
models: [")" + f.model + R"("]
prompts: {file: ")" + f.prompts + R"(", count: 1}
sweep: {kv_type: [f32, f16], k: [2]}
decoders: [self-spec]
)");
  Experiment e = LoadExperiment(p);
  ASSERT_EQ(e.points.size(), 4u);  // a baseline and a self-spec point per KV type
  int f16_points = 0;
  for (const Point& pt : e.points) {
    EXPECT_EQ(pt.Baseline().options.kv_type, pt.options.kv_type);
    EXPECT_EQ(pt.Options().kv_type, pt.options.kv_type);
    EXPECT_EQ(PointFromParams(pt.ParamsJson(), "t").Key(), pt.Key());
    const bool has = pt.Key().find(";kv=f16") != std::string::npos;
    EXPECT_EQ(has, pt.options.kv_type == KvType::F16) << pt.Key();
    f16_points += pt.options.kv_type == KvType::F16;
  }
  EXPECT_EQ(f16_points, 2);
  // Records written before the field existed read back as f32.
  nlohmann::json old = e.points[0].ParamsJson();
  old.erase("kv_type");
  EXPECT_EQ(PointFromParams(old, "t").options.kv_type, KvType::F32);
}

TEST(DraftSpec, ParsesAndLabels) {
  EXPECT_EQ(ParseDraftSpec("q4_0", "t").Label(), "q4_0");
  EXPECT_EQ(ParseDraftSpec("layers=2+q8_0", "t").Label(), "layers=2+q8_0");
  EXPECT_EQ(ParseDraftSpec("layers=2+q8_0", "t").BaseLabel(), "layers=2");
  EXPECT_EQ(ParseDraftSpec("model=x", "t").model(), "x");
  EXPECT_EQ(ParseDraftSpec("self", "t").Label(), "self");
  EXPECT_THROW(ParseDraftSpec("layers=0", "t"), Error);
  EXPECT_THROW(ParseDraftSpec("q5_9", "t"), Error);
}

// Each bad file must give one line naming the file and the key.
void ExpectBad(const std::string& name, const std::string& body, const std::string& key) {
  std::string p = WriteExp(name, body);
  try {
    LoadExperiment(p);
    ADD_FAILURE() << name << ": no error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_NE(msg.find(key), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(Experiment, BadFilesNameFileAndKey) {
  const auto& f = Files();
  std::string head = "name: bad\nmodels: [\"" + f.model + "\"]\nprompts: {file: \"" + f.prompts + "\"}\n";
  ExpectBad("syntax.yaml", head + "sweep: {k: [2, 3\ndecoders: [ar]\n", "yaml");
  ExpectBad("unknown.yaml", head + "sweep: {kk: [2]}\ndecoders: [ar]\n", "sweep.kk");
  ExpectBad("unknown_top.yaml", head + "decoderz: [ar]\n", "decoderz");
  ExpectBad("type.yaml", head + "sweep: {k: [2, abc]}\ndecoders: [speculative]\n", "sweep.k[1]");
  ExpectBad("type2.yaml", head + "repetitions: many\ndecoders: [ar]\n", "repetitions");
  ExpectBad("empty.yaml", head + "sweep: {k: []}\ndecoders: [speculative]\n", "sweep.k");
  ExpectBad("range.yaml", head + "sweep: {max_new_tokens: [0]}\ndecoders: [ar]\n", "sweep.max_new_tokens[0]");
  // A missing model: looked for once the plan is known, before any load (pipeline.h).
  const std::string missing = WriteExp("model.yaml", "name: bad\nmodels: [no-such-model-xyz]\ndecoders: [ar]\n");
  testing::ExpectError([&] { RunExperiment(LoadExperiment(missing), RunOptions{}); },
                       {missing, "model 'no-such-model-xyz' is not in"});
  ExpectBad("decoder.yaml", head + "decoders: [ar, fast]\n", "decoders[1]");
  ExpectBad("quant.yaml", head + "sweep: {draft_quant: [q3]}\ndecoders: [speculative]\n", "sweep.draft_quant[0]");
  ExpectBad("ar_k.yaml", head + "decoders: [{decoder: ar, k: [2]}]\n", "decoders[0].k");
  ExpectBad("json.json", "{\"name\": \"x\", ", "json");
  ExpectBad("kv.yaml", head + "sweep: {kv_type: [f16, q8]}\ndecoders: [ar]\n", "sweep.kv_type[1]");
}

// --------------------------------------------------------------------------- results math

GenerationStats Stats(double tps, int generated, int calls, int64_t drafted, int64_t accepted) {
  GenerationStats s;
  s.prompt_tokens = 5;
  s.generated_tokens = generated;
  s.target_calls = calls;
  s.drafted = drafted;
  s.accepted = accepted;
  s.tokens_per_s = tps;
  s.total_s = generated / tps;
  s.mean_next_token_latency_s = 1.0 / tps;
  return s;
}

// A model's text may end inside a UTF-8 character or hold raw byte tokens: the JSON
// writers replace the bad bytes instead of throwing (generate --json used to fail on a
// random-weight 32k-vocab model).
TEST(Results, DumpJsonReplacesInvalidUtf8) {
  const nlohmann::json j = {{"text", std::string("ok \xe2\x82 \xff")}, {"n", 1}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);
  std::string out;
  ASSERT_NO_THROW(out = DumpJson(j));
  const nlohmann::json back = nlohmann::json::parse(out);
  EXPECT_EQ(back["text"].get<std::string>(), "ok \xef\xbf\xbd \xef\xbf\xbd");  // U+FFFD twice
  EXPECT_EQ(back["n"], 1);
  EXPECT_EQ(DumpJson(back, 2), back.dump(2));  // valid text is written as before
}

TEST(Results, StatisticsHelpers) {
  std::vector<double> v = {3, 1, 2, 10};
  EXPECT_DOUBLE_EQ(Mean(v), 4.0);
  EXPECT_DOUBLE_EQ(Median(v), 2.5);
  // sum of squares about 4: 1 + 9 + 4 + 36 = 50, / 3
  EXPECT_NEAR(StdDev(v), std::sqrt(50.0 / 3.0), 1e-12);
  std::vector<double> one = {7};
  EXPECT_EQ(StdDev(one), 0.0);
  // Leviathan: alpha 0.8, K 4, c 0.1 -> (1 - 0.8^5) / (0.2 * 1.4)
  EXPECT_NEAR(PredictedSpeedup(0.8, 4, 0.1), (1 - std::pow(0.8, 5)) / (0.2 * 1.4), 1e-12);
  EXPECT_NEAR(PredictedSpeedup(1.0, 4, 0.25), 5.0 / 2.0, 1e-12);
}

TEST(Results, AlphaFromPositionCounts) {
  // Constant K = 3 over 10 steps: evaluated 10 at pos 1, then as many as were accepted.
  GenerationStats s;
  s.drafted_at_pos = {10, 10, 10};
  s.accepted_at_pos = {8, 6, 3};
  s.k_per_step.assign(10, 3);
  EXPECT_NEAR(EstimateAlpha(s), (8.0 + 6 + 3) / (10.0 + 8 + 6), 1e-12);
}

TEST(Results, AggregatesRepetitionsAndSpeedup) {
  RawRecord base, spec;
  base.key = "B";
  base.params = json{{"decoder", "ar"}};
  base.prompt_tokens = {5, 5};
  spec.key = "S";
  spec.baseline_key = "B";
  spec.params = json{{"decoder", "speculative"}, {"k", 2}, {"k_policy", "constant"}};
  spec.prompt_tokens = {5, 5};
  // Cost model: T(1) = 10 ms, T(2) = 11, T(3) = 12; draft 1 ms (2 ms for the catch-up).
  spec.costs.target_s = base.costs.target_s = {0.010, 0.011, 0.012};
  spec.costs.draft_s = {0.001, 0.002};
  // Baseline tokens/s: prompt 0 -> 100, prompt 1 -> 200 in every repetition.
  for (int rep = 0; rep < 3; ++rep) {
    GenerationStats b0 = Stats(100, 10, 9, 0, 0), b1 = Stats(200, 10, 9, 0, 0);
    base.runs.push_back({0, rep, 2 * rep, 0, b0, "h0"});
    base.runs.push_back({1, rep, 2 * rep + 1, 1, b1, "h1"});
  }
  // Speculative: prompt 0 at 150/150/180 tok/s, prompt 1 at 200 (ratios 1.5,1.5,1.8 and 1).
  const double tps0[3] = {150, 150, 180};
  for (int rep = 0; rep < 3; ++rep) {
    GenerationStats s0 = Stats(tps0[rep], 10, 4, 8, 6), s1 = Stats(200, 10, 5, 10, 5);
    s0.draft_calls = s1.draft_calls = 10;
    s0.draft_s = s1.draft_s = 0.01;  // 1 ms per draft call
    s0.drafted_at_pos = {4, 4};
    s0.accepted_at_pos = {4, 2};
    s0.k_per_step = {2, 2, 2, 2};
    s1.drafted_at_pos = {5, 5};
    s1.accepted_at_pos = {3, 2};
    s1.k_per_step = {2, 2, 2, 2, 2};
    spec.runs.push_back({0, rep, 2 * rep, 1, s0, "h0"});
    spec.runs.push_back({1, rep, 2 * rep + 1, 0, s1, rep == 0 ? "h1" : "other"});
  }
  json a = Aggregate(spec, &base);
  // Per repetition: mean over prompts of tokens/s = 175, 175, 190.
  EXPECT_NEAR(a["tokens_per_s"].get<double>(), (175 + 175 + 190) / 3.0, 1e-9);
  EXPECT_NEAR(a["tokens_per_s_median"].get<double>(), 175.0, 1e-9);
  std::vector<double> reps = {175, 175, 190};
  EXPECT_NEAR(a["tokens_per_s_std"].get<double>(), StdDev(reps), 1e-9);
  // Pooled per repetition: accepted 11 of drafted 18; 20 tokens over 9 target calls.
  EXPECT_NEAR(a["acceptance_rate"].get<double>(), 11.0 / 18.0, 1e-12);
  EXPECT_NEAR(a["mean_accepted_length"].get<double>(), 20.0 / 9.0, 1e-12);
  // Speedup: the six in-round ratios 1.5 1 1.5 1 1.8 1, their geometric mean, and a
  // bootstrap interval around it that the same data always reproduces.
  std::vector<double> ratios = {1.5, 1.0, 1.5, 1.0, 1.8, 1.0};
  EXPECT_NEAR(a["speedup"].get<double>(), std::pow(1.5 * 1.5 * 1.8, 1.0 / 6), 1e-12);
  EXPECT_NEAR(a["speedup"].get<double>(), GeometricMean(ratios), 1e-12);
  EXPECT_EQ(a["speedup_n"], 6);
  EXPECT_LT(a["speedup_ci_low"].get<double>(), a["speedup"].get<double>());
  EXPECT_GT(a["speedup_ci_high"].get<double>(), a["speedup"].get<double>());
  EXPECT_GE(a["speedup_ci_low"].get<double>(), 1.0);
  EXPECT_LE(a["speedup_ci_high"].get<double>(), 1.8);
  EXPECT_NEAR(a["per_prompt_speedup"][0].get<double>(), std::cbrt(1.5 * 1.5 * 1.8), 1e-12);
  EXPECT_TRUE(a["wide_ci"].get<bool>());  // +-15% is not met by 6 ratios this spread
  // Cost ratio from the cost model: T_d(1) / T(1).
  EXPECT_NEAR(a["cost_ratio"].get<double>(), 0.1, 1e-12);
  // alpha from positions pooled over the 6 runs: accepted (4+2+3+2)*3, evaluated (4+4+5+3)*3.
  double alpha = 33.0 / 48.0;
  EXPECT_NEAR(a["alpha"].get<double>(), alpha, 1e-12);
  EXPECT_NEAR(a["predicted_speedup_leviathan"].get<double>(), PredictedSpeedup(alpha, 2.0, 0.1), 1e-12);
  // Cost model: 27 steps of K = 2; E[tokens/step] = 1 + (21 + 12) / 27; draft per step
  // 60/27 calls x 1 ms + P(full accept) 12/27 x (2 - 1) ms (no per-step traces here: from
  // the positions); verify T(3) = 12 ms; the baseline's 10 tokens took 9 - 1 decode calls.
  const double steps = 27, e_tok = 1 + 33.0 / steps, draft = 60.0 / steps * 0.001 + 12.0 / steps * 0.001;
  EXPECT_NEAR(a["predicted_speedup"].get<double>(), e_tok * 0.010 / (10.0 / 8.0) / (draft + 0.012), 1e-12);
  // The fit of T(1..3): the line 9 + 1 n ms (harness/report/fit.h).
  EXPECT_NEAR(a["verify_cost_fit"]["intercept_s"].get<double>(), 0.009, 1e-12);
  EXPECT_NEAR(a["verify_cost_fit"]["slope_s"].get<double>(), 0.001, 1e-12);
  // Bound: 60 tokens over 27 verify calls of 1.2 T(1) each.
  EXPECT_NEAR(a["speedup_bound"].get<double>(), 60.0 / (27 * 1.2), 1e-12);
  EXPECT_FALSE(a["suspect"].get<bool>());
  EXPECT_NEAR(a["outputs_match_baseline"].get<double>(), 4.0 / 6.0, 1e-12);
  EXPECT_NEAR(a["acceptance_at_pos"][1].get<double>(), 12.0 / 27.0, 1e-12);
  // Conditional: position 2 accepted 12 times of the 21 that reached it.
  EXPECT_NEAR(a["acceptance_at_pos_conditional"][1].get<double>(), 12.0 / 21.0, 1e-12);
  // JSON round trip of a raw record keeps everything the aggregate needs.
  RawRecord back = RawFromJson(RawToJson(spec), "t");
  EXPECT_EQ(Aggregate(back, &base).dump(), a.dump());

  // A speedup the step counts and verify costs cannot produce is suspect.
  for (auto& run : spec.runs) run.stats.tokens_per_s *= 3;
  EXPECT_TRUE(Aggregate(spec, &base)["suspect"].get<bool>());
}

// The cost model prices what the runs did (issue #31: 1.1B and 7B points 8-18% over): a
// decode made of exactly the modelled calls must come out at predicted / measured = 1.
// Before, the baseline's first token (yielded by its prefill, so G tokens in G - 1 calls)
// and the catch-ups T_d(2) after fully accepted steps of a varying K were not priced.
TEST(Results, CostModelPricesTheBaselinesDecodeAndEveryCatchUp) {
  const std::vector<double> t = {0.010, 0.011, 0.012, 0.013, 0.014, 0.015, 0.016, 0.017, 0.018};  // T(1..9)
  RawRecord base, spec;
  base.key = "B";
  base.params = json{{"decoder", "ar"}};
  base.prompt_tokens = spec.prompt_tokens = {5};
  base.costs.target_s = spec.costs.target_s = t;
  spec.costs.draft_s = {0.0010, 0.0015};  // T_d(1), T_d(2)
  spec.key = "S";
  spec.baseline_key = "B";
  spec.params = json{{"decoder", "speculative"}, {"k", 8}, {"k_policy", "adaptive"}};
  // An adaptive K's trace: 23 tokens in 5 steps; steps 1 and 3 are fully accepted and
  // followed by a drafting step (the last one, also full, is not).
  GenerationStats s = Stats(1, 23, 5, 26, 18);
  s.k_per_step = {8, 3, 5, 8, 2};
  s.accepted_per_step = {8, 1, 5, 2, 2};
  s.drafted_at_pos = {5, 5, 4, 3, 3, 2, 2, 2};
  s.accepted_at_pos = {5, 4, 2, 2, 2, 1, 1, 1};
  s.draft_calls = 26;
  const double spec_s = (0.018 + 0.013 + 0.015 + 0.018 + 0.012) + 26 * 0.0010 + 2 * (0.0015 - 0.0010);
  s.tokens_per_s = 23 / spec_s;
  s.total_s = spec_s;
  GenerationStats b = Stats(1, 23, 23, 0, 0);  // prefill + 22 decode calls
  b.tokens_per_s = 23 / (22 * 0.010);
  b.total_s = 22 * 0.010;
  base.runs.push_back({0, 0, 0, 0, b, "b"});
  spec.runs.push_back({0, 0, 0, 1, s, "s"});
  const json a = Aggregate(spec, &base);
  EXPECT_NEAR(a["speedup"].get<double>(), 0.220 / spec_s, 1e-12);
  EXPECT_NEAR(a["predicted_over_measured"].get<double>(), 1.0, 1e-12);
}

TEST(Results, Sha256KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string m(1000, 'a');  // crosses block boundaries
  EXPECT_EQ(Sha256Hex(m), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

// --------------------------------------------------------------------------- check

json Rec(const std::string& key, const std::string& dec, double acc, double tau) {
  return json{{"key", key}, {"name", key}, {"decoder", dec}, {"acceptance_rate", acc}, {"mean_accepted_length", tau}};
}

TEST(Check, PassesIdenticalFailsWorseAndMissing) {
  std::vector<json> base = {Rec("a", "ar", 0, 1), Rec("b", "speculative", 0.8, 3.0), Rec("c", "speculative", 0.5, 2.0)};
  for (auto& r : base) r["temperature"] = 0.7;  // sampled points: the tolerance applies
  EXPECT_TRUE(CheckRegressions(RecordsFromJson(base), RecordsFromJson(base), 0.0).ok());
  EXPECT_EQ(CheckRegressions(RecordsFromJson(base), RecordsFromJson(base), 0.0).compared, 2);
  auto worse = base;
  worse[1]["acceptance_rate"] = 0.7;
  auto r = CheckRegressions(RecordsFromJson(worse), RecordsFromJson(base), 0.05);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].metric, "acceptance_rate");
  // Within tolerance: 0.79 >= 0.8 * 0.98.
  auto slight = base;
  slight[1]["acceptance_rate"] = 0.79;
  EXPECT_TRUE(CheckRegressions(RecordsFromJson(slight), RecordsFromJson(base), 0.02).ok());
  // Greedy points are gated at tolerance 0 whatever --tolerance says.
  auto greedy = base, greedy_slight = slight;
  for (auto* v : {&greedy, &greedy_slight})
    for (auto& x : *v) x["temperature"] = 0.0;
  EXPECT_EQ(CheckRegressions(RecordsFromJson(greedy_slight), RecordsFromJson(greedy), 0.02).failures.size(), 1u);
  auto missing = base;
  missing.erase(missing.begin() + 2);
  auto m = CheckRegressions(RecordsFromJson(missing), RecordsFromJson(base), 0.5);
  ASSERT_EQ(m.failures.size(), 1u);
  EXPECT_EQ(m.failures[0].metric, "missing");
  EXPECT_NE(RenderTable(m.AsTable(), TableFormat::Markdown).find("missing point"), std::string::npos);
  // The same key measured with other model files is not the same point.
  auto ided = base;
  for (auto& x : ided) x["model_sha256"] = json{{"m.gguf", "aaaa"}};
  auto swapped = ided;
  swapped[1]["model_sha256"] = json{{"m.gguf", "bbbb"}};
  auto id = CheckRegressions(RecordsFromJson(swapped), RecordsFromJson(ided), 0.5);
  ASSERT_EQ(id.failures.size(), 1u);
  EXPECT_NE(id.failures[0].metric.find("m.gguf has sha256 bbbb..., the results were measured with aaaa..."),
            std::string::npos)
      << id.failures[0].metric;
  // The same bytes at another path are the same point (old path-keyed records, new ones).
  auto moved = ided;
  for (auto& x : moved) x["model_sha256"] = json{{"/elsewhere/models/m.gguf", "aaaa"}};
  EXPECT_TRUE(CheckRegressions(RecordsFromJson(moved), RecordsFromJson(ided), 0.5).ok());
  for (auto& x : moved)
    x.erase("model_sha256"),
        x["model_files"] = json::array({json{{"role", "target"}, {"file", "m.gguf"}, {"sha256", "aaaa"}}});
  EXPECT_TRUE(CheckRegressions(RecordsFromJson(moved), RecordsFromJson(ided), 0.5).ok());
}

// A gate that cannot fail is refused.
TEST(Check, RefusesGatesThatCannotFail) {
  std::vector<json> base = {Rec("a", "ar", 0, 1), Rec("b", "speculative", 0.8, 3.0)};
  EXPECT_THROW(CheckRegressions(RecordsFromJson(base), {}, 0.02), Error);  // empty baseline
  EXPECT_THROW(CheckRegressions(RecordsFromJson(base), RecordsFromJson({Rec("a", "ar", 0, 1)}), 0.02),
               Error);  // AR only
  auto str = base;
  str[1]["acceptance_rate"] = "0.8";
  EXPECT_THROW(CheckRegressions(RecordsFromJson(base), RecordsFromJson(str), 0.02), Error);           // not a number
  EXPECT_THROW(CheckRegressions(RecordsFromJson(base), RecordsFromJson(base), std::nan("")), Error);  // --tolerance nan
  EXPECT_THROW(CheckRegressions(RecordsFromJson(base), RecordsFromJson(base), -0.1), Error);
  EXPECT_THROW(CheckRegressions(RecordsFromJson({Rec("x", "speculative", 0.9, 3)}), RecordsFromJson(base), 0.02),
               Error);  // no overlap
}

// --------------------------------------------------------------------------- prompts

TEST(Runner, CutsPassagesToExactTokenCounts) {
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(TinyTestConfig().vocab_size));
  auto passages = SplitPassages("one two three four\nfive six\n\n  \nseven eight nine ten eleven\n\nlast one\n");
  ASSERT_EQ(passages.size(), 3u);
  EXPECT_EQ(passages[0], "one two three four\nfive six");
  for (int n : {1, 5, 12}) {
    auto cuts = CutPassages(passages, *tok, n, 2, "p.txt");
    ASSERT_EQ(cuts.size(), 2u);
    for (auto& c : cuts) {
      EXPECT_EQ(int(c.size()), n);
      EXPECT_EQ(c[0], tok->bos_id());
    }
    // Prompt 1 starts from passage 1 and is a prefix of its encoding: real text, no padding.
    auto full = tok->Encode(passages[1] + "\n" + passages[2] + "\n" + passages[0], true);
    EXPECT_TRUE(std::equal(cuts[1].begin(), cuts[1].end(), full.begin()));
  }
  EXPECT_THROW(CutPassages(passages, *tok, 100000, 1, "p.txt"), Error);
  EXPECT_THROW(CutPassages(passages, *tok, 4, 4, "p.txt"), Error);
  EXPECT_THROW(ReadPromptLines(Files().prompts, 4), Error);  // the file has 3 prompts
  EXPECT_EQ(ReadPromptLines(Files().prompts, 3)[2], "A big red ball");
}

// --------------------------------------------------------------------------- run + resume

std::string TinyExperiment() {
  const auto& f = Files();
  return WriteExp("tiny.yaml", R"(
name: tiny
models: [")" + f.model + R"("]
prompts: {file: ")" + f.prompts + R"(", count: 2}
sweep:
  k: [2, 3]
  max_new_tokens: 6
decoders:
  - decoder: speculative
    draft: [layers=1]
  - self-spec
)");
}

TEST(Runner, ResumeSkipsDonePointsAndDropsCutLine) {
  Experiment e = LoadExperiment(TinyExperiment());
  ASSERT_EQ(e.points.size(), 5u);
  RunOptions o;
  o.out_dir = TempDir();
  o.progress = nullptr;
  RunSummary s = RunExperiment(e, o);
  EXPECT_EQ(s.measured, 5);
  auto first = ReadJsonl(s.jsonl_path).records;
  ASSERT_EQ(first.size(), 5u);
  LoadedRecords full = LoadRecords(s.json_path);
  ASSERT_EQ(full.records.size(), 5u);
  EXPECT_EQ(full.context["schema_version"], kResultsSchemaVersion);
  EXPECT_EQ(full.context["model_files"][0]["sha256"], Sha256File(Files().model));

  // Without --resume an existing .jsonl is an error.
  EXPECT_THROW(RunExperiment(e, o), Error);

  // Resuming a complete sweep measures nothing.
  o.resume = ResumeMode::Same;
  s = RunExperiment(e, o);
  EXPECT_EQ(s.resumed, 5);
  EXPECT_EQ(s.measured, 0);

  // Simulate a kill: keep 3 complete lines plus half of the fourth. The 5 points are one
  // group (one baseline), measured together in interleaved rounds: a partial group is
  // measured again, its old records set aside in .replaced, not lost.
  std::string text = ReadFile(s.jsonl_path);
  size_t cut = 0;
  for (int i = 0; i < 3; ++i) cut = text.find('\n', cut) + 1;
  WriteFile(s.jsonl_path, text.substr(0, cut) + text.substr(cut, 40));
  s = RunExperiment(e, o);
  EXPECT_EQ(s.resumed, 0);
  EXPECT_EQ(s.measured, 5);
  EXPECT_EQ(s.set_aside, 3);
  EXPECT_EQ(ReadJsonl(s.jsonl_path + ".replaced").records.size(), 3u);
  auto again = ReadJsonl(s.jsonl_path).records;
  ASSERT_EQ(again.size(), 5u);
  std::set<std::string> keys;
  for (auto& r : again) EXPECT_TRUE(keys.insert(r.key).second);
  // Every line parses (the cut line was dropped, not glued to the next record).
  std::string now = ReadFile(s.jsonl_path);
  EXPECT_EQ(std::count(now.begin(), now.end(), '\n'), 5);
  // Greedy points give the same figures as the uninterrupted run.
  LoadedRecords resumed = LoadRecords(s.json_path);
  for (size_t i = 0; i < full.records.size(); ++i) {
    EXPECT_EQ(resumed.records[i]["key"], full.records[i]["key"]);
    EXPECT_EQ(resumed.records[i]["generated_tokens"], full.records[i]["generated_tokens"]);
    EXPECT_EQ(resumed.records[i]["acceptance_rate"], full.records[i]["acceptance_rate"]);
    EXPECT_EQ(resumed.records[i]["mean_accepted_length"], full.records[i]["mean_accepted_length"]);
  }
  EXPECT_TRUE(CheckRegressions(resumed.records, full.records, 0.0).ok());
  // Speculative greedy decoding is lossless: same outputs as the AR baseline.
  for (auto& r : resumed.records)
    if (r["decoder"] != "ar") {
      EXPECT_EQ(r["outputs_match_baseline"].get<double>(), 1.0) << r["name"];
    }
  // The main table has one row per decoder/draft and one column per K.
  std::string md = RenderTable(MainTable(resumed.records), TableFormat::Markdown);
  EXPECT_NE(md.find("k=2"), std::string::npos);
  EXPECT_NE(md.find("k=3"), std::string::npos);
  EXPECT_NE(md.find("speculative"), std::string::npos);
  EXPECT_NE(md.find("q4_0"), std::string::npos);  // self-spec's draft
}

TEST(Cli, CheckExitCodesAndPlotWithoutGnuplot) {
  Experiment e = LoadExperiment(TinyExperiment());
  std::string dir = TempDir();
  auto run = RunCli({"run", e.file, "-o", dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string res = dir + "/tiny.json";
  auto ok = RunCli({"check", res, "--baseline", res});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // A baseline with better acceptance than measured -> regression, exit 1.
  json doc = json::parse(ReadFile(res));
  for (auto& b : doc["benchmarks"])
    if (b["decoder"] != "ar") b["mean_accepted_length"] = b["mean_accepted_length"].get<double>() + 1.0;
  std::string better = dir + "/better.json";
  WriteFile(better, doc.dump());
  auto bad = RunCli({"check", res, "--baseline", better});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("mean_accepted_length"), std::string::npos) << bad.out;
  EXPECT_NE(bad.err.find("regression"), std::string::npos) << bad.err;
  auto table = RunCli({"table", res, "--format", "csv"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  // Long form: one numeric value per column.
  EXPECT_EQ(table.out.find("k=2"), std::string::npos);
  EXPECT_NE(table.out.find(",speedup,speedup_ci_low,speedup_ci_high,"), std::string::npos) << table.out;
  auto plot = RunCli({"plot", res, "-o", dir + "/plots", "--gnuplot", "/nonexistent/gnuplot"});
  EXPECT_EQ(plot.exit_code, 1);
  EXPECT_NE(plot.err.find("gnuplot"), std::string::npos);
  auto badexp = RunCli({"run", WriteExp("cli_bad.yaml", "name: x\nmodels: [nope-model]\ndecoders: [ar]\n")});
  EXPECT_EQ(badexp.exit_code, 1);
  EXPECT_NE(badexp.err.find("model 'nope-model' is not in"), std::string::npos) << badexp.err;
}

TEST(Plot, SeriesFromRecords) {
  std::vector<json> recs;
  for (int k : {2, 4})
    for (const char* d : {"q4_0", "q8_0"}) {
      json r = {{"key", fmt::format("{}{}", k, d)},
                {"model", "m"},
                {"decoder", "speculative"},
                {"k", k},
                {"draft_base", "self"},
                {"draft_quant", d},
                {"speedup", k * 0.5},
                {"acceptance_rate", 0.5},
                {"predicted_speedup", 1.0},
                {"acceptance_at_pos_conditional", std::vector<double>(k, 0.5)},
                {"prompt_tokens", 5.0},
                {"mean_next_token_latency_s", 0.001}};
      recs.push_back(r);
    }
  auto s = SpeedupVsK(RecordsFromJson(recs));
  ASSERT_EQ(s.size(), 2u);  // one series per draft quant, x = K
  EXPECT_EQ(s[0].xy.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0].xy[1].first, 4.0);
  EXPECT_DOUBLE_EQ(s[0].xy[1].second, 2.0);
  auto pos = AcceptancePerPosition(RecordsFromJson(recs));
  ASSERT_EQ(pos.size(), 2u);
  EXPECT_EQ(pos[0].xy.size(), 4u);  // the largest K of each draft
  std::string dat = DatText("t", s);
  EXPECT_NE(dat.find("\n\n\n"), std::string::npos);  // index blocks
}

// The run's drafts are shared while a decoder holds them, and never kept after: the same
// quantized copy and the same loaded file for two decoders.
TEST(DraftStore, SharesWhileHeld) {
  const SharedDraftModels drafts("");
  auto m = std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), 4));
  auto a = drafts.Quantized(m, QType::Q8_0), b = drafts.Quantized(m, QType::Q8_0);
  EXPECT_EQ(a, b);
  EXPECT_NE(drafts.Quantized(m, QType::Q4_0), a);
  a.reset(), b.reset();
  EXPECT_EQ(drafts.Quantized(m, QType::Q8_0)->layers[0].wq.type, QType::Q8_0);  // made again
  // The last copy outlives its decoders (the next group asks for it again); one other
  // made after it lets it go.
  std::weak_ptr<const Model> last = drafts.Quantized(m, QType::Q8_0);
  EXPECT_FALSE(last.expired());
  EXPECT_EQ(drafts.Quantized(m, QType::Q8_0), last.lock());
  drafts.Quantized(m, QType::Q4_0);
  EXPECT_TRUE(last.expired());
  const std::string dir = testing::SharedModelsDir();
  if (dir.empty()) return;
  const SharedDraftModels files(dir);
  const LoadedModel x = files.Load("tinystories-260k"), y = files.Load("tinystories-260k");
  EXPECT_EQ(x.model, y.model);
  EXPECT_EQ(x.name, "tinystories-260k");
}

}  // namespace
}  // namespace specsweep
