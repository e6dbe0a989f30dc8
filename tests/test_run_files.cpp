// The files of a run (#47): a model missing from the models folder named with the command
// that makes it, or left out by --skip-missing-models (also with --shard and --list); every
// file an experiment names found by one rule (beside it, then the source tree's
// experiments/) and checked before any model loads; the default output folder
// <name>-<UTC time> in $SPECSWEEP_RESULTS or ./results, and --resume continuing the newest.
#include <filesystem>

#include <gtest/gtest.h>

#include "base/build_info.h"
#include "harness/measure/model_store.h"
#include "harness/pipeline.h"
#include "harness/store/results.h"
#include "harness/store/results_dir.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/experiment_files.h"
#include "models/synthetic.h"
#include "tests/run_fixtures.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;

namespace specsweep {
namespace {

using testing::ReadFile;
using testing::RunCli;
using testing::ScopedEnv;
using testing::TempDir;
using testing::WriteFile;

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

constexpr const char* kSynth7b = "synth-llama-2-7b-f16.gguf";

// A models folder holding one tiny model (tiny.gguf) and an experiment over it and
// `other` (absent): an AR baseline and two self-spec points per model.
struct Files {
  std::string dir, models, exp;
};
Files MakeFiles(const std::string& other = kSynth7b) {
  Files f;
  f.dir = TempDir();
  f.models = f.dir + "/models";
  fs::create_directories(f.models);
  testing::WriteTinyGguf(f.models + "/tiny.gguf", 7);
  WriteFile(f.dir + "/prompts.txt", "Once upon a time\nThe dog ran\n");
  f.exp = f.dir + "/two.yaml";
  WriteFile(f.exp, "name: two\nmodels: [tiny.gguf, " + other +
                       "]\nprompts: {file: prompts.txt, count: 2}\nsweep: {max_new_tokens: 4}\n"
                       "decoders:\n  - ar\n  - decoder: self-spec\n    k: [2, 3]\n");
  return f;
}

size_t Lines(const std::string& text, const std::string& prefix) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(prefix, at)) != std::string::npos; ++at)
    if (at == 0 || text[at - 1] == '\n') ++n;
  return n;
}

