// Command-line consistency (issue #22): bad values are refused with the option's name,
// options a decoder ignores are errors, one name per concept, --version and help.
// Runs the built binary (SPECSWEEP_BIN) on a synthetic GGUF the test writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "models/gguf.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::CliResult;
using testing::RunCli;

// A tiny random model with a 32-position context, written once per process.
const std::string& TinyModel() {
  static const std::string path = [] {
    ModelConfig c = TinyTestConfig();
    c.max_seq_len = 32;
    Model m = MakeSyntheticModel(c, 21);
    auto tok = MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size));
    const std::string p = testing::TempDir() + "/tiny.gguf";
    WriteGguf(m, *tok, p);
    return p;
  }();
  return path;
}

void ExpectFails(const CliResult& r, const std::string& part) {
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.err.find(part), std::string::npos) << "'" << part << "' not in: " << r.err;
}

nlohmann::json GenerateJson(std::vector<std::string> extra) {
  std::vector<std::string> args = {"generate", "--model", TinyModel(), "--json", "--prompt", "a b"};
  args.insert(args.end(), extra.begin(), extra.end());
  CliResult r = RunCli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(CliRobust, GenerateRefusesNegativeTemperatureLikeTheExperimentFiles) {
  ExpectFails(RunCli({"generate", "--model", TinyModel(), "--temp", "-1"}), "--temp: -1 is out of range");
  ExpectFails(RunCli({"generate", "--model", TinyModel(), "--top-p", "0"}), "--top-p");
}

TEST(CliRobust, SpeculativeOptionsAreRefusedForTheArDecoder) {
  ExpectFails(RunCli({"generate", "--model", TinyModel(), "--decoder", "ar", "--k", "8", "--draft-quant", "q4_0"}),
              "does not apply to --decoder ar");
  ExpectFails(RunCli({"generate", "--model", TinyModel(), "--decoder", "self-spec", "--draft-p-min", "0.5"}),
              "--draft-p-min: applies only to --k-policy threshold");
}

TEST(CliRobust, ThreadCountIsBounded) {
  ExpectFails(RunCli({"--threads", "100000", "inspect", TinyModel()}), "threads: 100000 is out of range");
}

TEST(CliRobust, JsonSaysWhyGenerationStopped) {
  EXPECT_EQ(GenerateJson({"-n", "3", "--no-eos"})["stop_reason"], "max_new_tokens");
  // 32-position context: 600 new tokens cannot fit.
  CliResult r = RunCli({"generate", "--model", TinyModel(), "--json", "--no-eos", "-n", "600"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stop_reason"], "context");
  EXPECT_LT(j["generated_tokens"].get<int>(), 600);
  EXPECT_NE(r.err.find("notice: stopped at the context length (32 positions)"), std::string::npos) << r.err;
}

TEST(CliRobust, NoQuantizationIsNoneEverywhere) {
  EXPECT_EQ(GenerateJson({"-n", "2"})["quant"], "none");
  EXPECT_EQ(GenerateJson({"-n", "2", "--quant", "none"})["quant"], "none");
  EXPECT_EQ(GenerateJson({"-n", "2", "--quant", "Q8_0"})["quant"], "q8_0");
  EXPECT_EQ(RunCli({"inspect", TinyModel(), "--quant", "none"}).exit_code, 0);
}

TEST(CliRobust, ModelIsAnOptionEverywhereAndPositionalStillWorks) {
  CliResult pos = RunCli({"inspect", TinyModel()});
  CliResult opt = RunCli({"inspect", "--model", TinyModel()});
  EXPECT_EQ(pos.exit_code, 0) << pos.err;
  EXPECT_EQ(opt.exit_code, 0) << opt.err;
  EXPECT_EQ(pos.out, opt.out);
  // The file name is the GGUF's general.name: same name, three directories.
  const std::string a = testing::TempDir() + "/q.gguf", b = testing::TempDir() + "/q.gguf",
                    c = testing::TempDir() + "/q.gguf";
  for (auto args :
       std::vector<std::vector<std::string>>{{"quantize", "--model", TinyModel(), "-o", a, "--quant", "q8_0"},
                                             {"quantize", "--model", TinyModel(), "-o", b, "--type",
                                              "q8_0"},  // old name
                                             {"quantize", TinyModel(), c, "--quant", "q8_0"}}) {
    CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(testing::ReadFile(a), testing::ReadFile(b));
  EXPECT_EQ(testing::ReadFile(a), testing::ReadFile(c));
  // bench-forward takes --model (a context beyond the model's stops it before any timing).
  CliResult bench = RunCli({"bench-forward", "--model", TinyModel(), "--n", "1", "--ctx", "100"});
  ExpectFails(bench, "context length 32");
}

TEST(CliRobust, VersionAndHelp) {
  CliResult v = RunCli({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind("specsweep ", 0), 0u) << v.out;
  CliResult h = RunCli({"help"});
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_NE(h.out.find("generate"), std::string::npos) << h.out;
  CliResult hg = RunCli({"help", "generate"});
  EXPECT_EQ(hg.exit_code, 0) << hg.err;
  EXPECT_NE(hg.out.find("--max-new-tokens"), std::string::npos) << hg.out;
  ExpectFails(RunCli({"help", "nope"}), "'nope' is not a command");
}

}  // namespace
}  // namespace specsweep
