// A results folder belongs to one experiment, one set of model files and one writer:
// resume reuses a group only when it is exactly what the experiment asks for, a second
// writer is refused, corrupt lines are set aside (never lost), write errors say why.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "harness/sweep/experiment.h"
#include "harness/store/results.h"
#include "harness/store/results_dir.h"
#include "harness/pipeline.h"
#include "harness/report/check.h"
#include "harness/report/load.h"
#include "harness/sweep/schedule.h"
#include "base/error.h"
#include "tests/run_fixtures.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;

namespace specsweep {
namespace {

using testing::QuietRun;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

struct Setup {
  std::string dir, model, other_model, prompts;
};
const Setup& Files() {
  static Setup f = [] {
    Setup x;
    x.dir = TempDir();
    x.model = x.dir + "/tiny.gguf";
    testing::WriteTinyGguf(x.model, 7);
    x.other_model = x.dir + "/other.gguf";
    testing::WriteTinyGguf(x.other_model, 8);
    x.prompts = x.dir + "/prompts.txt";
    WriteFile(x.prompts, "Once upon a time\nThe dog ran\nA big red ball\n");
    return x;
  }();
  return f;
}

// Two groups (two models): each a baseline and two self-spec points.
std::string Exp(const std::string& file, const std::string& name, const std::string& model, int reps, int count,
                const std::string& ks = "[2, 3]") {
  const auto& f = Files();
  std::string p = f.dir + "/" + file;
  WriteFile(p, "# comment\nname: " + name + "\nmodels: [\"" + model + "\"]\nprompts: {file: \"" + f.prompts +
                   "\", count: " + std::to_string(count) + "}\nrepetitions: " + std::to_string(reps) +
                   "\nsweep:\n  k: " + ks + "\n  max_new_tokens: 5\ndecoders: [self-spec]\n");
  return p;
}

std::string ErrorOf(const Experiment& e, const RunOptions& o) {
  try {
    RunExperiment(e, o);
  } catch (const Error& err) {
    return err.what();
  }
  return "";
}

TEST(Schedule, GroupsAndRotatingRounds) {
  Experiment e = LoadExperiment(Exp("g.yaml", "g", Files().model, 1, 2));
  auto groups = MakeGroups(e.points);
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups[0].points.size(), 3u);
  EXPECT_FALSE(groups[0].baseline().speculative());
  EXPECT_EQ(RoundOrder(3, 0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(RoundOrder(3, 1), (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(RoundOrder(3, 5), (std::vector<int>{2, 0, 1}));
}

TEST(ResultsIntegrity, RecordsCarryIdentityAndRoundsRotate) {
  Experiment e = LoadExperiment(Exp("id.yaml", "id", Files().model, 2, 2));
  RunSummary s = RunExperiment(e, QuietRun(TempDir()));
  auto recs = ReadJsonl(s.jsonl_path).records;
  ASSERT_EQ(recs.size(), 3u);
  for (auto& r : recs) {
    ASSERT_EQ(r.identity.model_files.size(), 1u);
    EXPECT_EQ(r.identity.model_files[0].role, "target");
    EXPECT_EQ(r.identity.model_files[0].file, "tiny.gguf");
    EXPECT_EQ(r.identity.group.size(), 3u);
    EXPECT_EQ(r.identity.prompt_sha256.size(), 64u);
    EXPECT_EQ(r.identity.experiment_sha256.size(), 64u);
    EXPECT_FALSE(r.kernel_isa.empty());
    ASSERT_EQ(r.runs.size(), 4u);  // 2 prompts x 2 repetitions, one round each
    EXPECT_FALSE(r.costs.target_s.empty());
  }
  // Every round runs the three points once, each in another slot than the round before.
  for (int round = 0; round < 4; ++round) {
    std::set<int> slots;
    for (auto& r : recs)
      for (auto& run : r.runs)
        if (run.round == round) slots.insert(run.slot);
    EXPECT_EQ(slots, (std::set<int>{0, 1, 2}));
  }
  EXPECT_NE(recs[0].runs[0].slot, recs[0].runs[1].slot);
  EXPECT_EQ(recs[1].costs.draft_s.size(), 2u);
}

TEST(ResultsIntegrity, ResumeRefusesChangedExperimentAndNamesTheKey) {
  const std::string dir = TempDir();
  Experiment e1 = LoadExperiment(Exp("r1.yaml", "r", Files().model, 1, 2));
  RunExperiment(e1, QuietRun(dir));
  // A comment or key order does not matter: everything is reused.
  Experiment same = LoadExperiment(Exp("r1b.yaml", "r", Files().model, 1, 2));
  EXPECT_EQ(RunExperiment(same, QuietRun(dir, ResumeMode::Same)).resumed, 3);
  // repetitions 1 -> 2: refused, naming the key.
  Experiment e2 = LoadExperiment(Exp("r2.yaml", "r", Files().model, 2, 2));
  std::string err = ErrorOf(e2, QuietRun(dir, ResumeMode::Same));
  EXPECT_NE(err.find("repetitions: 1 in the results, 2 now"), std::string::npos) << err;
  EXPECT_NE(err.find("--resume=changed"), std::string::npos) << err;
  // prompts.count 2 -> 3: refused, naming the prompts.
  Experiment e3 = LoadExperiment(Exp("r3.yaml", "r", Files().model, 1, 3));
  err = ErrorOf(e3, QuietRun(dir, ResumeMode::Same));
  EXPECT_NE(err.find("prompt"), std::string::npos) << err;
  // --resume=changed re-measures and sets the old records aside.
  RunSummary s = RunExperiment(e2, QuietRun(dir, ResumeMode::Changed));
  EXPECT_EQ(s.measured, 3);
  EXPECT_EQ(s.set_aside, 3);
  EXPECT_EQ(ReadJsonl(s.jsonl_path).records.size(), 3u);
  EXPECT_EQ(ReadJsonl(s.jsonl_path).records[0].repetitions, 2);
  EXPECT_EQ(ReadJsonl(s.jsonl_path + ".replaced").records.size(), 3u);
}

TEST(ResultsIntegrity, SwappedModelFileIsNotReused) {
  const std::string dir = TempDir(), model = TempDir() + "/m.gguf";
  fs::copy_file(Files().model, model);
  Experiment e = LoadExperiment(Exp("sw.yaml", "sw", model, 1, 2));
  RunExperiment(e, QuietRun(dir));
  fs::copy_file(Files().other_model, model, fs::copy_options::overwrite_existing);
  std::string err = ErrorOf(e, QuietRun(dir, ResumeMode::Same));
  EXPECT_NE(err.find("model files: target m.gguf has sha256"), std::string::npos) << err;
}

// #30: a model's identity is its content and file name, never its directory: the same
// weights behind a symlinked models folder resume and pass `check`; other bytes under
// the same name are refused with both hashes.
TEST(ResultsIntegrity, SameWeightsAtAnotherPathAreTheSamePoint) {
  const std::string models = TempDir(), link = TempDir() + "/models-link", dir = TempDir(), dir2 = TempDir();
  fs::copy_file(Files().model, models + "/m.gguf");
  fs::create_directory_symlink(models, link);
  const std::string exp = Exp("mv.yaml", "mv", "m.gguf", 1, 2);
  RunSummary first = RunExperiment(LoadExperiment(exp, models), QuietRun(dir));
  // --resume through the symlink reuses every point.
  EXPECT_EQ(RunExperiment(LoadExperiment(exp, link), QuietRun(dir, ResumeMode::Same)).resumed, 3);
  // A fresh run through the symlink passes check against the first.
  RunSummary second = RunExperiment(LoadExperiment(exp, link), QuietRun(dir2));
  EXPECT_TRUE(CheckRegressions(LoadRecords(second.json_path).records, LoadRecords(first.json_path).records, 0.02).ok());
  // Other bytes under the same name: refused, both hashes named.
  fs::copy_file(Files().other_model, models + "/m.gguf", fs::copy_options::overwrite_existing);
  const std::string err = ErrorOf(LoadExperiment(exp, link), QuietRun(dir, ResumeMode::Same));
  EXPECT_NE(err.find("model files: target m.gguf has sha256 "), std::string::npos) << err;
  EXPECT_NE(err.find("the results were measured with "), std::string::npos) << err;
}

TEST(ResultsIntegrity, AnotherExperimentWithTheSameNameIsRefused) {
  const std::string dir = TempDir();
  RunExperiment(LoadExperiment(Exp("a.yaml", "same", Files().model, 1, 2)), QuietRun(dir));
  Experiment other = LoadExperiment(Exp("b.yaml", "same", Files().other_model, 1, 2));
  std::string err = ErrorOf(other, QuietRun(dir, ResumeMode::Same));
  EXPECT_NE(err.find("does not ask for"), std::string::npos) << err;
  const std::string before = ReadFile(dir + "/same.jsonl");
  EXPECT_EQ(ReadFile(dir + "/same.jsonl"), before);  // nothing appended
}

TEST(ResultsIntegrity, CorruptMiddleLineIsSetAsideAndTheRestKept) {
  const std::string dir = TempDir();
  Experiment e = LoadExperiment(Exp("c.yaml", "c", Files().model, 1, 2, "[2, 3, 4]"));
  RunSummary s = RunExperiment(e, QuietRun(dir));
  std::string text = ReadFile(s.jsonl_path);
  const size_t l1 = text.find('\n') + 1;
  WriteFile(s.jsonl_path, text.substr(0, l1) + "{not json at all\n" + text.substr(l1));
  JsonlContents c = ReadJsonl(s.jsonl_path);
  EXPECT_EQ(c.records.size(), 4u);  // the records after the corrupt line are still read
  ASSERT_EQ(c.corrupt.size(), 1u);
  EXPECT_EQ(c.corrupt[0].first, 2);  // its line number
  s = RunExperiment(e, QuietRun(dir, ResumeMode::Same));
  EXPECT_EQ(s.resumed, 4);
  EXPECT_EQ(s.measured, 0);
  EXPECT_EQ(ReadFile(s.jsonl_path + ".corrupt"), "{not json at all\n");
  EXPECT_EQ(ReadJsonl(s.jsonl_path).corrupt.size(), 0u);
}

// #30: a second, differing record of a point is set aside in .duplicate, not erased.
TEST(ResultsIntegrity, DifferingSecondRecordIsSetAsideAsDuplicate) {
  const std::string dir = TempDir();
  Experiment e = LoadExperiment(Exp("d.yaml", "d", Files().model, 1, 2));
  RunSummary s = RunExperiment(e, QuietRun(dir));
  const std::string text = ReadFile(s.jsonl_path);
  const std::string first = text.substr(0, text.find('\n') + 1);
  std::string other = first;
  const size_t at = other.find("\"total_s\":");
  ASSERT_NE(at, std::string::npos);
  other.insert(at + 10, "1");  // another timing: a differing record of the same point
  WriteFile(s.jsonl_path, text + first + other);
  s = RunExperiment(e, QuietRun(dir, ResumeMode::Same));
  EXPECT_EQ(s.resumed, 3);
  EXPECT_EQ(ReadFile(s.jsonl_path + ".duplicate"), other);  // the identical copy is dropped, the differing kept
  EXPECT_EQ(ReadJsonl(s.jsonl_path).duplicates.size(), 0u);
}

TEST(ResultsIntegrity, SecondWriterIsRefusedWithThePid) {
  const std::string dir = TempDir();
  ResultsDir first(dir, "x");
  try {
    ResultsDir second(dir, "x");
    FAIL() << "a second writer got the lock";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(getpid())), std::string::npos) << e.what();
  }
}

TEST(ResultsIntegrity, UnwritableFolderFailsBeforeMeasuring) {
  if (geteuid() == 0) {
    // root writes anywhere: use a path under a regular file instead.
    const std::string file = TempDir() + "/plain";
    WriteFile(file, "x");
    Experiment e = LoadExperiment(Exp("w.yaml", "w", Files().model, 1, 2));
    std::string err = ErrorOf(e, QuietRun(file + "/out"));
    EXPECT_NE(err.find(file + "/out"), std::string::npos) << err;
    EXPECT_NE(err.find("Not a directory"), std::string::npos) << err;
    return;
  }
  const std::string dir = TempDir();
  chmod(dir.c_str(), 0500);
  std::string err;
  try {
    ResultsDir d(dir, "x");
  } catch (const Error& e) {
    err = e.what();
  }
  chmod(dir.c_str(), 0700);
  EXPECT_NE(err.find("Permission denied"), std::string::npos) << err;
}

}  // namespace
}  // namespace specsweep
