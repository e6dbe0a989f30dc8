// Issue #45, the files a measurement reads: a baseline or trace cut short is an error
// naming FILE:LINE, merge keeps one hash per model file in any role, a REST corpus and a
// replayed trace are identified by content (never by folder), a trace replays only under
// the K and tree it was recorded with, and every text input is a bounded regular file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/text_input.h"
#include "decoders/decoder.h"
#include "harness/pipeline.h"
#include "harness/report/check.h"
#include "harness/report/load.h"
#include "harness/store/acceptance_trace.h"
#include "harness/store/merge.h"
#include "harness/store/results.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/point.h"
#include "harness/sweep/prompts.h"
#include "harness/sweep/questions.h"
#include "tests/run_fixtures.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {
namespace {

using testing::ExpectError;
using testing::QuietRun;
using testing::ReadFile;
using testing::RunCli;
using testing::TempDir;
using testing::WriteFile;

const testing::TinyFiles& Files() {
  static const testing::TinyFiles f = testing::MakeTinyFiles(7);
  return f;
}

// An experiment `name` in `dir` over the tiny model: AR and the speculative `decoder`
// lines given (YAML, indented under decoders:).
std::string Exp(const std::string& dir, const std::string& name, const std::string& decoders) {
  const std::string p = dir + "/" + name + ".yaml";
  WriteFile(p, "name: " + name + "\nmodels: [\"" + Files().model + "\"]\nprompts: {file: \"" + Files().prompts +
                   "\", count: 2}\nsweep: {max_new_tokens: 8}\ndecoders:\n  - ar\n" + decoders);
  return p;
}

std::string ErrorOfRun(const std::string& exp, const RunOptions& o) {
  return testing::ErrorOf([&] { RunExperiment(LoadExperiment(exp), o); });
}

// ------------------------------------------------------------- item 3: check

TEST(SilentFiles, CheckRefusesABaselineWhoseLastLineIsCut) {
  const std::string dir = TempDir();
  const RunSummary s =
      RunExperiment(LoadExperiment(Exp(dir, "gate", "  - decoder: self-spec\n    k: [2, 3]\n")), QuietRun(dir));
  const std::string whole = ReadFile(s.jsonl_path);
  ASSERT_EQ(whole.back(), '\n');
  const std::string torn = dir + "/torn.jsonl";
  WriteFile(torn, whole.substr(0, whole.size() - 40));  // the last record loses its end
  const int lines = int(std::count(whole.begin(), whole.end(), '\n'));

  const auto ok = RunCli({"check", s.jsonl_path, "--baseline", s.jsonl_path});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const auto cut = RunCli({"check", s.jsonl_path, "--baseline", torn});
  EXPECT_NE(cut.exit_code, 0) << cut.out;
  EXPECT_NE(cut.err.find(torn + ":" + std::to_string(lines) + ": last line cut off"), std::string::npos) << cut.err;
  EXPECT_EQ(cut.out.find("none regressed"), std::string::npos) << cut.out;

  // A results folder's own cut line is still the resume's to set aside, not an error.
  const JsonlContents c = ReadJsonl(torn);
  EXPECT_EQ(c.torn_line, lines);
  EXPECT_EQ(int(c.records.size()), lines - 1);
  EXPECT_TRUE(c.corrupt.empty());
  EXPECT_EQ(ReadJsonl(s.jsonl_path).torn_line, 0);
}

// ------------------------------------------------------------- item 4: merge

Results Shard(const std::string& path, int index, const json& rec) {
  Results r;
  r.path = path;
  r.context = {{"experiment_sha256", "abc"}, {"shard", {{"index", index}, {"count", 2}, {"experiment_points", 2}}}};
  r.records.push_back(rec);
  return r;
}

json Rec(const std::string& key, const std::string& model, const std::string& draft, const json& files) {
  return {{"key", key}, {"name", key}, {"model", model}, {"draft", draft}, {"model_files", files}};
}

json File(const std::string& role, const std::string& file, const std::string& sha) {
  return {{"role", role}, {"file", file}, {"sha256", sha}};
}

TEST(SilentFiles, MergeRefusesAModelFileWithTwoHashesInTwoRoles) {
  // tiny is the target of one shard and the draft of the other, with other bytes.
  const Results ar = Shard("s0.json", 0, Rec("tiny/ar", "tiny", "-", json::array({File("target", "t.gguf", "aaaa")})));
  const Results spec = Shard("s1.json", 1,
                             Rec("big/spec", "big", "model=tiny",
                                 json::array({File("target", "b.gguf", "cccc"), File("draft", "t.gguf", "bbbb")})));
  ExpectError(
      [&] {
        MergeShards({ar, spec}, {});
      },
      {"s1.json: point big/spec (draft): model tiny's file t.gguf has sha256 bbbb", "point tiny/ar (target) in s0.json",
       "sha256 aaaa"});
  // The same bytes in both roles merge; so do two models whose files share a name.
  const Results same = Shard("s1.json", 1,
                             Rec("big/spec", "big", "model=tiny",
                                 json::array({File("target", "b.gguf", "cccc"), File("draft", "t.gguf", "aaaa")})));
  EXPECT_EQ(MergeShards({ar, same}, {}).report.merged_points, 2u);
  const Results hf0 = Shard("h0.json", 0, Rec("a/ar", "a", "-", json::array({File("target", "model.st", "aaaa")})));
  const Results hf1 = Shard("h1.json", 1,
                            Rec("a/spec", "a", "model=b",
                                json::array({File("target", "model.st", "aaaa"), File("draft", "model.st", "bbbb")})));
  EXPECT_EQ(MergeShards({hf0, hf1}, {}).report.merged_points, 2u);
}

// ------------------------------------------------------------- item 5: identity

TEST(SilentFiles, KeysOfPointsWithoutFilesAreThoseOfTheCommittedBaseline) {
  const Results base = ReadResults(std::string(SPECSWEEP_SOURCE_DIR) + "/results/baseline/quick.json");
  ASSERT_FALSE(base.records.empty());
  for (json r : base.records) {
    const std::string draft = r["draft"];  // the label shows stored types after it: "q8_0 (5 of 36 f16)"
    r["draft"] = draft.substr(0, draft.find(" ("));
    EXPECT_EQ(PointFromParams(r, "baseline").Key(), r["key"].get<std::string>()) << r["name"];
  }
}

TEST(SilentFiles, CorpusAndTraceEnterTheKeyByNameNotFolder) {
  Point a, b;
  a.options.kind = b.options.kind = DecoderKind::Speculative;
  a.options.k = b.options.k = 16;
  a.options.draft = DraftSpec::Make(RestDraft{"/one/folder/corpus.txt"});
  b.options.draft = DraftSpec::Make(RestDraft{"other/corpus.txt"});
  EXPECT_EQ(a.Key(), b.Key());
  EXPECT_EQ(a.Key().find("folder"), std::string::npos) << a.Key();
  a.options.draft = b.options.draft = DraftSpec();
  a.options.acceptance_source = ParseAcceptanceSource("trace=/x/y/rec.jsonl:P/k=4", "t");
  b.options.acceptance_source = ParseAcceptanceSource("trace=rec.jsonl:P/k=4", "t");
  EXPECT_EQ(a.Key(), b.Key());
  EXPECT_NE(a.Key().find(";acc=trace=rec.jsonl:P/k=4"), std::string::npos) << a.Key();
}

// Keyed by file name, two different corpora (or traces) of one name would be one point.
TEST(SilentFiles, TwoFilesOfOneNameInOneExperimentAreRefused) {
  const std::string dir = TempDir();
  std::filesystem::create_directories(dir + "/a");
  std::filesystem::create_directories(dir + "/b");
  WriteFile(dir + "/a/c.txt", "The dog ran home.\n");
  WriteFile(dir + "/b/c.txt", "A cat sat down.\n");
  const std::string two = Exp(dir, "two",
                              "  - decoder: speculative\n    draft: [\"rest+corpus=" + dir +
                                  "/a/c.txt+tree_budget=8\", \"rest+corpus=" + dir + "/b/c.txt+tree_budget=8\"]\n");
  ExpectError([&] { LoadExperiment(two); }, {"two.yaml", "'c.txt' names two REST corpus files", "rename one"});
  // The same file written twice is one corpus.
  const std::string same =
      Exp(dir, "same",
          "  - decoder: speculative\n    draft: [\"rest+corpus=" + dir +
              "/a/c.txt+tree_budget=8\", \"rest+corpus=" + dir + "/a/../a/c.txt+tree_budget=8\"]\n");
  EXPECT_NO_THROW(LoadExperiment(same));
}

constexpr const char* kRest = "  - decoder: speculative\n    draft: [\"rest+corpus=corpus.txt\"]\n    k: [16]\n";

TEST(SilentFiles, AnEditedCorpusIsNotReusedAndAMovedOneStillChecks) {
  const std::string dir = TempDir();
  WriteFile(dir + "/corpus.txt", "Once upon a time there was a dog\nThe dog ran to the big red ball\n");
  const std::string exp = Exp(dir, "rest", kRest);
  const RunSummary first = RunExperiment(LoadExperiment(exp), QuietRun(dir));
  EXPECT_EQ(RunExperiment(LoadExperiment(exp), QuietRun(dir, ResumeMode::Same)).resumed, 2);

  // The same corpus and experiment in another folder: the same points, by content.
  const std::string moved = TempDir();
  fs::copy_file(dir + "/corpus.txt", moved + "/corpus.txt");
  const RunSummary again = RunExperiment(LoadExperiment(Exp(moved, "rest", kRest)), QuietRun(moved));
  EXPECT_EQ(ReadJsonl(again.jsonl_path).records[1].key, ReadJsonl(first.jsonl_path).records[1].key);
  const LoadedRecords base = LoadRecords(first.json_path), cur = LoadRecords(again.json_path);
  EXPECT_TRUE(CheckRegressions(cur.records, base.records, 0.02).ok());

  // Edited: --resume names the corpus and both hashes; check names it too.
  WriteFile(dir + "/corpus.txt", "Something else entirely\n");
  const std::string err = ErrorOfRun(exp, QuietRun(dir, ResumeMode::Same));
  EXPECT_NE(err.find("corpus corpus.txt has sha256"), std::string::npos) << err;
  EXPECT_EQ(RunExperiment(LoadExperiment(exp), QuietRun(dir, ResumeMode::Changed)).measured, 2);  // its group
  ExpectError([&] { CheckRegressions(LoadRecords(first.json_path).records, base.records, 0.02); },
              {"none of its 1 speculative points"});
}

TEST(SilentFiles, AnEditedTraceIsNotReused) {
  const std::string dir = TempDir();
  const RunSummary rec =
      RunExperiment(LoadExperiment(Exp(dir, "rec", "  - decoder: self-spec\n    k: [3]\n")), QuietRun(dir));
  const std::string exp =
      Exp(dir, "rep", "  - decoder: self-spec\n    k: [3]\n    acceptance_source: [\"trace=rec.jsonl\"]\n");
  RunExperiment(LoadExperiment(exp), QuietRun(dir));
  EXPECT_EQ(RunExperiment(LoadExperiment(exp), QuietRun(dir, ResumeMode::Same)).resumed, 2);
  const RawRecord replayed = ReadJsonl(dir + "/rep.jsonl").records[1];
  bool has_trace = false;
  for (auto& f : replayed.identity.model_files) has_trace |= f.role == "trace" && f.file == "rec.jsonl";
  EXPECT_TRUE(has_trace);

  // Every step of the recorded point now accepts nothing.
  std::string text = ReadFile(rec.jsonl_path), out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t nl = text.find('\n', pos);
    json j = json::parse(text.substr(pos, nl - pos));
    if (!j["baseline_key"].get<std::string>().empty())
      for (auto& run : j["runs"])
        for (auto& a : run["stats"]["accepted_per_step"]) a = 0;
    out += j.dump() + "\n";
    pos = nl + 1;
  }
  WriteFile(rec.jsonl_path, out);
  const std::string err = ErrorOfRun(exp, QuietRun(dir, ResumeMode::Same));
  EXPECT_NE(err.find("trace rec.jsonl has sha256"), std::string::npos) << err;
}

