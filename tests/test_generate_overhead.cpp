// Issue #49 item 3, generate as fast as bench-forward: generate splits its decode time per
// token into the Forward call and the time outside it, `bench-forward --vs-generate`
// compares it with T(1) in alternating rounds, and a GGUF load packs a matrix straight
// from the map (one huge-page copy, not two). Structure only: no wall-clock thresholds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "decoders/common.h"
#include "decoders/decoder.h"
#include "harness/bench/bench_generate.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "quant/huge_pages.h"
#include "quant/qtype.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::RunCli;

LoadedModel TinyModel() {
  return LoadedModel{"synthetic", std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), 3)), nullptr};
}

// One Forward call per token but the last, timed apart from the rest of the decode.
TEST(GenerateOverhead, DecodeForwardCallsAreCountedAndTimed) {
  DecoderOptions o;
  o.max_new_tokens = 12;
  o.stop_at_eos = false;
  const LoadedModel m = TinyModel();
  const GenerationResult r = MakeDecoder(m, o)->Generate(std::vector<int>{1, 5, 9});
  const GenerationStats& s = r.stats;
  ASSERT_EQ(s.generated_tokens, 12);
  EXPECT_EQ(s.decode_forward_calls, 11);
  EXPECT_GT(s.decode_forward_s, 0.0);
  EXPECT_GT(s.decode_forward_median_s, 0.0);
  EXPECT_LE(s.decode_forward_s, s.verify_s);  // verify_s also holds the sampling
  EXPECT_LE(s.decode_forward_s, s.total_s - s.prefill_s);
  GenerationStats sum;
  AddStats(sum, s);
  AddStats(sum, s);
  EXPECT_EQ(sum.decode_forward_calls, 22);
  EXPECT_DOUBLE_EQ(sum.decode_forward_s, 2 * s.decode_forward_s);
}

std::string TinyGguf() {
  static const std::string path = [] {
    const std::string p = testing::TempDir() + "/tiny.gguf";
    testing::WriteTinyGguf(p, 7);
    return p;
  }();
  return path;
}

