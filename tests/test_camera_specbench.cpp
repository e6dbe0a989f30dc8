// Issue #46, item 1 and its part of item 4: `table --table spec-bench` is Spec-Bench's
// leaderboard (method rows under names a Spec-Bench reader knows, Spec-Bench's group
// headers and order, speedup-only cells with the marks of every table, #Mean Accepted
// Tokens and Overall, rows by overall speedup), its speedup is Spec-Bench's ratio of mean
// tokens/s (`spec_bench_speedup`, also in the CSV), and pivot options are not ignored.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/report/aggregate.h"
#include "harness/report/category.h"
#include "harness/report/method_name.h"
#include "harness/report/record.h"
#include "harness/report/table.h"
#include "harness/sweep/questions.h"
#include "tests/record_fixtures.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace specsweep {
namespace {

// Two questions in each of `groups`, in that order.
std::vector<std::string> Categories(const std::vector<std::string>& groups) {
  std::vector<std::string> c;
  for (auto& g : groups) c.insert(c.end(), {g, g});
  return c;
}

// The AR baseline "ar" of a question set: its per-question tokens/s.
json Ar(const std::vector<std::string>& categories, const std::vector<double>& tps) {
  json j = testing::ArPointJson();
  j["per_prompt_category"] = categories;
  j["per_prompt_tokens_per_s"] = tps;
  j["prompts"] = int(categories.size());
  return j;
}

// A speculative point of draft `draft` (its label) at K = `k`, against "ar": its
// per-question tokens/s, τ over every step, and the mean-of-ratios `speedup` (not shown
// by the spec-bench table).
json Spec(const std::string& draft, int k, const std::vector<std::string>& categories, const std::vector<double>& tps,
          double tau = 2.0) {
  return json{{"key", draft + " k" + std::to_string(k)},
              {"name", draft},
              {"model", "m"},
              {"decoder", "speculative"},
              {"k", k},
              {"k_policy", "constant"},
              {"draft", draft},
              {"draft_base", draft},
              {"draft_quant", "none"},
              {"acceptance_source", "measured"},
              {"speedup", 9.0},
              {"speedup_ci_low", 8.9},
              {"speedup_ci_high", 9.1},
              {"suspect", false},
              {"busy", false},
              {"wide_ci", false},
              {"mean_accepted_length", tau},
              {"baseline_key", "ar"},
              {"repetitions", 3},
              {"prompts", int(categories.size())},
              {"per_prompt_category", categories},
              {"per_prompt_tokens_per_s", tps}};
}

// The table of the records, and the cell of the row whose name starts with `method`
// under `header`.
Table Leaderboard(const std::vector<json>& recs, SpecBenchOptions o = {}) {
  return SpecBenchTable(RecordsFromJson(recs), {}, o);
}
std::string Cell(const Table& t, const std::string& method, const std::string& header) {
  const size_t col = std::find(t.header.begin(), t.header.end(), header) - t.header.begin();
  for (auto& row : t.rows)
    if (row[0].starts_with(method) && col < row.size()) return row[col];
  ADD_FAILURE() << "no row " << method << " / column " << header;
  return "";
}
std::vector<std::string> Names(const Table& t) {
  std::vector<std::string> n;
  for (auto& row : t.rows) n.push_back(row[0]);
  return n;
}

const std::vector<std::string> kTwo = Categories({"translation", "RAG"});

TEST(CameraSpecBench, HeaderIsSpecBenchsInItsOrderUnknownGroupsAfter) {
  // Groups as the prompts list them: RAG first, an own group, then three of Spec-Bench's.
  const auto cats = Categories({"RAG", "my group", "math reasoning", "multi-turn conversation", "translation"});
  const std::vector<double> tps(cats.size(), 100);
  const Table t = Leaderboard({Ar(cats, tps), Spec("q4_0", 4, cats, tps)});
  EXPECT_EQ(t.header,
            (std::vector<std::string>{"Models", "Multi-turn Conversation", "Translation", "Mathematical Reasoning",
                                      "Retrieval-aug. Generation", "my group", "#Mean Accepted Tokens", "Overall"}));
  // Every group of the default map (sweep/questions.cpp) gets Spec-Bench's header, in its order.
  const auto all = Categories(SpecBenchGroupOrder());
  const Table full = Leaderboard(
      {Ar(all, std::vector<double>(all.size(), 100)), Spec("q4_0", 4, all, std::vector<double>(all.size(), 100))});
  EXPECT_EQ(full.header, (std::vector<std::string>{"Models", "Multi-turn Conversation", "Translation", "Summarization",
                                                   "Question Answering", "Mathematical Reasoning",
                                                   "Retrieval-aug. Generation", "#Mean Accepted Tokens", "Overall"}));
}

TEST(CameraSpecBench, MethodsHaveSpecBenchNamesAndStayDistinct) {
  auto name = [](const std::string& draft) {
    return MethodName(AggregateRecord::FromJson(Spec(draft, 4, kTwo, {1, 1, 1, 1})));
  };
  EXPECT_EQ(name("model=small"), "SpS");
  EXPECT_EQ(name("model=small+q8_0"), "SpS (Q8_0)");
  EXPECT_EQ(name("lookup+max_ngram=3+min_ngram=1"), "PLD");
  EXPECT_EQ(name("lookahead+window=5+ngram=3+candidates=5"), "Lookahead");
  EXPECT_EQ(name("rest+corpus=wiki.txt+tree_budget=16"), "REST");
  EXPECT_EQ(name("recycling+branching=4,2,2,1"), "Recycling");
  EXPECT_EQ(name("q4_0"), "Self-spec (Q4_0)");
  EXPECT_EQ(name("q4_0+branching=4,2,2,1"), "Self-draft tree (Q4_0)");
  EXPECT_EQ(name("layers=1"), "Early exit (1 layer)");
  EXPECT_EQ(MethodName(AggregateRecord::FromJson(testing::ArPointJson())), "AR");
  // Two points of one method: K tells them apart; a draft setting other than K: the draft.
  std::vector<AggregateRecord> pts = RecordsFromJson(
      {Spec("q4_0", 2, kTwo, {1, 1, 1, 1}), Spec("q4_0", 4, kTwo, {1, 1, 1, 1}),
       Spec("model=small", 4, kTwo, {1, 1, 1, 1}), Spec("lookup+max_ngram=3+min_ngram=1", 4, kTwo, {1, 1, 1, 1}),
       Spec("lookup+max_ngram=2+min_ngram=1", 4, kTwo, {1, 1, 1, 1})});
  EXPECT_EQ(MethodNames(pts), (std::vector<std::string>{"Self-spec (Q4_0, k=2)", "Self-spec (Q4_0, k=4)", "SpS",
                                                        "PLD (draft lookup+max_ngram=3+min_ngram=1)",
                                                        "PLD (draft lookup+max_ngram=2+min_ngram=1)"}));
  // The spec of each row is in a note, or in the row with --long.
  const std::vector<json> recs = {Ar(kTwo, {100, 100, 100, 100}), Spec("q4_0", 4, kTwo, {150, 150, 150, 150})};
  const Table t = Leaderboard(recs);
  EXPECT_EQ(Names(t), std::vector<std::string>{"Self-spec (Q4_0)"});
  EXPECT_NE(RenderTable(t, TableFormat::Markdown).find("methods: Self-spec (Q4_0): draft q4_0, k=4"),
            std::string::npos);
  const Table long_form = Leaderboard(recs, {.intervals = false, .long_names = true});
  EXPECT_EQ(Names(long_form), std::vector<std::string>{"Self-spec (Q4_0) (draft q4_0, k=4)"});
  EXPECT_EQ(RenderTable(long_form, TableFormat::Markdown).find("methods:"), std::string::npos);
}

// Spec-Bench's estimator: the mean of the method's tokens/s over the baseline's mean, not
// the mean of per-question ratios. Baseline 100 and 300 tok/s, method 200 and 300:
// ratios 2 and 1 (mean 1.5), ratio of means 500 / 400 = 1.25.
TEST(CameraSpecBench, SpeedupIsTheRatioOfMeanTokensPerSecond) {
  const std::vector<double> point = {200, 300}, base = {100, 300};
  EXPECT_DOUBLE_EQ(SpecBenchSpeedup(point, base), 1.25);
  // In the aggregate of raw records (one field, beside the mean of ratios `speedup`).
  RawRecord ar, spec;
  ar.key = "B";
  ar.params = json{{"decoder", "ar"}};
  spec.key = "S";
  spec.baseline_key = "B";
  spec.params = json{{"decoder", "speculative"}, {"k", 2}, {"k_policy", "constant"}, {"draft", "q4_0"}};
  ar.prompt_tokens = spec.prompt_tokens = {5, 5};
  spec.costs.target_s = ar.costs.target_s = {0.010, 0.011, 0.012};
  spec.costs.draft_s = {0.001, 0.002};
  for (int rep = 0; rep < 2; ++rep)
    for (int p = 0; p < 2; ++p) {
      GenerationStats b, s;
      b.generated_tokens = s.generated_tokens = 10;
      b.target_calls = 10;
      s.target_calls = 5;
      b.tokens_per_s = base[size_t(p)];
      s.tokens_per_s = point[size_t(p)];
      b.total_s = 10 / b.tokens_per_s, s.total_s = 10 / s.tokens_per_s;
      ar.runs.push_back({p, rep, 2 * rep + p, 0, b, "h"});
      spec.runs.push_back({p, rep, 2 * rep + p, 1, s, "h"});
    }
  const AggregateRecord a = AggregateTyped(spec, &ar);
  EXPECT_DOUBLE_EQ(FieldNumber(a, "spec_bench_speedup"), 1.25);
  EXPECT_DOUBLE_EQ(FieldNumber(a, "speedup"), std::sqrt(2.0));  // every other table's: the geometric mean of 1 and 2
  // Per group in the split by category, and in the table's cells.
  const std::vector<std::string> cats = {"translation", "translation", "RAG", "RAG"};
  const std::vector<json> recs = {Ar(cats, {100, 300, 100, 100}), Spec("q4_0", 4, cats, {200, 300, 300, 100})};
  const std::map<std::string, double> want = {{"translation", 1.25}, {"RAG", 2.0}, {"overall", 1.5}};
  for (auto& g : SplitByCategory(RecordsFromJson(recs))) {
    if (FieldText(g, "decoder") != "speculative") continue;
    EXPECT_DOUBLE_EQ(FieldNumber(g, "spec_bench_speedup"), want.at(FieldText(g, "category")))
        << FieldText(g, "category");
  }
  const Table t = Leaderboard(recs);
  EXPECT_EQ(Cell(t, "Self-spec", "Translation").substr(0, 5), "1.25x");
  EXPECT_EQ(Cell(t, "Self-spec", "Retrieval-aug. Generation").substr(0, 5), "2.00x");
  EXPECT_EQ(Cell(t, "Self-spec", "Overall").substr(0, 5), "1.50x");  // 900 / 600
  EXPECT_EQ(Cell(t, "Self-spec", "#Mean Accepted Tokens"), "2.00");
}

TEST(CameraSpecBench, RowsAreSortedByOverallSpeedupSuspectLast) {
  const std::vector<double> base = {100, 100, 100, 100};
  json suspect = Spec("lookup+max_ngram=3+min_ngram=1", 4, kTwo, {900, 900, 900, 900});
  suspect["suspect"] = true;
  const std::vector<json> recs = {Ar(kTwo, base), Spec("layers=1", 4, kTwo, {120, 120, 120, 120}), suspect,
                                  Spec("q4_0", 4, kTwo, {200, 200, 200, 200}),
                                  Spec("model=small", 4, kTwo, {80, 80, 80, 80})};
  const Table t = Leaderboard(recs);
  EXPECT_EQ(Names(t), (std::vector<std::string>{"Self-spec (Q4_0)", "Early exit (1 layer)", "SpS", "PLD"}));
  // The point the main table calls suspect is suspect here too, in every speedup cell.
  EXPECT_NE(RenderTable(MainTable(RecordsFromJson(recs)), TableFormat::Markdown).find("suspect"), std::string::npos);
  for (const char* h : {"Translation", "Retrieval-aug. Generation", "Overall"}) EXPECT_EQ(Cell(t, "PLD", h), "suspect");
  const std::string md = RenderTable(t, TableFormat::Markdown);
  EXPECT_NE(md.find("_suspect: measured speedup above its bound"), std::string::npos) << md;
}

TEST(CameraSpecBench, CellsCarryTheMarksOfEveryTable) {
  // Busy: † with its note. One or two questions in a group: too few rounds for an interval, ‡.
  const std::vector<std::string> cats = {"translation", "translation", "RAG"};
  json busy = Spec("q4_0", 4, cats, {150, 160, 170});
  busy["busy"] = true;
  Table t = Leaderboard({Ar(cats, {100, 100, 100}), busy});
  EXPECT_EQ(Cell(t, "Self-spec", "Retrieval-aug. Generation"), "1.70x†‡");
  EXPECT_EQ(Cell(t, "Self-spec", "Translation"), "1.55x†‡");
  std::string md = RenderTable(t, TableFormat::Markdown);
  for (const char* note :
       {"_† other processes used the machine", "_‡ 95% interval wider than ±15%", "as few as 1 question"})
    EXPECT_NE(md.find(note), std::string::npos) << note << "\n" << md;
  // Intervals only when asked for.
  EXPECT_EQ(Cell(t, "Self-spec", "Translation").find('['), std::string::npos);
  t = Leaderboard({Ar(cats, {100, 100, 100}), busy}, {.intervals = true});
  EXPECT_NE(Cell(t, "Self-spec", "Translation").find(" ["), std::string::npos) << Cell(t, "Self-spec", "Translation");
  // A replayed point whose realised τ is off its declared source: § on its τ, named replayed.
  json replayed = Spec("q4_0", 4, kTwo, {150, 150, 150, 150});
  replayed["acceptance_source"] = "alpha=0.8";
  replayed["drafted_at_pos"] = {100, 100, 100, 100};
  replayed["acceptance_at_pos_conditional"] = {0.3, 0.3, 0.3, 0.3};
  t = Leaderboard({Ar(kTwo, {100, 100, 100, 100}), replayed});
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_NE(t.rows[0][0].find("replayed"), std::string::npos) << t.rows[0][0];
  EXPECT_EQ(Cell(t, "Self-spec", "#Mean Accepted Tokens"), "2.00§");
}

TEST(CameraSpecBench, LatexKeepsSymbolsInMathMode) {
  const std::vector<std::string> cats = {"translation", "translation", "RAG"};
  json busy = Spec("q4_0", 4, cats, {150, 160, 170});
  busy["busy"] = true;
  const std::string tex =
      RenderTable(Leaderboard({Ar(cats, {100, 100, 100}), busy}, {.intervals = true}), TableFormat::Latex);
  for (const char* raw : {"τ", "±", "†", "‡"}) EXPECT_EQ(tex.find(raw), std::string::npos) << raw << "\n" << tex;
  for (const char* ok : {"\\#Mean Accepted Tokens", "1.55$\\times", "\\dagger", "Self-spec (Q4\\_0)"})
    EXPECT_NE(tex.find(ok), std::string::npos) << ok << "\n" << tex;
}

std::string WriteResults(const std::vector<json>& recs) {
  const std::string path = testing::TempDir() + "/sb.json";
  std::ofstream(path) << json{{"benchmarks", recs}}.dump();
  return path;
}

TEST(CameraSpecBench, PivotOptionsAreAnErrorNotIgnored) {
  const std::string path = WriteResults({Ar(kTwo, {100, 100, 100, 100}), Spec("q4_0", 4, kTwo, {150, 150, 150, 150})});
  for (const char* opt : {"--metric", "--rows", "--cols"}) {
    const auto r = testing::RunCli({"table", path, "--table", "spec-bench", opt, "speedup"});
    EXPECT_NE(r.exit_code, 0) << opt;
    EXPECT_NE(r.err.find(std::string("table: ") + opt + " does not apply to --table spec-bench"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "") << opt;
  }
  // Its own options do not apply to the other tables.
  const auto other = testing::RunCli({"table", path, "--long"});
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("table: --long applies to --table spec-bench only (--table main)"), std::string::npos)
      << other.err;
  // --by category is what the table does anyway; the options of its own apply.
  const auto by =
      testing::RunCli({"table", path, "--table", "spec-bench", "--by", "category", "--intervals", "--long"});
  ASSERT_EQ(by.exit_code, 0) << by.err;
  EXPECT_NE(by.out.find("| Self-spec (Q4_0) (draft q4_0, k=4) |"), std::string::npos) << by.out;
}

TEST(CameraSpecBench, CsvHasSpecBenchSpeedupBesideSpeedup) {
  json p = Spec("q4_0", 4, kTwo, {150, 150, 150, 150});
  p["spec_bench_speedup"] = 1.4;
  json s = Spec("layers=1", 4, kTwo, {150, 150, 150, 150});
  s["spec_bench_speedup"] = 7.0;
  s["suspect"] = true;
  const std::string path = WriteResults({Ar(kTwo, {100, 100, 100, 100}), p, s});
  const auto r = testing::RunCli({"table", path, "--format", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(",speedup,speedup_ci_low,speedup_ci_high,speedup_n,spec_bench_speedup,"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(",9,8.9,9.1,,1.4,"), std::string::npos) << r.out;  // speedup_n absent here
  EXPECT_EQ(r.out.find(",7,"), std::string::npos) << r.out;               // a suspect point's is no result
  // The table's Overall is the point's field.
  const Table t = Leaderboard({Ar(kTwo, {100, 100, 100, 100}), p});
  EXPECT_EQ(Cell(t, "Self-spec", "Overall").substr(0, 5), "1.40x");
}

}  // namespace
}  // namespace specsweep
