// Issue #45, the runtime: the kernel cache and its calibration are never silent (an
// unreadable or unwritable cache is said once, a calibration is announced and left out
// of every timed figure) and the records name the family each of a point's formats ran on.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/measure/process_runtime.h"
#include "harness/pipeline.h"
#include "harness/report/load.h"
#include "harness/report/plot_layout.h"
#include "harness/report/table.h"
#include "harness/store/results.h"
#include "harness/sweep/experiment.h"
#include "quant/kernel_choice.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::CliResult;
using testing::ReadFile;
using testing::RunCli;
using testing::TempDir;
using testing::WriteFile;

using testing::ScopedEnv;

// The environment of a process that chooses families by calibration (the tests run with
// it off), caching under `cache_home`.
struct CalibratingEnv {
  explicit CalibratingEnv(const std::string& cache_home)
      : xdg("XDG_CACHE_HOME", cache_home.c_str()),
        cal("SPECSWEEP_KERNEL_CALIBRATION", "on"),
        isa("SPECSWEEP_KERNEL_ISA", nullptr),
        prefetch("SPECSWEEP_PREFETCH", nullptr) {}
  ScopedEnv xdg, cal, isa, prefetch;
};

bool CanChoose() { return CandidateFamilies().size() >= 2; }

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// First in the file: ProcessRuntime keeps the first choice of the process. A cache that
// puts q4_0 on avx2 (as calibrations on Zen 4/5 do for some formats): every record says
// which family ran each of its formats, and the table's footer and the plots' subtitle
// show it, in the form of the context's kernels.
TEST(SilentRuntime, RecordsAndFooterNameTheFamilyOfEachFormat) {
  if (!CanChoose() || !FindKernelFamily("avx2")) GTEST_SKIP() << "no second kernel family to choose";
  const std::string dir = TempDir();
  CalibratingEnv env(dir);
  json timings = json::object();
  for (QType t : CalibratedTypes())
    for (const KernelFamily* k : CandidateFamilies())
      timings[std::string(QTypeName(t))][k->name] = t == QType::Q4_0 && std::string(k->name) == "avx2" ? 10.0 : 100.0;
  fs::create_directories(KernelCachePath().parent_path());
  WriteFile(KernelCachePath().string(), json{{"cpu", CpuIdentity()},
                                             {"build", BuildIdentity()},
                                             {"threads", 1},
                                             {"prefetch", PrefetchPatternName(PrefetchRule(CpuIdentity()))},
                                             {"timings", timings}}
                                            .dump());
  const std::string base = CandidateFamilies()[0]->name;
  ASSERT_STREQ(ProcessRuntime(1).kernels.per_type[int(QType::Q4_0)]->name, "avx2")
      << "the process's runtime was built before this test";

  const std::string model = dir + "/tiny.gguf", prompts = dir + "/prompts.txt", exp = dir + "/k.yaml";
  testing::WriteTinyGguf(model, 7);
  WriteFile(prompts, "Once upon a time\nThe dog ran\n");
  WriteFile(exp, "name: k\nmodels: [\"" + model + "\"]\nprompts: {file: \"" + prompts +
                     "\", count: 1}\nsweep: {k: 2, max_new_tokens: 4}\ndecoders: [self-spec]\n");
  RunOptions ro;
  ro.out_dir = dir;
  ro.progress = nullptr;
  ro.default_threads = 1;
  const RunSummary s = RunExperiment(LoadExperiment(exp), ro);
  const std::vector<RawRecord> raw = ReadJsonl(s.jsonl_path).records;
  ASSERT_EQ(raw.size(), 2u);
  EXPECT_EQ(raw[0].kernels, (std::map<std::string, std::string>{{"f32", base}})) << "the AR point's target";
  EXPECT_EQ(raw[1].kernels.at("q4_0"), "avx2") << "the self-spec draft's weights";
  EXPECT_EQ(raw[1].kernels.at("f32"), base);
  EXPECT_EQ(raw[1].kernel_isa, base);

  const LoadedRecords res = LoadRecords(s.json_path);
  const std::string label = base + " (q4_0: avx2)";
  const std::string table = RenderTable(MainTable(res.records), TableFormat::Markdown);
  EXPECT_NE(table.find(label + " kernels"), std::string::npos) << table;
  // The subtitle lists the AR point's too: "kernels avx512/avx512 (q4_0: avx2)".
  EXPECT_NE(PlotSubtitle(res.context, res.records).find("/" + label + ";"), std::string::npos)
      << PlotSubtitle(res.context, res.records);

  // Records from before the field load, and show kernel_isa alone.
  json old = RawToJson(raw[1]);
  old.erase("kernels");
  const RawRecord back = RawFromJson(old, "old.jsonl:2");
  EXPECT_TRUE(back.kernels.empty());
  EXPECT_EQ(KernelsLabel(old), base);
  EXPECT_EQ(RawFromJson(RawToJson(raw[1]), "new.jsonl:2").kernels, raw[1].kernels);
}

