// Issue #45, the sweep's silent outcomes: every axis counts toward max_points before any
// point is made, tree axes that do not apply to a draft are errors, YAML integers have
// JSON's range, question ids are integers given once, the plan line says what a question
// set runs, and a draft bridged through text says so in the plan, --list and the records.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "harness/pipeline.h"
#include "harness/report/load.h"
#include "harness/store/results.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/questions.h"
#include "harness/sweep/yaml.h"
#include "models/gguf.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;

namespace specsweep {
namespace {

using testing::ErrorOf;
using testing::WriteFile;

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

struct Files {
  std::string dir, model, other_vocab, prompts, corpus;
};
// A model, and one of another vocabulary (160 pieces vs 128).
const Files& F() {
  static Files f = [] {
    const testing::TinyFiles t = testing::MakeTinyFiles(5);
    Files x{t.dir, t.model, "", t.prompts, ""};
    x.other_vocab = x.dir + "/other.gguf";
    ModelConfig c = TinyTestConfig();
    c.vocab_size = 160;
    WriteGguf(MakeSyntheticModel(c, 9), *MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size)), x.other_vocab);
    x.corpus = x.dir + "/corpus.txt";
    WriteFile(x.corpus, "The dog ran home.\n");
    return x;
  }();
  return f;
}

std::string Exp(const std::string& name, const std::string& body) {
  const std::string p = F().dir + "/" + name;
  WriteFile(p, "name: " + fs::path(name).stem().string() + "\nmodels: [\"" + F().model +
                   "\"]\nprompts: {file: prompts.txt, count: 2}\n" + body);
  return p;
}

// ------------------------------------------------------------------ max_points

// 2 k x 3 acceptance sources = 6 speculative points: above max_points 5, though k alone is not.
TEST(SilentSweep, AcceptanceSourceCountsTowardMaxPoints) {
  const std::string body =
      "decoders:\n  - decoder: speculative\n    draft: q4_0\n    k: [2, 4]\n"
      "    acceptance_source: [measured, \"alpha=0.5\", \"alpha=0.8\"]\n";
  EXPECT_HAS(ErrorOf([&] { LoadExperiment(Exp("src.yaml", "max_points: 5\n" + body)); }),
             "decoders[0]: plans 6 points (2 k x 3 acceptance_source), above max_points of 5");
  EXPECT_EQ(LoadExperiment(Exp("src_ok.yaml", "max_points: 6\n" + body)).points.size(), 7u);  // + the baseline
}

// Drafts are counted before they are made (500 x 500 n-gram values would make about
// 127,000 lookup drafts first), and the count is the one the grid makes.
TEST(SilentSweep, DraftAxesAreCountedBeforeTheyAreMade) {
  std::string values;
  for (int i = 0; i < 500; ++i) values += (i ? ", " : "") + std::to_string(1 + i % 64);
  const std::string body = "sweep: {max_ngram: [" + values + "], min_ngram: [" + values +
                           "]}\ndecoders:\n  - decoder: speculative\n    draft: [lookup]\n";
  const std::string err = ErrorOf([&] { LoadExperiment(Exp("ngrams.yaml", body)); });
  EXPECT_HAS(err, "drafts), above the default max_points of 100000");
  // (max, min) in {2, 4} x {1, 3} without (2, 3), each a chain and a tree, and q4_0 at two quant types.
  const std::string small =
      "sweep: {k: 8, max_ngram: [2, 4], min_ngram: [1, 3], tree_budget: [0, 8], draft_quant: [q8_0, q4_0]}\n"
      "decoders:\n  - decoder: speculative\n    draft: [lookup, layers=1]\n";
  EXPECT_HAS(ErrorOf([&] { LoadExperiment(Exp("ngrams_small.yaml", "max_points: 9\n" + small)); }),
             "plans 10 points (10 drafts), above max_points of 9");
  EXPECT_EQ(LoadExperiment(Exp("ngrams_ok.yaml", "max_points: 10\n" + small)).points.size(), 11u);
}

// A grid whose every point was skipped (a model drafting for itself) ran nothing, exit 0.
TEST(SilentSweep, AnEmptyPlanIsAnError) {
  EXPECT_HAS(ErrorOf([] {
               LoadExperiment(
                   Exp("empty.yaml", "decoders:\n  - decoder: speculative\n    draft: \"model=" + F().model + "\"\n"));
             }),
             "empty.yaml: decoders: plans no point: every speculative point has its target as its draft model");
}

// ------------------------------------------------------------------ tree axes