// ------------------------------------------------------------- items 8, 9, 13i, 13j: traces

// A trace file of speculative records (one line each): `draft`, k, steps (k, accepted).
std::string TraceLine(const std::string& name, const std::string& draft, int k, const std::string& stats) {
  return json{{"key", name},
              {"baseline_key", "ar"},
              {"name", name},
              {"params", {{"k", k}, {"k_policy", "constant"}, {"draft", draft}}},
              {"runs", json::array({{{"stats", json::parse(stats)}}})}}
      .dump();
}

// Read as it streams (steps taken out while parsed), a committed tree trace gives every
// point's steps and trees exactly as its records hold them.
TEST(SilentFiles, StreamedTraceReadsWhatTheRecordsHold) {
  const std::string path = std::string(SPECSWEEP_SOURCE_DIR) + "/experiments/traces/record_tree_trace_656k.jsonl";
  int points = 0, trees = 0;
  for (const RawRecord& r : ReadJsonl(path).records) {
    if (r.baseline_key.empty()) continue;
    ++points;
    const RecordedTraces t = LoadAcceptanceTraces(path + ":" + r.name, "", "x");
    EXPECT_EQ(t.point, r.name);
    EXPECT_EQ(t.params, r.params);
    ASSERT_EQ(t.runs.size(), r.runs.size());
    for (size_t i = 0; i < r.runs.size(); ++i) {
      const GenerationStats& s = r.runs[i].stats;
      ASSERT_EQ(t.runs[i].size(), s.k_per_step.size());
      for (size_t j = 0; j < s.k_per_step.size(); ++j) {
        EXPECT_EQ(t.runs[i][j].k, s.k_per_step[j]);
        EXPECT_EQ(t.runs[i][j].accepted, s.accepted_per_step[j]);
        const TreeStep& got = t.runs[i][j].tree;
        const TreeStep want = s.tree_per_step.empty() ? TreeStep{} : s.tree_per_step[j];
        trees += !want.parents.empty();
        EXPECT_TRUE(got.parents == want.parents && got.ranks == want.ranks && got.expanded == want.expanded &&
                    got.path == want.path)
            << r.name << " run " << i << " step " << j;
      }
    }
  }
  EXPECT_GE(points, 5);
  EXPECT_GT(trees, 0);
}

