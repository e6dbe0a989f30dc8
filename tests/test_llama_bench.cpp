// bench-forward --compare-llama-bench (harness/bench/bench_llama.h): llama-bench's
// arguments and JSON, the user's environment for it, and whole comparisons against a
// stand-in llama-bench that answers as the real one does.
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/bench/bench_llama.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

#define EXPECT_CONTAINS(msg, what) EXPECT_NE((msg).find(what), std::string::npos) << (msg)

TEST(LlamaBench, ArgsTimeTheCallsBenchForwardTimes) {
  LlamaBenchPlan p;
  p.model_file = "m.gguf", p.ns = {1, 2, 8}, p.ctx = 64, p.threads = 2, p.kv_type = "f16";
  const std::vector<std::string> want = {"-m", "m.gguf", "-t",  "2",    "-d",  "64", "-p", "2,8", "-n",
                                         "8",  "-ctk",   "f16", "-ctv", "f16", "-r", "1",  "-o",  "json"};
  EXPECT_EQ(LlamaBenchArgs(p), want);
  p.ns = {8};  // no generation test
  EXPECT_EQ(LlamaBenchArgs(p)[9], "0");
  p.ns = {1};  // no prompt test
  EXPECT_EQ(LlamaBenchArgs(p)[7], "0");
}

// Two tests as llama-bench -o json prints them (fields abridged).
const char* kTwoTests = R"([
  {"build_commit": "abc1234", "build_number": 7001, "cpu_info": "AMD EPYC", "backends": "CPU",
   "model_type": "llama 1B F16", "n_threads": 2, "type_k": "f32", "type_v": "f32", "flash_attn": -1,
   "n_prompt": 8, "n_gen": 0, "n_depth": 64, "avg_ns": 96000000, "samples_ns": [ 96000000 ]},
  {"build_commit": "abc1234", "build_number": 7001, "cpu_info": "AMD EPYC", "backends": "CPU",
   "model_type": "llama 1B F16", "n_threads": 2, "type_k": "f32", "type_v": "f32", "flash_attn": -1,
   "n_prompt": 0, "n_gen": 8, "n_depth": 64, "avg_ns": 400000000, "samples_ns": [ 400000000 ]}
])";

TEST(LlamaBench, ReadsTimePerCallFromItsJson) {
  LlamaBenchPlan p;
  p.ns = {1, 8};
  nlohmann::json ctx;
  const std::map<int, double> ms = ReadLlamaBenchJson(kTwoTests, p, "llama", ctx);
  EXPECT_DOUBLE_EQ(ms.at(1), 50.0);  // 400 ms for 8 single-token calls
  EXPECT_DOUBLE_EQ(ms.at(8), 96.0);
  EXPECT_EQ(ctx.at("git_rev"), "abc1234 (build 7001)");
  EXPECT_EQ(ctx.at("kernel_isa"), "llama.cpp CPU");
  EXPECT_EQ(ctx.at("threads"), 2);
  EXPECT_EQ(ctx.at("type_k"), "f32");
  EXPECT_CONTAINS(testing::ErrorOf([&] { ReadLlamaBenchJson("llama-bench: error", p, "llama", ctx); }),
                  "--compare-llama-bench: variant llama: not llama-bench's JSON");
  p.ns = {1, 2, 8};
  EXPECT_CONTAINS(testing::ErrorOf([&] { ReadLlamaBenchJson(kTwoTests, p, "llama", ctx); }),
                  "llama-bench reported no test for n = 2");
}

TEST(LlamaBench, ItsEnvironmentIsTheUsersNotSpecsweepsDefaults) {
  const std::vector<std::string> defaulted = {"PATH=/bin", "GOMP_SPINCOUNT=1000", "SPECSWEEP_SET_GOMP_SPINCOUNT=1",
                                              "GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
                                              "SPECSWEEP_USER_GLIBC_TUNABLES="};
  EXPECT_EQ(ForeignEnvironment(defaulted), std::vector<std::string>{"PATH=/bin"});
  const std::vector<std::string> users = {"GOMP_SPINCOUNT=5", "GLIBC_TUNABLES=a=1:glibc.malloc.hugetlb=1",
                                          "SPECSWEEP_USER_GLIBC_TUNABLES=a=1"};
  EXPECT_EQ(ForeignEnvironment(users), (std::vector<std::string>{"GOMP_SPINCOUNT=5", "GLIBC_TUNABLES=a=1"}));
}