TEST(SilentSweep, TreeAxisThatDoesNotApplyToADraftIsAnError) {
  // Both planned 0 points (or only the baseline), exit 0.
  EXPECT_HAS(ErrorOf([] {
               LoadExperiment(Exp("rec.yaml",
                                  "decoders:\n  - decoder: speculative\n    draft: [recycling]\n"
                                  "    tree_budget: [8, 16]\n"));
             }),
             "rec.yaml: decoders[0].tree_budget: 8 does not apply to the draft 'recycling+branching=4,2,2,1' "
             "(decoders[0].draft): a recycling tree's shape is branching");
  EXPECT_HAS(ErrorOf([] {
               LoadExperiment(Exp("lookup.yaml",
                                  "sweep: {branching: [\"2,2\"]}\n"
                                  "decoders:\n  - decoder: speculative\n    draft: [lookup]\n"));
             }),
             "lookup.yaml: sweep.branching: \"2,2\" does not apply to the draft 'lookup+max_ngram=3+min_ngram=1' "
             "(decoders[0].draft): a lookup tree holds every matching continuation");
  // Mixed drafts: the axis shaped some and dropped or ignored the others.
  EXPECT_HAS(ErrorOf([] {
               LoadExperiment(Exp("mixed.yaml",
                                  "decoders:\n  - decoder: speculative\n    draft: [q4_0, lookahead]\n"
                                  "    tree_budget: [8]\n"));
             }),
             "decoders[0].tree_budget: 8 does not apply to the draft 'lookahead+window=5+ngram=3+candidates=5'");
  EXPECT_HAS(ErrorOf([] {
               LoadExperiment(Exp("rest.yaml",
                                  "decoders:\n  - decoder: speculative\n    draft: [q4_0, \"rest+corpus=corpus.txt\"]\n"
                                  "    tree_budget: [0, 8]\n"));
             }),
             "tree_budget: 0 does not apply to the draft 'rest+corpus=");
  // A tree in the draft's own label is not silently replaced by the axis.
  EXPECT_HAS(ErrorOf([] {
               LoadExperiment(Exp("label.yaml",
                                  "decoders:\n  - decoder: speculative\n    draft: [\"q4_0+tree_budget=8\"]\n"
                                  "    tree_budget: [16]\n    k: 16\n"));
             }),
             "label.yaml: decoders[0].tree_budget: 16 does not apply to the draft 'q4_0+tree_budget=8' "
             "(decoders[0].draft): its label gives its tree already, which the axis would replace");
  // Each draft in an entry of its own: every value shapes every draft.
  Experiment e = LoadExperiment(
      Exp("ok.yaml",
          "sweep: {k: 16}\ndecoders:\n  - decoder: speculative\n    draft: [recycling]\n    branching: [\"2,2\"]\n"
          "  - decoder: speculative\n    draft: [lookup, q4_0]\n    tree_budget: [0, 8]\n"));
  std::set<std::string> labels;
  for (const Point& p : e.points)
    if (p.speculative()) labels.insert(p.options.draft.Label());
  EXPECT_EQ(labels,
            (std::set<std::string>{"recycling+branching=2,2", "lookup+max_ngram=3+min_ngram=1",
                                   "lookup+max_ngram=3+min_ngram=1+tree_budget=8", "q4_0", "q4_0+tree_budget=8"}));
}

// ------------------------------------------------------------------ YAML integers

TEST(SilentSweep, YamlSeedsHaveJsonsRange) {
  for (const char* seed : {"4611686018427387904", "9223372036854775807"}) {  // 2^62, 2^63 - 1
    const std::string body = std::string("sweep: {sampling: {temperature: 0.5, seed: ") + seed + "}}\ndecoders: [ar]\n";
    Experiment e = LoadExperiment(Exp("seed.yaml", body));
    ASSERT_EQ(e.points.size(), 1u);
    EXPECT_EQ(e.points[0].options.sampling.seed, std::stoull(seed));
    const std::string json_path = F().dir + "/seed.json";
    WriteFile(json_path, R"({"name": "s", "models": [")" + F().model + R"("], "prompts": {"file": ")" + F().prompts +
                             R"(", "count": 2}, "sweep": {"sampling": {"temperature": 0.5, "seed": )" + seed +
                             R"(}}, "decoders": ["ar"]})");
    EXPECT_EQ(LoadExperiment(json_path).points[0].options.sampling.seed, e.points[0].options.sampling.seed);
  }
  EXPECT_HAS(ErrorOf([] {
               LoadExperiment(Exp("seed_big.yaml",
                                  "sweep: {sampling: {temperature: 0.5, seed: 9223372036854775808}}\n"
                                  "decoders: [ar]\n"));
             }),
             "sweep.sampling.seed: 9223372036854775808 is out of range [0, 9223372036854775807]");
  WriteFile(F().dir + "/ints.yaml", "a: -9223372036854775808\nb: 18446744073709551615\nc: +12\nd: 1.5\n");
  const nlohmann::json j = ReadYamlAsJson(F().dir + "/ints.yaml");
  EXPECT_EQ(j["a"].get<int64_t>(), INT64_MIN);
  EXPECT_EQ(j["b"].get<uint64_t>(), UINT64_MAX);
  EXPECT_EQ(j["c"], 12);
  EXPECT_TRUE(j["d"].is_number_float());
}