TEST(SilentFiles, ACutOrCorruptTraceLineIsAnErrorNamingFileAndLine) {
  const std::string dir = TempDir(), path = dir + "/t.jsonl";
  const std::string a = TraceLine("a", "q4_0", 4, R"({"k_per_step": [4], "accepted_per_step": [1]})");
  const std::string b = TraceLine("b", "q4_0", 4, R"({"k_per_step": [4], "accepted_per_step": [3]})");
  WriteFile(path, a + "\n" + b + "\n");
  ExpectError([&] { LoadAcceptanceTraces(path, "", "x"); }, {"several speculative points"});
  WriteFile(path, a + "\n" + b.substr(0, b.size() - 10));
  ExpectError([&] { LoadAcceptanceTraces(path, "", "x"); }, {path + ":2: the last line is cut off"});
  ExpectError([&] { LoadAcceptanceTraces(path + ":a", "", "x"); }, {path + ":2: the last line is cut off"});
  WriteFile(path, "{\"key\": \n" + a + "\n");
  ExpectError([&] { LoadAcceptanceTraces(path, "", "x"); }, {path + ":1: not a record"});
  WriteFile(path, a + "\n\n");
  EXPECT_EQ(LoadAcceptanceTraces(path, "", "x").runs.at(0).at(0).accepted, 1);
}