TEST(RunFiles, AMissingModelIsNamedWithItsFolderAndTheCommandThatMakesIt) {
  const Files f = MakeFiles();
  const std::string out = f.dir + "/out";
  const testing::CliResult r = RunCli({"--models", f.models, "run", f.exp, "-o", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_HAS(r.err, f.exp + ": model 'synth-llama-2-7b-f16.gguf' is not in " + f.models +
                        " (make it: specsweep synth --shape llama-2-7b --type f16 -o " + f.models +
                        "/synth-llama-2-7b-f16.gguf); --skip-missing-models leaves its 3 points out");
  EXPECT_EQ(r.err.find("holds no model folder"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("plan:"), std::string::npos) << r.err;  // stopped before the plan, before any load
  EXPECT_FALSE(fs::exists(out));

  // Another name: where to put it.
  const Files g = MakeFiles("mystery.gguf");
  testing::ExpectError([&] { CheckModelsPresent(LoadExperiment(g.exp, g.models)); },
                       {"model 'mystery.gguf' is not in " + g.models +
                        " (put the checkpoint there or pass --models DIR)"});
  // A synth name is costed by its shape, made or not (the shards do not move).
  EXPECT_GT(SynthFileBytes(kSynth7b), 13e9);
  EXPECT_LT(SynthFileBytes(kSynth7b), 14e9);
  EXPECT_EQ(SynthFileBytes("synth-nosuchshape-f16.gguf"), 0.0);
}

TEST(RunFiles, SkipMissingModelsLeavesTheirPointsOutWithOneLineEach) {
  const Files f = MakeFiles();
  const std::string skipped = "skipped: model 'synth-llama-2-7b-f16.gguf' is not in " + f.models +
                              " (make it: specsweep synth --shape llama-2-7b --type f16 -o " + f.models +
                              "/synth-llama-2-7b-f16.gguf); its 3 points are left out\n";
  testing::CliResult l = RunCli({"--models", f.models, "run", f.exp, "--list", "--skip-missing-models"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(l.err, skipped);
  EXPECT_EQ(Lines(l.out, "model=tiny.gguf;"), 3u) << l.out;
  EXPECT_EQ(l.out.find(kSynth7b), std::string::npos) << l.out;
  EXPECT_HAS(l.out, "\n3 points\n");
  // Without the flag, --list lists every point and notes the missing model.
  l = RunCli({"--models", f.models, "run", f.exp, "--list"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_HAS(l.out, "\n6 points\n");
  EXPECT_HAS(l.err, "note: model 'synth-llama-2-7b-f16.gguf' is not in " + f.models);

  // With --shard: the 7B group is shard 0 (costed by its shape), tiny's is shard 1.
  l = RunCli({"--models", f.models, "run", f.exp, "--list", "--skip-missing-models", "--shard", "0/2"});
  EXPECT_EQ(l.exit_code, 1);
  EXPECT_HAS(l.err, skipped);
  EXPECT_HAS(l.err, "--skip-missing-models: every point needs a missing model (synth-llama-2-7b-f16.gguf)");
  l = RunCli({"--models", f.models, "run", f.exp, "--list", "--shard", "1/2"});
  EXPECT_HAS(l.out, "\n3 points\n");
  EXPECT_EQ(l.err, "");  // this shard's models are all there

  // A tiny real run: only tiny's points measured, the skipped ones recorded as such.
  const std::string out = f.dir + "/out";
  const testing::CliResult r = RunCli({"--models", f.models, "run", f.exp, "-o", out, "--skip-missing-models"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.err, "skipped: "), 1u) << r.err;
  EXPECT_HAS(r.out, "3 points (0 resumed, 3 measured");
  const Results res = ReadResults(out + "/two.json");
  EXPECT_EQ(res.context["skipped_models"],
            nlohmann::json::parse(R"([{"model":"synth-llama-2-7b-f16.gguf","points":3}])"));

  // Sharded: the shard's context counts the points it measured; merge counts the rest missing.
  const std::string sout = f.dir + "/shards";
  const testing::CliResult s =
      RunCli({"--models", f.models, "run", f.exp, "-o", sout, "--skip-missing-models", "--shard", "1/2"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const Results shard = ReadResults(sout + "/two.shard-1-of-2.json");
  EXPECT_EQ(shard.context["shard"]["points"], 3);
  EXPECT_EQ(shard.context["shard"]["experiment_points"], 6);
  const testing::CliResult m = RunCli({"--models", f.models, "merge", sout, "-o", f.dir + "/merged.json"});
  EXPECT_NE(m.exit_code, 0);
  EXPECT_HAS(m.err, "incomplete: 3 of 6 points");
}

// A copy of a shipped recipe elsewhere: its relative prompts/ and traces/ are the source
// tree's; a trace that is nowhere fails when the experiment is read, before any model.
TEST(RunFiles, ACopiedExperimentFindsItsFilesOrFailsBeforeLoading) {
  const std::string dir = TempDir(), empty = dir + "/no-models", src = std::string(SourceDir()) + "/experiments";
  fs::create_directories(empty);
  const std::string copy = dir + "/repro_selfspec_bigdl_quick.yaml";
  fs::copy_file(src + "/repro_selfspec_bigdl_quick.yaml", copy);
  const Experiment e = LoadExperiment(copy, empty);
  EXPECT_EQ(e.prompts.passages, src + "/prompts/passages.txt");
  EXPECT_EQ(FindExperimentFile("traces/record_trace_656k.jsonl", copy, empty).path,
            src + "/traces/record_trace_656k.jsonl");
  testing::CliResult l = RunCli({"--models", empty, "run", copy, "--list"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_HAS(l.out, "acc=trace=record_trace_656k.jsonl:");
  EXPECT_HAS(l.out, "\n4 points\n");

  // Beside the copy first: a traces/ folder there wins.
  fs::create_directories(dir + "/traces");
  fs::copy_file(src + "/traces/record_trace_656k.jsonl", dir + "/traces/record_trace_656k.jsonl");
  EXPECT_EQ(FindExperimentFile("traces/record_trace_656k.jsonl", copy, empty).path,
            dir + "/traces/record_trace_656k.jsonl");

  std::string text = ReadFile(copy);
  text.replace(text.find("traces/record_trace_656k.jsonl"), 30, "traces/nowhere.jsonl");
  WriteFile(copy, text);
  const std::string out = dir + "/out";
  const testing::CliResult r = RunCli({"--models", empty, "run", copy, "-o", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, copy + ": decoders[2].acceptance_source[0]: 'traces/nowhere.jsonl' not found (tried " + dir +
                        "/traces/nowhere.jsonl, " + src + "/traces/nowhere.jsonl");
  EXPECT_EQ(r.err.find("model '"), std::string::npos) << r.err;  // the file, before any model is looked for
  EXPECT_FALSE(fs::exists(out));

  // Prompts and a REST corpus by the same rule, each error naming its key.
  const std::string p = dir + "/p.yaml";
  WriteFile(p, "name: p\nmodels: [tiny.gguf]\nprompts: {file: nowhere.txt}\ndecoders: [ar]\n");
  testing::ExpectError([&] { LoadExperiment(p, empty); }, {p + ": prompts.file: 'nowhere.txt' not found (tried " + dir +
                                                           "/nowhere.txt, " + src + "/nowhere.txt"});
  WriteFile(p,
            "name: p\nmodels: [tiny.gguf]\ndecoders:\n  - decoder: speculative\n    draft: [\"rest+corpus=c.txt\"]\n");
  testing::ExpectError([&] { LoadExperiment(p, empty); },
                       {p + ": decoders[0].draft[0]: 'c.txt' not found (tried " + dir + "/c.txt"});
}

TEST(RunFiles, DefaultOutputFolderIsNamedFirstOutsideTheSourceTree) {
  const Files f = MakeFiles("tiny.gguf");
  WriteFile(f.exp,
            "name: one\nmodels: [tiny.gguf]\nprompts: {file: prompts.txt, count: 2}\n"
            "sweep: {max_new_tokens: 4}\ndecoders: [ar]\n");
  const std::string base = f.dir + "/store";
  {
    ScopedEnv env("SPECSWEEP_RESULTS", base.c_str());
    const testing::CliResult r = RunCli({"--models", f.models, "run", f.exp});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(r.err.starts_with("results: " + base + "/one-")) << r.err;
    const std::string dir = r.err.substr(9, r.err.find('\n') - 9);
    EXPECT_EQ(fs::path(dir).filename().string().size(), std::string("one-20261129T071830Z").size()) << dir;
    EXPECT_TRUE(fs::exists(dir + "/one.json"));
    EXPECT_HAS(r.out, "results: " + dir + "/one.json");
  }
  // Unset: ./results in the current folder.
  ScopedEnv unset("SPECSWEEP_RESULTS", nullptr);
  const fs::path cwd = fs::current_path();
  fs::current_path(f.dir);
  RunOptions o = testing::QuietRun("");
  const RunSummary s = RunExperiment(LoadExperiment(f.exp, f.models), o);
  fs::current_path(cwd);
  EXPECT_TRUE(s.json_path.starts_with("results/one-")) << s.json_path;
  EXPECT_TRUE(fs::exists(f.dir + "/" + s.json_path));
  // Two runs within one second get two folders.
  EXPECT_EQ(NewResultsFolder(f.dir + "/results", "one", 0), f.dir + "/results/one-19700101T000000Z");
  fs::create_directories(f.dir + "/results/one-19700101T000000Z");
  EXPECT_EQ(NewResultsFolder(f.dir + "/results", "one", 0), f.dir + "/results/one-19700101T000000Z-2");
}

TEST(RunFiles, ResumeWithoutOutContinuesTheNewestFolder) {
  const Files f = MakeFiles("tiny.gguf");
  WriteFile(f.exp,
            "name: one\nmodels: [tiny.gguf]\nprompts: {file: prompts.txt, count: 2}\n"
            "sweep: {max_new_tokens: 4}\ndecoders:\n  - ar\n  - decoder: self-spec\n    k: [2]\n");
  const std::string base = f.dir + "/store";
  ScopedEnv env("SPECSWEEP_RESULTS", base.c_str());
  const testing::CliResult first = RunCli({"--models", f.models, "run", f.exp});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string dir = first.err.substr(9, first.err.find('\n') - 9);
  // Decoys: older with the records, newer without them, another experiment's name.
  for (const char* d : {"/one-20000101T000000Z", "/one-extra-29990101T000000Z"}) {
    fs::create_directories(base + d);
    fs::copy_file(dir + "/one.jsonl", base + d + "/one.jsonl");
  }
  fs::create_directories(base + "/one-29990101T000000Z");
  EXPECT_EQ(NewestResultsFolder(base, "one", "one.jsonl"), dir);

  const testing::CliResult again = RunCli({"--models", f.models, "run", f.exp, "--resume"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(again.err.starts_with("results: " + dir + " (--resume: the newest one-* folder in " + base + ")\n"))
      << again.err;
  EXPECT_HAS(again.out, "2 points (2 resumed, 0 measured");
  // Nothing to continue: a new folder, said so.
  EXPECT_EQ(NewestResultsFolder(base, "none", "none.jsonl"), "");
}

}  // namespace
}  // namespace specsweep