// generate --json: forward + outside = total per token, over the decode calls; the
// probe's readings with --bandwidth.
TEST(GenerateOverhead, JsonSplitsEachTokenAndReadsTheProbe) {
  const testing::CliResult r =
      RunCli({"--threads", "1", "generate", "-m", TinyGguf(), "-n", "8", "--no-eos", "--json", "--bandwidth"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& s = j.at("stats");
  const nlohmann::json& p = s.at("per_token");
  EXPECT_EQ(p.at("forward_calls").get<int>(), 7);
  const double fwd = p.at("forward_s"), out = p.at("outside_s"), tot = p.at("total_s");
  EXPECT_GT(fwd, 0.0);
  EXPECT_GT(p.at("forward_median_s").get<double>(), 0.0);
  EXPECT_NEAR(fwd + out, tot, 1e-12 * tot);
  EXPECT_NEAR(tot * 7, s.at("total_s").get<double>() - s.at("prefill_s").get<double>(), 1e-9);
  EXPECT_NEAR(p.at("outside_over_forward").get<double>(), out / fwd, 1e-12);
  EXPECT_GT(j.at("read_bandwidth").at("before_gbs").get<double>(), 0.0);
  EXPECT_GT(j.at("read_bandwidth").at("after_gbs").get<double>(), 0.0);
  // Without --bandwidth no probe is read; a speculative decoder has no per-token split.
  const testing::CliResult spec =
      RunCli({"--threads", "1", "generate", "-m", TinyGguf(), "-n", "4", "--json", "--draft", "q8_0"});
  ASSERT_EQ(spec.exit_code, 0) << spec.err;
  const nlohmann::json js = nlohmann::json::parse(spec.out);
  EXPECT_FALSE(js.contains("read_bandwidth"));
  EXPECT_FALSE(js.at("stats").contains("per_token"));
}

TEST(GenerateOverhead, SummaryPrintsTheSplit) {
  const testing::CliResult r = RunCli({"--threads", "1", "generate", "-m", TinyGguf(), "-n", "6", "--no-eos"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("per token (decode)       forward "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ms + outside "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("read bandwidth"), std::string::npos) << r.out;  // only with --bandwidth
}

// A round read from the two children's JSON, and its memory phase.
TEST(GenerateOverhead, RoundReadsBothChildren) {
  const nlohmann::json g = {{"stats",
                             {{"prompt_tokens", 5},
                              {"per_token",
                               {{"forward_calls", 9},
                                {"forward_s", 0.05},
                                {"forward_median_s", 0.049},
                                {"outside_s", 1e-5},
                                {"total_s", 0.05001}}}}},
                            {"read_bandwidth", {{"before_gbs", 33.0}, {"after_gbs", 34.0}}},
                            {"startup", {{"ready_s", 0.5}}}};
  nlohmann::json b = {{"context", {{"ctx", 9}, {"read_bandwidth_during_gbs", 35.0}, {"load_s", 0.4}}},
                      {"benchmarks",
                       {{{"name", "bench_forward/f16/n:1"}, {"format", "f16"}, {"n", 1}, {"real_time", 48.0}}}}};
  GenerateVsForwardRound r = ReadGenerateVsForward(g, b);
  EXPECT_EQ(r.prompt_tokens, 5);
  EXPECT_EQ(r.forward_calls, 9);
  EXPECT_EQ(r.bench_ctx, 9);
  EXPECT_DOUBLE_EQ(r.forward_ms, 50.0);
  EXPECT_DOUBLE_EQ(r.forward_median_ms, 49.0);
  EXPECT_DOUBLE_EQ(r.total_ms, 50.01);
  EXPECT_DOUBLE_EQ(r.t1_ms, 48.0);
  // The phase of a round is the classifier's over all rounds' readings (memory_phase.h).
  const std::vector<double> all = {33, 34, 35, 55, 56, 57};
  const PhaseSplit two = SplitPhases(all);
  EXPECT_EQ(RoundPhase(r, two), MemoryPhase::kSlow);
  b["context"]["read_bandwidth_during_gbs"] = 55.0;  // bench-forward in the fast phase: the round is mixed
  EXPECT_EQ(RoundPhase(ReadGenerateVsForward(g, b), two), MemoryPhase::kMixed);
  // bench-forward's readings around its repetitions count, when it reports them.
  b["context"]["memory_phases"] = {{"readings_gbs", {33.5, 56.0}}};
  EXPECT_EQ(ReadGenerateVsForward(g, b).bench_readings, (std::vector<double>{33.5, 56.0}));
  EXPECT_EQ(RoundPhase(ReadGenerateVsForward(g, b), two), MemoryPhase::kMixed);
  b["context"]["memory_phases"] = {{"readings_gbs", {33.5, 34.5}}};
  EXPECT_EQ(RoundPhase(ReadGenerateVsForward(g, b), two), MemoryPhase::kSlow);
  const std::vector<double> spread = {26, 30, 34, 38, 42, 46, 50, 54, 58};  // no clear gap: one phase
  EXPECT_EQ(RoundPhase(ReadGenerateVsForward(g, b), SplitPhases(spread)), MemoryPhase::kOne);  // 33..34.5
  b["context"]["memory_phases"] = {{"readings_gbs", {33.5, 45.0}}};  // 45 / 33 >= 1.25: changed within the round
  EXPECT_EQ(RoundPhase(ReadGenerateVsForward(g, b), SplitPhases(spread)), MemoryPhase::kMixed);
  nlohmann::json no_split = g;
  no_split["stats"].erase("per_token");
  EXPECT_THROW(ReadGenerateVsForward(no_split, b), Error);
}

// The real binary: rounds alternate, bench-forward times generate's mean position, and
// the summary names its rows.
TEST(GenerateOverhead, VsGenerateRunsOnATinyModel) {
  const std::string json = testing::TempDir() + "/vs.json";
  const testing::CliResult r = RunCli({"--threads", "1", "bench-forward", TinyGguf(), "--vs-generate", "6", "--rounds",
                                       "2", "--reps", "2", "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"vs-generate: 2 rounds of `generate -n 6 --no-eos`", "round 1 (generate first): generate ",
                           "round 2 (bench-forward first): generate ", "generate / T(1)", "outside / T(1) %",
                           "generate's Forward / T(1)", "bench-forward T(1) ms"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  const nlohmann::json j = nlohmann::json::parse(testing::ReadFile(json));
  ASSERT_EQ(j.at("rounds").size(), 2u);
  EXPECT_TRUE(j.at("rounds")[0].at("generate_first").get<bool>());
  EXPECT_FALSE(j.at("rounds")[1].at("generate_first").get<bool>());
  for (const nlohmann::json& round : j.at("rounds")) {
    EXPECT_EQ(round.at("forward_calls").get<int>(), 5);
    EXPECT_EQ(round.at("bench_ctx").get<int>(), round.at("prompt_tokens").get<int>() + 2);  // mean of 5 positions
    EXPECT_GT(round.at("t1_ms").get<double>(), 0.0);
  }
  EXPECT_TRUE(j.at("summary").contains("generate / T(1)"));
}

TEST(GenerateOverhead, VsGenerateRefusesWhatItCannotCompare) {
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"--vs-generate", "1"},
                                                {"--vs-generate", "4", "--quant", "q8_0,q4_0"},
                                                {"--vs-generate", "4", "--kv-type", "f32,f16"}}) {
    std::vector<std::string> args = {"bench-forward", TinyGguf()};
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--"), std::string::npos) << r.err;
  }
}

// Packing that re-lays a matrix out (F16 into column chunks under avx512) reads the map:
// one huge-page buffer per streamed matrix, not a copy of the rows and then another.
TEST(GenerateOverhead, GgufMatrixIsCopiedOnceOntoHugePages) {
  Runtime rt = testing::Threads(1);
  testing::KernelIsaGuard guard;
  if (!testing::ForceIsa(rt, "avx512")) GTEST_SKIP() << "no avx512 family on this CPU (F16 keeps its rows)";
  if (!UninitializedOnHugePages(kHugePage)) GTEST_SKIP() << "transparent huge pages are off";
  const std::string path = testing::TempDir() + "/f16_2mib.gguf";
  const testing::CliResult s =
      RunCli({"synth", "--shape", "dim=1024,layers=1,heads=8,kv_heads=8,ffn=1024,vocab=256,ctx=64", "--type", "f16",
              "-o", path});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const uint64_t before = HugePageBytesMapped();
  const LoadedModel lm = LoadModel(path);
  const uint64_t mapped = HugePageBytesMapped() - before;
  const LayerWeights& L = lm.model->layers.at(0);
  uint64_t streamed = 0;  // the seven 2 MiB matrices of the block
  for (const QMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3}) {
    EXPECT_EQ(w->layout, Layout::kColChunks);
    streamed += w->bytes();
  }
  EXPECT_EQ(streamed, 7u * kHugePage);
  EXPECT_EQ(mapped, streamed);  // before: twice (the rows, then the chunks)
}

}  // namespace
}  // namespace specsweep