TEST(SilentFiles, TraceCountsMustBeIntegers) {
  const std::string path = TempDir() + "/t.jsonl";
  WriteFile(path, TraceLine("a", "q4_0", 4, R"({"k_per_step": [4, 4.7], "accepted_per_step": [1, 2]})") + "\n");
  ExpectError([&] { LoadAcceptanceTraces(path, "", "x"); },
              {path + ":1: point a", "k_per_step[1]: 4.7 is not an integer"});
  WriteFile(path, TraceLine("a", "q4_0", 4, R"({"k_per_step": [4], "accepted_per_step": [4294967297]})") + "\n");
  ExpectError([&] { LoadAcceptanceTraces(path, "", "x"); }, {"accepted_per_step[0]: 4294967297 is not an integer"});
}

DecoderOptions Replaying(const std::string& draft, int k) {
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.draft = ParseDraftSpec(draft, "t");
  o.k = k;
  return o;
}

TEST(SilentFiles, ATraceReplaysOnlyUnderItsOwnKAndTree) {
  const std::string path = TempDir() + "/t.jsonl";
  const std::string tree16 =
      R"({"k_per_step": [2], "accepted_per_step": [1], "tree_per_step": [{"parents": [-1, 0], "ranks": [0, 0], "expanded": [1, 1], "path": [0]}]})";
  WriteFile(path, TraceLine("dyn", "q4_0+tree_budget=16", 16, tree16) + "\n" +
                      TraceLine("static", "q4_0+branching=2,1", 16, tree16) + "\n" +
                      TraceLine("chain", "q4_0", 4, R"({"k_per_step": [4], "accepted_per_step": [1]})") + "\n");
  const RecordedTraces dyn = LoadAcceptanceTraces(path + ":dyn", "", "x");
  const RecordedTraces fixed = LoadAcceptanceTraces(path + ":static", "", "x");
  const RecordedTraces chain = LoadAcceptanceTraces(path + ":chain", "", "x");
  ExpectError([&] { CheckTraceShape(dyn, Replaying("q4_0+tree_budget=4", 16), "x"); },
              {"x: trace: t.jsonl: point dyn was recorded with k=16 (constant), tree_budget=16",
               "the replaying point drafts k=16 (constant), tree_budget=4"});
  ExpectError([&] { CheckTraceShape(fixed, Replaying("q4_0+tree_budget=16", 16), "x"); },
              {"branching=2,1", "tree_budget=16"});
  ExpectError([&] { CheckTraceShape(chain, Replaying("q4_0", 8), "x"); }, {"k=4 (constant), a chain", "k=8"});
  ExpectError([&] { CheckTraceShape(chain, Replaying("q4_0+tree_budget=4", 4), "x"); }, {"a chain", "tree_budget=4"});
  DecoderOptions adaptive = Replaying("q4_0", 4);
  adaptive.k_policy = KPolicy::Adaptive;
  ExpectError([&] { CheckTraceShape(chain, adaptive, "x"); }, {"k=4 (constant)", "k=4 (adaptive)"});
  // The same shape replays, with another draft's weights too.
  CheckTraceShape(dyn, Replaying("q4_0+tree_budget=16", 16), "x");
  CheckTraceShape(chain, Replaying("q8_0", 4), "x");
}