// ------------------------------------------------------------------ question ids

TEST(SilentSweep, QuestionIdsAreIntegersGivenOnce) {
  const std::string dir = testing::TempDir();
  auto read = [&](const std::string& name, const std::string& lines) {
    WriteFile(dir + "/" + name, lines);
    return ErrorOf([&] { ReadQuestions(dir + "/" + name); });
  };
  const std::string q1 = R"({"question_id": 1, "category": "qa", "turns": ["Why?"]})"
                         "\n";
  EXPECT_HAS(read("frac.jsonl", q1 + R"({"question_id": 81.7, "category": "qa", "turns": ["Why?"]})"),
             "frac.jsonl:2: question_id: 81.7 is not an integer");
  EXPECT_HAS(read("big.jsonl", q1 + R"({"question_id": 4294967377, "category": "qa", "turns": ["Why?"]})"),
             "big.jsonl:2: question_id: 4294967377 is out of range [-2147483648, 2147483647]");
  EXPECT_HAS(read("dup.jsonl", q1 + "\n" + q1), "dup.jsonl:3: question_id 1 given twice (first on line 1)");
  EXPECT_EQ(read("ok.jsonl", q1 + R"({"question_id": 2, "category": "qa", "turns": ["How?"]})"), "");
}

// ------------------------------------------------------------------ the plan line

TEST(SilentSweep, PlanLineCountsTheQuestionsThatRun) {
  const std::string qs = F().dir + "/qs.jsonl";
  std::string lines;
  for (int i = 0; i < 6; ++i)
    lines += R"({"question_id": )" + std::to_string(10 + i) + R"(, "category": ")" + (i < 3 ? "qa" : "rag") +
             R"(", "turns": ["Why is the sky blue?"]})" + "\n";
  WriteFile(qs, lines);
  const std::string p = F().dir + "/plan_qs.yaml";
  WriteFile(p, "name: plan_qs\nmodels: [\"" + F().model + "\"]\nprompts: {file: qs.jsonl, per_category: 2}\n" +
                   "template: \"Q: {prompt} A:\"\nrepetitions: 3\nsweep: {max_new_tokens: 2}\ndecoders: [ar]\n");
  const testing::CliResult r = testing::RunCli({"run", p, "-o", F().dir + "/plan_qs_out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Two parts (qa/1, rag/1) of two questions each: a group runs its part's (#47).
  EXPECT_HAS(r.err, "3 repetition(s) x 2 question(s) = 6 rounds per group");
  EXPECT_HAS(r.err, "plan: questions 4 of 6 from " + fs::absolute(qs).string() + " (turns: first)");
  EXPECT_EQ(r.err.find("prompt(s)"), std::string::npos) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(testing::ReadFile(F().dir + "/plan_qs_out/plan_qs.json"));
  EXPECT_EQ(doc["context"]["prompts"]["count"], 4);
  EXPECT_EQ(doc["context"]["prompts"]["file"]["used"], 4);
}

// ------------------------------------------------------------------ bridged drafts

TEST(SilentSweep, BridgedDraftIsNamedInPlanListAndRecords) {
  const std::string p = Exp("bridge.yaml",
                            "sweep: {k: 2, max_new_tokens: 4}\ndecoders:\n  - ar\n  - decoder: speculative\n"
                            "    draft: [q4_0, \"model=" +
                                F().other_vocab + "\"]\n");
  testing::CliResult r = testing::RunCli({"run", p, "--list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "model=" + F().other_vocab);
  EXPECT_HAS(r.out, " (draft tokenizer: bridged through text, 160 vs 128 pieces)\n");
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '('), 1) << r.out;  // the q4_0 and AR points share the vocabulary

  const std::string out = F().dir + "/bridge_out";
  r = testing::RunCli({"run", p, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err, "plan: draft " + F().other_vocab + " has another tokenizer than target " + F().model +
                        " (160 vs 128 pieces): bridged through text in 1 point(s)");
  std::map<std::string, std::string> raw, aggregated;
  for (const RawRecord& rec : ReadJsonl(out + "/bridge.jsonl").records)
    raw[rec.params["draft"].get<std::string>()] = rec.draft_tokenizer;
  for (const auto& rec : LoadRecords(out + "/bridge.json").records)
    aggregated[rec.flat["draft"].get<std::string>()] = rec.flat.value("draft_tokenizer", "");
  const std::map<std::string, std::string> expected = {{"-", ""},
                                                       {"q4_0", "shared"},
                                                       {"model=" + F().other_vocab, "bridged"}};
  EXPECT_EQ(raw, expected);
  EXPECT_EQ(aggregated, expected);
}

}  // namespace
}  // namespace specsweep
