// Issue #47, item 1: a question-set experiment runs in parts (prompts.chunk questions of
// one report group), each part one group of the schedule, so `--shard I/N` balances them
// (a part's cost counts its turns), Ctrl-C loses at most the running part, `--resume`
// measures only the missing parts, and every table reads a method's parts as one record.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/report/aggregate.h"
#include "harness/report/document.h"
#include "harness/report/load.h"
#include "harness/report/parts.h"
#include "harness/report/table.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/point.h"
#include "harness/sweep/shard.h"
#include "tests/test_util.h"

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << text

namespace specsweep {
namespace {

using testing::ErrorOf;
using testing::ReadFile;
using testing::RunCli;
using testing::TempDir;
using testing::WriteFile;

// `n` questions of each category, ids from `first`; MT-bench's "writing" has two turns.
std::string Questions(const std::vector<std::string>& categories, int n, int first = 1) {
  std::string lines;
  int id = first;
  for (const std::string& c : categories)
    for (int i = 0; i < n; ++i, ++id) {
      const std::string q = "Question " + std::to_string(id) + " about " + c + ": why is it so?";
      lines += json{{"question_id", id},
                    {"category", c},
                    {"turns", c == "writing" ? json{q, "Now say it in one line."} : json{q}}}
                   .dump() +
               "\n";
    }
  return lines;
}

// A question-set experiment over `questions` on a model file of `bytes` bytes (only its
// size matters to the shard cost), with the `prompts` keys given.
Experiment QuestionSet(const std::string& questions, const std::string& prompts, const std::string& decoders) {
  const std::string dir = TempDir();
  WriteFile(dir + "/target.bin", std::string(1000, 'x'));
  WriteFile(dir + "/qs.jsonl", questions);
  WriteFile(dir + "/e.yaml", "name: qg\nmodels: [\"" + dir + "/target.bin\"]\nprompts: {file: qs.jsonl, turns: all" +
                                 prompts +
                                 "}\nrepetitions: 2\nsweep: {k: 2, max_new_tokens: 64}\ndecoders: " + decoders + "\n");
  return LoadExperiment(dir + "/e.yaml");
}

// max / mean of the shards' estimated costs.
double Imbalance(const std::vector<double>& loads) {
  double sum = 0, max = 0;
  for (double l : loads) sum += l, max = std::max(max, l);
  return max / (sum / double(loads.size()));
}

// ----------------------------------------------------------------- parts and shards

TEST(QuestionGroups, PartsNameTheirQuestionsInKeyNameAndParams) {
  // 45 translation questions: the default chunk of 20 makes parts of 20, 20 and 5.
  const Experiment e = QuestionSet(Questions({"translation"}, 45), "", "[ar, {decoder: speculative, draft: q4_0}]");
  ASSERT_EQ(e.prompts.parts.size(), 3u);
  EXPECT_EQ(e.prompts.selection.chunk, kDefaultQuestionChunk);
  EXPECT_EQ(e.prompts.parts[2].name, "translation/3");
  EXPECT_EQ(e.prompts.parts[2].ids, (std::vector<int>{41, 42, 43, 44, 45}));
  ASSERT_EQ(e.points.size(), 6u);  // per part: its baseline and the speculative point
  const Point& p = e.points[3];
  EXPECT_TRUE(p.speculative());
  EXPECT_EQ(p.part, "translation/2");
  EXPECT_TRUE(p.Key().ends_with(";part=translation/2")) << p.Key();
  EXPECT_TRUE(p.Name().ends_with("/part=translation/2")) << p.Name();
  EXPECT_EQ(p.ParamsJson()["part"], "translation/2");
  EXPECT_EQ(PointFromParams(p.ParamsJson(), "params").Key(), p.Key());
  EXPECT_EQ(p.Baseline().Key(), e.points[2].Key());  // the part's own baseline
  EXPECT_EQ(KeyWithoutPart(p.Key()), KeyWithoutPart(e.points[1].Key()));

  EXPECT_HAS(ErrorOf([] { QuestionSet(Questions({"qa"}, 2), ", chunk: 0", "[ar]"); }),
             "e.yaml: prompts.chunk: 0 is out of range [1, 100000]");
  const std::string dir = TempDir();
  WriteFile(dir + "/p.txt", "Once upon a time\n");
  WriteFile(dir + "/m.bin", "x");
  WriteFile(dir + "/plain.yaml", "name: plain\nmodels: [\"" + dir +
                                     "/m.bin\"]\nprompts: {file: p.txt, count: 1, chunk: 5}\ndecoders: [ar]\n");
  EXPECT_HAS(ErrorOf([&] { LoadExperiment(dir + "/plain.yaml"); }),
             "prompts.chunk: applies to a question set (a .jsonl prompts.file) only");
}

TEST(QuestionGroups, ShardsBalanceThePartsByTurns) {
  // Two-turn writing (MT-bench) and one-turn translation and qa, 40 each, in parts of 10.
  const Experiment e = QuestionSet(Questions({"writing", "translation", "qa"}, 40), ", chunk: 10",
                                   "[ar, {decoder: speculative, draft: [q4_0, lookup]}]");
  ASSERT_EQ(e.prompts.parts.size(), 12u);
  EXPECT_EQ(e.prompts.parts[0].name, "multi-turn conversation/1");
  EXPECT_EQ(e.prompts.parts[0].turns, 20);
  EXPECT_EQ(e.prompts.parts[4].turns, 10);
  // A two-turn part costs about twice a one-turn part.
  const auto cost = FileCostModel(e);
  const double ratio = cost(e.points[0]) / cost(e.points[4 * 3]);
  EXPECT_GT(ratio, 1.8);
  EXPECT_LT(ratio, 2.2);
  std::set<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    const std::vector<Point> shard = ShardPoints(e, ShardSpec{i, 4});
    EXPECT_FALSE(shard.empty()) << "shard " << i;
    for (const Point& p : shard) {
      EXPECT_TRUE(seen.insert(p.Key()).second) << p.Key();
      // A part's group is whole in its shard.
      EXPECT_TRUE(
          std::any_of(shard.begin(), shard.end(), [&](const Point& q) { return q.Key() == p.Baseline().Key(); }));
    }
  }
  EXPECT_EQ(seen.size(), e.points.size());
  EXPECT_LT(Imbalance(ShardCosts(e, 4)), 1.15);
  // One part per group (a chunk above the group's size): three groups cannot fill four shards.
  const Experiment whole = QuestionSet(Questions({"writing", "translation", "qa"}, 40), ", chunk: 1000",
                                       "[ar, {decoder: speculative, draft: q4_0}]");
  EXPECT_EQ(whole.prompts.parts.size(), 3u);
  EXPECT_TRUE(ShardPoints(whole, ShardSpec{3, 4}).empty());
}

// The full Spec-Bench file: `--shard I/4 --list` gives four non-empty shards of balanced
// cost (models `target` and `draft` need only exist for --list).
TEST(QuestionGroups, SpecBenchYamlShardsIntoFourBalancedShards) {
  const std::string questions = testing::SharedFile("prompts/spec-bench/question.jsonl");
  if (questions.empty()) GTEST_SKIP() << "no shared Spec-Bench question file";
  const std::string dir = TempDir(), models = dir + "/models";
  fs::create_directories(models + "/target");
  fs::create_directories(models + "/draft");
  testing::WriteTinyGguf(models + "/target/model.gguf", 1);
  testing::WriteTinyGguf(models + "/draft/model.gguf", 2);
  fs::create_directories(dir + "/prompts/spec-bench");  // the shared data folder: the models folder's parent
  fs::copy_file(questions, dir + "/prompts/spec-bench/question.jsonl");
  const std::string yaml = std::string(SPECSWEEP_SOURCE_DIR) + "/experiments/spec_bench.yaml";
  const Experiment e = LoadExperiment(yaml, models);
  EXPECT_EQ(e.prompts.parts.size(), 24u);  // 6 groups x 80 questions in parts of 20
  EXPECT_EQ(e.points.size(), 24u * 5);
  size_t listed = 0;
  for (int i = 0; i < 4; ++i) {
    const auto r = RunCli({"--models", models, "run", yaml, "--shard", std::to_string(i) + "/4", "--list"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.rfind('\n', r.out.size() - 2);
    const int n = std::stoi(r.out.substr(at == std::string::npos ? 0 : at + 1));
    EXPECT_GT(n, 0) << "shard " << i;
    listed += size_t(n);
  }
  EXPECT_EQ(listed, e.points.size());
  const std::vector<double> loads = ShardCosts(e, 4);
  for (double l : loads) std::printf("shard cost %.4g\n", l);
  std::printf("max/mean %.4f\n", Imbalance(loads));
  EXPECT_LT(Imbalance(loads), 1.10);
}

// ----------------------------------------------------------------- interrupt and resume

// Lines of a file (0 when it does not exist yet).
size_t Lines(const std::string& path) {
  std::ifstream f(path);
  size_t n = 0;
  for (std::string l; std::getline(f, l);) n += !l.empty();
  return n;
}

// The keys of a results .jsonl, and each record's output hashes (greedy: equal runs).
std::map<std::string, std::vector<std::string>> Outputs(const std::string& jsonl) {
  std::map<std::string, std::vector<std::string>> out;
  std::ifstream f(jsonl);
  for (std::string l; std::getline(f, l);) {
    if (l.empty()) continue;
    const json r = json::parse(l);
    auto& hashes = out[r["key"].get<std::string>()];
    for (const json& run : r["runs"]) hashes.push_back(run.dump());
  }
  return out;
}

// Ctrl-C once the first part's group is stored: every stored group is whole, at most one
// is lost, and --resume measures the missing parts only, ending with the points of an
// uninterrupted run.
TEST(QuestionGroups, CtrlCLosesAtMostOnePartAndResumeCompletes) {
  const std::string dir = TempDir();
  auto w = RunCli({"synth", "--shape", "tiny", "-c", "512", "--tokenizer", "synthetic", "-o", dir + "/tiny.gguf"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  WriteFile(dir + "/qs.jsonl", Questions({"translation", "qa"}, 4));
  WriteFile(dir + "/qg.yaml", "name: qg\nmodels: [" + dir +
                                  "/tiny.gguf]\nprompts: {file: qs.jsonl, chunk: 1}\n"
                                  "repetitions: 10\nwarmup: 0\nsweep: {k: 2, max_new_tokens: 200}\n"
                                  "decoders: [ar, {decoder: speculative, draft: q4_0}]\n");
  const std::string out = dir + "/out", jsonl = out + "/qg.jsonl", err = dir + "/err";
  const pid_t pid = testing::SpawnCli({"run", dir + "/qg.yaml", "-o", out}, "", err);
  ASSERT_GT(pid, 0);
  const auto until = std::chrono::steady_clock::now() + 300s;
  int status = 0;
  bool ended = false;
  while (Lines(jsonl) < 2 && std::chrono::steady_clock::now() < until && !ended)
    if (waitpid(pid, &status, WNOHANG) == pid)
      ended = true;
    else
      std::this_thread::sleep_for(5ms);
  ASSERT_FALSE(ended) << "run ended before its first part was stored: " << ReadFile(err);
  ASSERT_EQ(kill(pid, SIGINT), 0);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string msg = ReadFile(err);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << msg;
  EXPECT_HAS(msg, "interrupted: ");
  EXPECT_HAS(msg, "lost: group ");
  EXPECT_HAS(msg, "/part=");  // the lost group names its part
  // Whole groups only: each stored part has its baseline and its speculative point.
  const auto kept = Outputs(jsonl);
  ASSERT_GE(kept.size(), 2u);
  ASSERT_LT(kept.size(), 16u);
  std::map<std::string, int> per_part;
  for (auto& [key, runs] : kept) {
    ++per_part[key.substr(key.rfind(";part="))];
    EXPECT_EQ(runs.size(), 10u) << key;  // every round of the part
  }
  for (auto& [part, n] : per_part) EXPECT_EQ(n, 2) << part;
  const std::string kept_text = ReadFile(jsonl);

  auto r = RunCli({"run", dir + "/qg.yaml", "-o", out, "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err, "resume: " + std::to_string(kept.size()) + " of 16 points (" + std::to_string(per_part.size()) +
                        " of 8 groups) reused");
  EXPECT_EQ(ReadFile(jsonl).substr(0, kept_text.size()), kept_text);  // the kept parts, untouched
  auto whole = RunCli({"run", dir + "/qg.yaml", "-o", dir + "/whole"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const auto resumed = Outputs(jsonl), uninterrupted = Outputs(dir + "/whole/qg.jsonl");
  ASSERT_EQ(resumed.size(), 16u);
  std::vector<std::string> a, b;
  for (auto& [k, runs] : resumed) a.push_back(k);
  for (auto& [k, runs] : uninterrupted) b.push_back(k);
  EXPECT_EQ(a, b);
  // The tables read one record per method over all eight questions.
  const LoadedRecords res = LoadRecords(out + "/qg.json");
  ASSERT_EQ(res.records.size(), 2u);
  for (const AggregateRecord& rec : res.records) {
    EXPECT_EQ(rec.identity.prompts, 8);
    EXPECT_EQ(rec.statistics.per_prompt_category.size(), 8u);
    EXPECT_EQ(rec.identity.key.find("part="), std::string::npos);
  }
  EXPECT_EQ(res.records[1]["prompt_set"]["question_ids"], json({1, 2, 3, 4, 5, 6, 7, 8}));
}

// ----------------------------------------------------------------- the tables

// Two rounds per question of translation and RAG (two questions each): the raw records of
// AR and a q4_0 point, either whole or in parts of one question (each part its own
// baseline, as a run in parts measures them), with the same runs.
std::vector<RawRecord> Measured(bool in_parts) {
  const std::vector<std::string> cats = {"translation", "translation", "RAG", "RAG"};
  const std::vector<double> ar_tps = {100, 300, 120, 80}, spec_tps = {200, 330, 300, 100};
  Point spec;
  spec.model = "m";
  spec.options.kind = DecoderKind::Speculative;
  spec.options.draft = ParseDraftSpec("q4_0", "draft");
  spec.options.k = 4;
  std::vector<RawRecord> out;
  const int parts = in_parts ? 4 : 1;
  for (int part = 0; part < parts; ++part) {
    Point s = spec;
    if (in_parts) s.part = cats[size_t(part)] + "/" + std::to_string(part % 2 + 1);
    const Point a = s.Baseline();
    RawRecord ar, sp;
    for (auto [r, p] : {std::pair<RawRecord*, const Point*>{&ar, &a}, {&sp, &s}}) {
      r->key = p->Key();
      r->baseline_key = p->speculative() ? a.Key() : "";
      r->name = p->Name();
      r->params = p->ParamsJson();
      r->repetitions = 2;
      r->costs.target_s = {0.01, 0.011};
    }
    sp.costs.draft_s = {0.001};
    const int first = in_parts ? part : 0, n = in_parts ? 1 : 4;
    for (RawRecord* r : {&ar, &sp}) {
      json ids = json::array();
      for (int q = first; q < first + n; ++q) {
        r->prompt_tokens.push_back(10);
        r->prompt_categories.push_back(cats[size_t(q)]);
        ids.push_back(q + 1);
      }
      r->prompt_set = {{"file", "qs.jsonl"}, {"question_ids", ids}};
    }
    for (int rep = 0; rep < 2; ++rep)
      for (int q = first; q < first + n; ++q) {
        GenerationStats b, g;
        b.generated_tokens = g.generated_tokens = 20;
        b.target_calls = 20;
        g.target_calls = 8;
        b.tokens_per_s = ar_tps[size_t(q)] * (1 + 0.1 * rep);
        g.tokens_per_s = spec_tps[size_t(q)] * (1 + 0.05 * rep);
        b.total_s = 20 / b.tokens_per_s, g.total_s = 20 / g.tokens_per_s;
        const int i = q - first, round = rep * n + i;
        ar.runs.push_back({i, rep, round, 0, b, "h" + std::to_string(q)});
        sp.runs.push_back({i, rep, round, 1, g, "h" + std::to_string(q)});
      }
    out.push_back(std::move(ar));
    out.push_back(std::move(sp));
  }
  return out;
}

TEST(QuestionGroups, SpecBenchTableMergesAMethodsParts) {
  const std::vector<AggregateRecord> parts = AggregateAllTyped(Measured(true)),
                                     whole = AggregateAllTyped(Measured(false));
  ASSERT_EQ(parts.size(), 8u);
  const std::vector<AggregateRecord> merged = MergeQuestionParts(parts);
  ASSERT_EQ(merged.size(), 2u);  // AR and q4_0, each over the four questions
  const AggregateRecord &m = merged[1], &w = whole[1];
  EXPECT_EQ(m.identity.key, w.identity.key);
  EXPECT_EQ(m.identity.baseline_key, w.identity.baseline_key);
  EXPECT_EQ(m.identity.name, w.identity.name);
  EXPECT_EQ(m.identity.prompts, 4);
  EXPECT_EQ(m.statistics.per_prompt_category, w.statistics.per_prompt_category);
  EXPECT_EQ(m["prompt_set"]["question_ids"], json({1, 2, 3, 4}));
  EXPECT_EQ(m["prompt_set"]["parts"], json({"translation/1", "translation/2", "RAG/1", "RAG/2"}));
  for (const char* f :
       {"speedup", "spec_bench_speedup", "tokens_per_s", "mean_accepted_length", "baseline_tokens_per_s"})
    EXPECT_NEAR(FieldNumber(m, f), FieldNumber(w, f), 1e-9) << f;
  EXPECT_EQ(m["drafted_at_pos"], w["drafted_at_pos"]);
  // Spec-Bench's table: one row over every question, equal to the whole run's.
  const std::string from_parts = RenderTable(SpecBenchTable(parts), TableFormat::Markdown),
                    from_whole = RenderTable(SpecBenchTable(whole), TableFormat::Markdown);
  EXPECT_EQ(from_parts, from_whole);
  EXPECT_EQ(SpecBenchTable(parts).rows.size(), 1u);
  // The same from two shard files merged by `merge`, read by `table`.
  const std::string dir = TempDir();
  const std::vector<RawRecord> raw = Measured(true);
  for (int s = 0; s < 2; ++s) {
    json context = {{"experiment", "qg"},
                    {"schema_version", kResultsSchemaVersion},
                    {"experiment_sha256", "abc"},
                    {"shard", {{"index", s}, {"count", 2}, {"points", 4}, {"experiment_points", 8}}}};
    WriteFile(dir + "/qg.shard-" + std::to_string(s) + "-of-2.json",
              ResultsDocument(context, {raw.begin() + 4 * s, raw.begin() + 4 * s + 4}).dump());
  }
  auto m2 = RunCli({"merge", dir + "/qg.shard-0-of-2.json", dir + "/qg.shard-1-of-2.json", "-o", dir + "/qg.json"});
  ASSERT_EQ(m2.exit_code, 0) << m2.err;
  auto t = RunCli({"table", dir + "/qg.json", "--table", "spec-bench"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.out, from_whole);
  // The main table: one row for the method, not one per part.
  auto main_table = RunCli({"table", dir + "/qg.json"});
  ASSERT_EQ(main_table.exit_code, 0) << main_table.err;
  EXPECT_EQ(main_table.out.find("part="), std::string::npos) << main_table.out;
  EXPECT_EQ(MainTable(LoadRecords(dir + "/qg.json").records).rows.size(), MainTable(whole).rows.size());
}

}  // namespace
}  // namespace specsweep