// A stand-in llama-bench: appends its arguments and GOMP_SPINCOUNT to a log and prints
// a 2-token prompt test of 2 ms and an 8-token generation test of 8 ms.
std::string FakeLlamaBench(const std::string& dir) {
  const std::string script = dir + "/llama-bench";
  std::ofstream(script) << "#!/bin/sh\necho \"$* spin=${GOMP_SPINCOUNT-unset}\" >> " << dir << "/calls.log\n"
                        << "echo '[{\"build_commit\": \"fake\", \"build_number\": 1, \"backends\": \"CPU\", "
                           "\"n_threads\": 1, \"n_prompt\": 2, \"n_gen\": 0, \"samples_ns\": [2000000]}, "
                           "{\"n_prompt\": 0, \"n_gen\": 8, \"samples_ns\": [8000000]}]'\n";
  EXPECT_EQ(0, chmod(script.c_str(), 0755));
  return script;
}

TEST(LlamaBench, ComparedInRoundsOnTheSameFile) {
  const std::string dir = testing::TempDir(), model = dir + "/tiny.gguf";
  testing::WriteTinyGguf(model, 5);
  const std::string fake = FakeLlamaBench(dir);
  const testing::CliResult r =
      testing::RunCli({"--threads", "1", "bench-forward", model, "--n", "1,2", "--reps", "2", "--ctx", "4", "--rounds",
                       "2", "--kv-type", "f16", "--compare-llama-bench", "llama=" + fake, "--json", dir + "/cmp.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_CONTAINS(r.out, "compare: 2 variants x 2 rounds");
  EXPECT_CONTAINS(r.out, "llama/specsweep");
  EXPECT_CONTAINS(r.out, "specsweep tokens/s over llama.cpp tokens/s");
  std::ifstream calls(dir + "/calls.log");
  std::string line;
  int n = 0;
  const bool user_spin = std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr;
  for (; std::getline(calls, line); ++n) {
    EXPECT_EQ(line.substr(0, line.find(" spin=")),
              "-m " + model + " -t 1 -d 4 -p 2 -n 8 -ctk f16 -ctv f16 -r 1 -o json");
    if (!user_spin) {
      EXPECT_CONTAINS(line, "spin=unset");  // specsweep's own default is not llama.cpp's
    }
  }
  EXPECT_EQ(n, 4);  // one call per repetition and round
  std::ifstream f(dir + "/cmp.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("context").at("variants").at(1).at("program"), "llama-bench");
  int llama_records = 0, ratios = 0;
  for (const nlohmann::json& rec : j.at("benchmarks")) {
    const std::string name = rec.at("name");
    if (name.rfind("bench_forward_compare/llama/", 0) == 0) {
      ++llama_records;
      EXPECT_DOUBLE_EQ(rec.at("real_time").get<double>(), name.find("/n:1") != std::string::npos ? 1.0 : 2.0);
      EXPECT_TRUE(rec.at("roofline_fraction").is_null());
    }
    ratios += name.rfind("bench_forward_compare/ratio/llama:specsweep/", 0) == 0;
  }
  EXPECT_EQ(llama_records, 2);
  EXPECT_EQ(ratios, 2);
}

TEST(LlamaBench, OptionsItCannotHonourAreUsageErrors) {
  const std::string dir = testing::TempDir(), model = dir + "/tiny.gguf";
  testing::WriteTinyGguf(model, 5);
  const std::string fake = FakeLlamaBench(dir);
  const testing::CliResult q = testing::RunCli(
      {"bench-forward", model, "--quant", "q4_0", "--kv-type", "f16", "--compare-llama-bench", "llama=" + fake});
  EXPECT_EQ(q.exit_code, 2);
  EXPECT_CONTAINS(q.err, "--compare-llama-bench: llama-bench times the file as it is");
  const testing::CliResult kv = testing::RunCli({"bench-forward", model, "--compare-llama-bench", "llama=" + fake});
  EXPECT_EQ(kv.exit_code, 2);
  EXPECT_CONTAINS(kv.err, "give --kv-type f16 (llama-bench's KV cache types have no f32)");
  const testing::CliResult loop =
      testing::RunCli({"bench-forward", model, "--loop", "--kv-type", "f16", "--compare-llama-bench", "llama=" + fake});
  EXPECT_EQ(loop.exit_code, 2);
  EXPECT_CONTAINS(loop.err, "not with --loop");
  const testing::CliResult missing = testing::RunCli(
      {"bench-forward", dir + "/nowhere.gguf", "--kv-type", "f16", "--compare-llama-bench", "llama=" + fake});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_CONTAINS(missing.err, "llama-bench needs a .gguf file");
}

}  // namespace
}  // namespace specsweep
