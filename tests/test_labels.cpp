// #30: every figure and label true to what ran. Non-finite logits stop decoding, a
// quantization type that covers no matrix is refused and a partial one is labelled, the
// mean accepted length has one definition, experiment files are strict, plans are
// bounded, `check` does not skip corrupt lines, and the CLI refuses bad arguments.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "decoders/decoder.h"
#include "decoders/sampler.h"
#include "harness/pipeline.h"
#include "harness/sweep/experiment.h"
#include "models/model.h"
#include "models/quant_error.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {
namespace {

using testing::ExpectError;
using testing::RunCli;
using testing::TempDir;
using testing::WriteFile;

LoadedModel Synthetic(const ModelConfig& c, const std::string& name) {
  return LoadedModel{name, std::make_shared<const Model>(MakeSyntheticModel(c, 1)), nullptr};
}

// A model whose weights are finite but whose logits overflow: output_norm = 3e38.
LoadedModel Overflowing() {
  Model m = MakeSyntheticModel(TinyTestConfig(), 1);
  for (float& x : m.final_norm) x = 3e38f;
  return LoadedModel{"overflow", std::make_shared<const Model>(std::move(m)), nullptr};
}

DecoderOptions Opts(DecoderKind kind, int n) {
  DecoderOptions o;
  o.kind = kind;
  o.k = 2;
  o.max_new_tokens = n;
  o.stop_at_eos = false;
  return o;
}

TEST(NonFiniteLogits, EveryDecoderStopsNamingModelPositionAndStep) {
  const std::vector<int> prompt = {1, 5, 9};
  // Greedy autoregressive: the prefill's row is the first one checked.
  ExpectError([&] { MakeDecoder(Overflowing(), Opts(DecoderKind::Autoregressive, 8))->Generate(prompt); },
              {"overflow: logits: non-finite value", "at position 2", "decoding step 0"});
  // Sampling too (it used to say only "sampler: ..." without the model).
  DecoderOptions sampled = Opts(DecoderKind::Autoregressive, 8);
  sampled.sampling.temperature = 0.7f;
  ExpectError([&] { MakeDecoder(Overflowing(), sampled)->Generate(prompt); }, {"overflow: logits: non-finite"});
  // Speculative verification (early-exit draft and lookup) and the draft model's own rows.
  for (const char* draft : {"layers=1", "lookup"}) {
    DecoderOptions o = Opts(DecoderKind::Speculative, 8);
    o.draft = ParseDraftSpec(draft, "draft");
    ExpectError([&] { MakeDecoder(Overflowing(), o)->Generate(prompt); }, {"logits: non-finite", "decoding step 0"});
  }
  DecoderOptions sep = Opts(DecoderKind::Speculative, 8);
  ExpectError([&] { MakeDecoder(Synthetic(TinyTestConfig(), "t"), sep, Overflowing())->Generate(prompt); },
              {"draft overflow: logits: non-finite"});
  // A single NaN anywhere in a row, not only at the maximum.
  std::vector<float> row(1000, 0.5f);
  EXPECT_EQ(FirstNonFinite(row), -1);
  row[777] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(FirstNonFinite(row), 777);
  row[3] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(FirstNonFinite(row), 3);
}

TEST(MeanAcceptedLength, AutoregressiveIsExactlyOne) {
  const LoadedModel m = Synthetic(TinyTestConfig(), "tiny");
  for (int n : {1, 16, 64}) {
    GenerationResult r = MakeDecoder(m, Opts(DecoderKind::Autoregressive, n))->Generate(std::vector<int>{1, 5});
    EXPECT_EQ(r.stats.generated_tokens, n);
    EXPECT_EQ(r.stats.target_calls, n);
    EXPECT_EQ(r.stats.mean_accepted_length(), 1.0) << n;
  }
  // Speculative: every token-yielding target call counted, the prefill (which yields
  // none) not: tokens = calls + accepted drafts.
  DecoderOptions o = Opts(DecoderKind::Speculative, 16);
  o.draft = ParseDraftSpec("layers=1", "draft");
  GenerationResult r = MakeDecoder(m, o)->Generate(std::vector<int>{1, 5});
  EXPECT_EQ(r.stats.generated_tokens, r.stats.target_calls + r.stats.accepted);
}

// Tiny: rows of 64 (dim) and 96 (hidden_dim) values.
TEST(EffectiveTypes, NoCoverageIsRefusedPartialIsCountedAndLabelled) {
  const Model m = MakeSyntheticModel(TinyTestConfig(), 1);
  ExpectError([&] { QuantizeModel(m, QType::Q4_G128); },
              {"q4_g128 covers no matrix", "rows of 64, 96 values", "128-value blocks"});
  ExpectError([&] { MeasureModelQuantError(m, QType::Q4_G128); }, {"q4_g128 covers no matrix"});
  // Q4_K's 256-value blocks fit no row, but llama.cpp's fallback Q5_0 (32) fits all: it
  // quantizes, and the label says what ran.
  EXPECT_EQ(StoredTypesLabel("q4_k", MatrixTypeCounts(QuantizeModel(m, QType::Q4_K))), "q4_k (15 of 15 q5_0)");
  ExpectError([&] { QuantizeModel(m, QType::Q2_K); }, {"q2_k is load-only"});
  ExpectError([&] { ParseQuantizeTarget("q3_k", "--quant"); }, {"--quant: q3_k is load-only"});
  // Q4_G64 fits rows of 64, not w2's 96: 13 matrices q4_g64, the two w2 f16.
  const Model q = QuantizeModel(m, QType::Q4_G64);
  const std::map<std::string, int> want = {{"q4_g64", 13}, {"f16", 2}};
  EXPECT_EQ(MatrixTypeCounts(q), want);
  EXPECT_EQ(StoredTypesLabel("q4_g64", MatrixTypeCounts(q)), "q4_g64 (2 of 15 f16)");
  EXPECT_EQ(StoredTypesLabel("f16", MatrixTypeCounts(QuantizeModel(m, QType::F16))), "f16");
  // An early-exit draft of 1 block runs 8 matrices: the 7 of its block and the classifier.
  EXPECT_EQ(MatrixTypeCounts(q, 1), (std::map<std::string, int>{{"q4_g64", 7}, {"f16", 1}}));
  // The decoder reports what its draft runs.
  DecoderOptions o = Opts(DecoderKind::Speculative, 4);
  o.draft = ParseDraftSpec("q4_g64", "draft");
  EXPECT_EQ(MakeDecoder(Synthetic(TinyTestConfig(), "t"), o)->draft_types(), want);
  // --quant-error measures what would run: w2 at f16 (its error is that of f16).
  ModelQuantError e = MeasureModelQuantError(m, QType::Q4_G64);
  for (auto& t : e.tensors) EXPECT_EQ(t.stored, t.name.ends_with("w2") ? QType::F16 : QType::Q4_G64) << t.name;
}

// ---------------------------------------------------------------- experiment files

struct Files {
  std::string dir, model, prompts;
};
const Files& Shared() {
  static Files f = [] {
    Files x;
    x.dir = TempDir();
    x.model = x.dir + "/tiny.gguf";
    testing::WriteTinyGguf(x.model, 7);
    x.prompts = x.dir + "/prompts.txt";
    WriteFile(x.prompts, "Once upon a time\nThe dog ran\n");
    return x;
  }();
  return f;
}

std::string Yaml(const std::string& name, const std::string& body) {
  const std::string p = Shared().dir + "/" + name;
  WriteFile(p, "name: x\nmodels: [\"" + Shared().model + "\"]\nprompts: {file: \"" + Shared().prompts +
                   "\", count: 2}\n" + body);
  return p;
}

TEST(ExperimentFiles, DuplicateKeysAndSecondDocumentsAreErrors) {
  ExpectError([&] { LoadExperiment(Yaml("d1.yaml", "sweep:\n  k: [2]\n  k: [4]\ndecoders: [self-spec]\n")); },
              {"d1.yaml:6: yaml: key 'k' given twice, on lines 5 and 6"});
  ExpectError([&] { LoadExperiment(Yaml("d2.yaml", "name: y\ndecoders: [ar]\n")); },
              {"key 'name' given twice, on lines 1 and 4"});
  ExpectError([&] { LoadExperiment(Yaml("d3.yaml", "decoders: [ar]\n---\nname: other\n")); },
              {"d3.yaml:", "yaml: a second document"});
  const std::string j = Shared().dir + "/d.json";
  WriteFile(j, "{\"name\": \"x\",\n \"models\": [\"" + Shared().model + "\"],\n \"prompts\": {\"file\": \"" +
                   Shared().prompts +
                   "\", \"count\": 2},\n \"repetitions\": 1,\n \"decoders\": [\"ar\"],\n"
                   " \"repetitions\": 7}\n");
  ExpectError([&] { LoadExperiment(j); }, {"d.json:6: json: key 'repetitions' given twice, on lines 4 and 6"});
  // The same key in two different maps is fine.
  EXPECT_NO_THROW(LoadExperiment(Yaml("ok.yaml", "sweep: {k: [2]}\ndecoders: [{decoder: self-spec, k: [3]}]\n")));
}

TEST(ExperimentFiles, HugeGridsAreRefusedBeforeExpansion) {
  // 8 x 8 x 2 x 4 x 4 x 4 x 16 = 131,072 points from a few short lines.
  std::string axes =
      "sweep:\n  k: [1, 2, 3, 4, 5, 6, 7, 8]\n  max_new_tokens: [4, 5, 6, 7, 8, 9, 10, 11]\n"
      "  threads: [1, 2]\n  sampling:\n    temperature: [0.1, 0.2, 0.3, 0.4]\n    top_k: [1, 2, 3, 4]\n"
      "    top_p: [0.5, 0.6, 0.7, 0.8]\n    seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n";
  const std::string p = Yaml("huge.yaml", axes + "decoders: [self-spec]\n");
  const auto t0 = std::chrono::steady_clock::now();
  ExpectError([&] { LoadExperiment(p); },
              {"plans 131072 points (8 max_new_tokens x 4 temperature x 4 top_k x 4 top_p x 16 seed x 2 threads x 8 k)",
               "above the default max_points of 100000"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  // max_points sets the limit.
  const std::string small = "sweep: {k: [1, 2, 3]}\ndecoders: [self-spec]\n";
  ExpectError([&] { LoadExperiment(Yaml("low.yaml", "max_points: 2\n" + small)); },
              {"plans 3 points (3 k), above max_points of 2"});
  EXPECT_EQ(LoadExperiment(Yaml("enough.yaml", "max_points: 3\n" + small)).points.size(), 4u);  // + the baseline
}

// ---------------------------------------------------------------- CLI

TEST(Cli, CheckFailsOnACorruptLineOfResultsOrBaseline) {
  const std::string dir = TempDir();
  RunOptions o;
  o.out_dir = dir;
  o.progress = nullptr;
  RunSummary s = RunExperiment(LoadExperiment(Yaml("c.yaml",
                                                   "sweep: {k: [2], max_new_tokens: 4}\ndecoders: "
                                                   "[self-spec]\n")),
                               o);
  const std::string text = testing::ReadFile(s.jsonl_path), bad = dir + "/bad.jsonl";
  WriteFile(bad, text.substr(0, text.find('\n') + 1) + "{cut\n" + text.substr(text.find('\n') + 1));
  auto ok = RunCli({"check", s.jsonl_path, "--baseline", s.json_path});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  for (auto args : {std::vector<std::string>{"check", bad, "--baseline", s.json_path},
                    std::vector<std::string>{"check", s.json_path, "--baseline", bad}}) {
    auto r = RunCli(args);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(bad + ":2: corrupt line"), std::string::npos) << r.err;
  }
}

TEST(Cli, ArgumentsAreCheckedWithReadableMessages) {
  for (const char* seed : {"-1", "1e26", "18446744073709551616"}) {
    auto r = RunCli({"generate", "--model", Shared().model, std::string("--seed=") + seed});
    EXPECT_NE(r.exit_code, 0) << seed;
    EXPECT_NE(r.err.find("is not an integer in [0, 2^64 - 1]"), std::string::npos) << r.err;
  }
  auto n = RunCli({"generate", "--model", Shared().model, "--max-new-tokens=-3"});
  EXPECT_NE(n.exit_code, 0);
  EXPECT_NE(n.err.find("[0, 2147483647]"), std::string::npos) << n.err;
  EXPECT_LT(n.err.size(), 300u) << n.err;  // no 309-digit bound
  auto sub = RunCli({"genrate", "--model", Shared().model});
  EXPECT_EQ(sub.exit_code, 2);
  EXPECT_NE(sub.err.find("'genrate' is not a command"), std::string::npos) << sub.err;
  auto dev = RunCli({"inspect", "/dev/null"});
  EXPECT_EQ(dev.exit_code, 1);
  EXPECT_NE(dev.err.find("model '/dev/null': not a regular file or a directory"), std::string::npos) << dev.err;
  const std::string fifo = TempDir() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto f = RunCli({"generate", "--model", fifo});
  EXPECT_NE(f.err.find("not a regular file or a directory"), std::string::npos) << f.err;
  // bench-forward refuses bad options before timing anything.
  // A refused value is a usage error (2); one the model or the file system cannot serve, an input error (1).
  struct Case {
    std::vector<std::string> args;
    const char* what;
    int code;
  };
  for (const Case& c : {Case{{"--decode-k", "0"}, "--decode-k: 0 must be at least 1", 2},
                        Case{{"--decode-k", "2", "--decode-tokens", "100000"}, "--decode-tokens: 100000", 1},
                        Case{{"--json", "/nonexistent/dir/x.json"}, "--json: /nonexistent/dir/x.json", 1}}) {
    const auto& [args, what, code] = c;
    std::vector<std::string> cmd = {"bench-forward", Shared().model, "--ctx", "4"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    auto r = RunCli(cmd);
    EXPECT_EQ(r.exit_code, code) << what;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("bench_forward"), std::string::npos) << r.out;  // nothing measured
  }
  auto q = RunCli({"generate", "--model", Shared().model, "--draft-quant", "q2_k", "--decoder", "speculative"});
  EXPECT_NE(q.err.find("q2_k is load-only"), std::string::npos) << q.err;
}

}  // namespace
}  // namespace specsweep