// A cache file that cannot be used (a field of the wrong type, not JSON, a directory) is
// calibrated again with one line naming it, and rewritten where it can be.
TEST(SilentRuntime, UnreadableKernelCacheIsCalibratedAgainWithANotice) {
  if (!CanChoose()) GTEST_SKIP() << "fewer than two SIMD families: no calibration";
  const std::string dir = TempDir();
  CalibratingEnv env(dir);
  const fs::path path = KernelCachePath();
  fs::create_directories(path.parent_path());
  const json good = {{"cpu", CpuIdentity()}, {"build", BuildIdentity()}, {"threads", 1}};
  json timings_text = good;
  timings_text["timings"] = "fast";
  struct Case {
    std::string contents, reason;
  };
  for (const Case& c :
       {Case{R"({"cpu": 7, "build": "b", "threads": 1})", "field 'cpu' is not a string"},
        Case{timings_text.dump(), "field 'timings' is not an object"}, Case{"{ not json", "not JSON"}}) {
    WriteFile(path.string(), c.contents);
    ::testing::internal::CaptureStderr();
    KernelChoice k;
    EXPECT_NO_THROW(k = KernelChoiceFromEnvironment(1)) << c.contents;
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(Count(err, "\n"), 1u) << err;
    EXPECT_NE(err.find(fmt::format("notice: kernel cache {} is unreadable ({}); calibrating kernels for 1 thread, took",
                                   path.string(), c.reason)),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("cached at " + path.string()), std::string::npos) << err;
    EXPECT_EQ(json::parse(ReadFile(path.string())).at("cpu"), CpuIdentity()) << "rewritten";
    EXPECT_EQ(KernelChoiceFromEnvironment(1).source, "cached in " + path.string());
  }
  fs::remove(path);
  fs::create_directory(path);
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(KernelChoiceFromEnvironment(1));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(fmt::format("kernel cache {} is unreadable (a directory)", path.string())), std::string::npos)
      << err;
  EXPECT_NE(err.find(fmt::format("could not write the cache {} (", path.string())), std::string::npos) << err;
}

// A FIFO where the cache belongs is not opened (that would wait for a writer forever):
// it is named and calibrated past.
TEST(SilentRuntime, KernelCacheThatIsAFifoIsNotOpened) {
  if (!CanChoose()) GTEST_SKIP() << "fewer than two SIMD families: no calibration";
  const std::string dir = TempDir();
  CalibratingEnv env(dir);
  const fs::path path = KernelCachePath();
  fs::create_directories(path.parent_path());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(KernelChoiceFromEnvironment(1));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(fmt::format("kernel cache {} is unreadable (not a regular file", path.string())),
            std::string::npos)
      << err;
  fs::remove(path);
}

// An unwritable cache: every process calibrates again, and says so once (a `run`
// builds its runtime several times).
TEST(SilentRuntime, UnwritableKernelCacheIsSaidOncePerProcess) {
  if (!CanChoose()) GTEST_SKIP() << "fewer than two SIMD families: no calibration";
  const std::string dir = TempDir();
  const std::string not_a_dir = dir + "/file";
  WriteFile(not_a_dir, "x");
  CalibratingEnv env(not_a_dir);
  const std::string model = dir + "/tiny.gguf", prompts = dir + "/prompts.txt", exp = dir + "/u.yaml";
  testing::WriteTinyGguf(model, 7);
  WriteFile(prompts, "Once upon a time\n");
  WriteFile(exp, "name: u\nmodels: [\"" + model + "\"]\nprompts: {file: \"" + prompts +
                     "\", count: 1}\nsweep: {k: 2, max_new_tokens: 4}\ndecoders: [self-spec]\n");
  const CliResult r = RunCli({"--threads", "1", "run", exp, "--out", dir + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.err, "calibrating kernels"), 1u) << r.err;
  EXPECT_NE(r.err.find("could not write the cache " + not_a_dir + "/specsweep/kernels-"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("every process calibrates again"), std::string::npos) << r.err;
}

// A calibration is announced and left out of generate's timed figures: the runtime (and
// its calibration) is built before the model is loaded and before start-up is read, and
// start-up leaves its seconds out. The next process reads the cache: no notice, no seconds.
TEST(SilentRuntime, GenerateLeavesTheCalibrationOutOfItsTimings) {
  if (!CanChoose()) GTEST_SKIP() << "fewer than two SIMD families: no calibration";
  const std::string dir = TempDir();
  CalibratingEnv env(dir + "/cache");
  const std::string model = dir + "/tiny.gguf";
  testing::WriteTinyGguf(model, 7);
  const std::vector<std::string> args = {"--threads", "1", "generate", "--model",  model, "--json",
                                         "-n",        "3", "--no-eos", "--prompt", "a b"};
  const CliResult first = RunCli(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(Count(first.err, "notice: calibrating kernels for 1 thread, took "), 1u) << first.err;
  EXPECT_NE(first.err.find(", cached at " + dir + "/cache/specsweep/kernels-"), std::string::npos) << first.err;
  const json startup = json::parse(first.out).at("startup");
  const double calibration = startup.at("kernel_calibration_s").get<double>();
  EXPECT_GT(calibration, 0.0);
  // The tiny model loads and generates in far less than a calibration takes.
  EXPECT_LT(startup.at("ready_s").get<double>(), calibration) << startup.dump();
  EXPECT_LT(startup.at("first_token_s").get<double>(), calibration) << startup.dump();

  const CliResult again = RunCli(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find("calibrating"), std::string::npos) << again.err;
  EXPECT_EQ(json::parse(again.out).at("startup").at("kernel_calibration_s").get<double>(), 0.0);
}

}  // namespace
}  // namespace specsweep