// ------------------------------------------------------------- item 12: endless inputs

TEST(SilentFiles, EveryTextInputIsABoundedRegularFile) {
  const std::string dir = TempDir(), fifo = dir + "/fifo.txt", big = dir + "/big.txt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  WriteFile(big, "x\n");
  fs::resize_file(big, kMaxTextInputBytes + 1);  // sparse: no disk used
  for (const std::string& bad : {std::string("/dev/zero"), fifo}) {
    ExpectError([&] { ReadPromptLines(bad, 1); }, {bad + ": the prompt file is not a regular file"});
    ExpectError([&] { ReadQuestions(bad); }, {bad + ": the question file is not a regular file"});
    ExpectError([&] { ReadTextInput(bad, "passages file"); }, {bad + ": the passages file is not a regular file"});
    ExpectError([&] { LoadAcceptanceTraces(bad, "", "x"); }, {bad + ": the acceptance trace is not a regular file"});
  }
  const auto tok = RunCli({"tokenize", "--model", Files().model, "--file", "/dev/zero"});
  EXPECT_NE(tok.exit_code, 0);
  EXPECT_NE(tok.err.find("/dev/zero: the input file is not a regular file"), std::string::npos) << tok.err;
  ExpectError([&] { ReadPromptLines(big, 1); }, {big + ": the prompt file is 256.0 MiB", "more than the 256.0 MiB"});
  ExpectError([&] { ReadQuestions(big); }, {big + ": the question file is 256.0 MiB"});
  const std::string huge = dir + "/huge.jsonl";
  WriteFile(huge, "");
  fs::resize_file(huge, kMaxTraceBytes + 1);
  ExpectError([&] { LoadAcceptanceTraces(huge, "", "x"); }, {huge + ": the acceptance trace is 4096.0 MiB"});
  // Results files (table, plot, check, merge, --resume) too.
  const std::string link = dir + "/zero.jsonl", fifo_json = dir + "/fifo.json";
  fs::create_symlink("/dev/zero", link);
  ASSERT_EQ(::mkfifo(fifo_json.c_str(), 0600), 0);
  ExpectError([&] { ReadJsonl(link); }, {link + ": the results file is not a regular file"});
  ExpectError([&] { ReadResults(fifo_json); }, {fifo_json + ": the results file is not a regular file"});
  ExpectError([&] { ReadJsonl(huge); }, {huge + ": the results file is 4096.0 MiB"});
  EXPECT_TRUE(ReadJsonl(dir + "/none.jsonl").records.empty());  // nothing recorded yet
}

TEST(SilentFiles, ARestCorpusOrTraceThatNeverEndsIsRefusedBeforeRunning) {
  const std::string dir = TempDir(), fifo = dir + "/fifo.txt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& bad : {std::string("/dev/zero"), fifo}) {
    const std::string exp =
        Exp(dir, "endless", "  - decoder: speculative\n    draft: [\"rest+corpus=" + bad + "\"]\n    k: [16]\n");
    EXPECT_NE(ErrorOfRun(exp, QuietRun(dir)).find(bad + ": the rest corpus is not a regular file"), std::string::npos);
    const std::string replay =
        Exp(dir, "endless", "  - decoder: self-spec\n    k: [3]\n    acceptance_source: [\"trace=" + bad + "\"]\n");
    EXPECT_NE(ErrorOfRun(replay, QuietRun(dir)).find(bad + ": the acceptance trace is not a regular file"),
              std::string::npos);
    // An experiment's prompt or question file: refused when the experiment is read.
    for (const std::string& name : {std::string("prompts"), std::string("questions")}) {
      const std::string link = dir + "/" + name + (name == "prompts" ? ".txt" : ".jsonl");
      fs::remove(link);
      fs::create_symlink(bad, link);
      const std::string p = dir + "/" + name + ".yaml";
      WriteFile(p, "name: x\nmodels: [\"" + Files().model + "\"]\nprompts: {file: \"" + link +
                       "\"}\nsweep: {max_new_tokens: 4}\ndecoders: [ar]\n");
      ExpectError([&] { LoadExperiment(p); },
                  {p + ": prompts.file: " + link + ": the " + (name == "prompts" ? "prompt" : "question") +
                   " file is not a regular file"});
    }
    const auto gen = RunCli({"generate", "--model", Files().model, "--decoder", "speculative", "--draft",
                             "rest+corpus=" + bad, "--k", "16", "-n", "4", "--prompt", "Once upon"});
    EXPECT_NE(gen.exit_code, 0);
    EXPECT_NE(gen.err.find(bad + ": the rest corpus is not a regular file"), std::string::npos) << gen.err;
  }
}

}  // namespace
}  // namespace specsweep
