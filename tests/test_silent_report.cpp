// Issue #45, the report's part: what a table, a plot legend or generate's τ says is what
// ran. A category named "overall" or "" is refused, cells are escaped in every format,
// acceptance sources are never averaged together, autoregressive τ is 1 (absent when
// nothing was generated), and a draft bridged through text says so.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/report/aggregate.h"
#include "harness/report/category.h"
#include "harness/report/plot.h"
#include "harness/report/record.h"
#include "tests/record_fixtures.h"
#include "harness/report/table.h"
#include "harness/sweep/questions.h"
#include "models/gguf.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace specsweep {
namespace {

using testing::ExpectError;

// A speculative record of a self-draft (or of `base` as a separate draft) at K = `k`.
json Point(const std::string& base, int k, double speedup, double acceptance = 0.7) {
  const std::string model = base == "self" ? "self" : "model=" + base, draft = base == "self" ? "q4_0" : model;
  return json{{"key", base + std::to_string(k) + std::to_string(acceptance)},
              {"name", base + " k=" + std::to_string(k)},
              {"model", "m"},
              {"decoder", "speculative"},
              {"k", k},
              {"k_policy", "constant"},
              {"draft", draft},
              {"draft_base", model},
              {"draft_quant", base == "self" ? "q4_0" : "none"},
              {"acceptance_source", "measured"},
              {"speedup", speedup},
              {"speedup_ci_low", speedup - 0.1},
              {"speedup_ci_high", speedup + 0.1},
              {"mean_accepted_length", 2.5},
              {"acceptance_rate", acceptance},
              {"mean_next_token_latency_s", 0.01 / speedup},
              {"latency_speedup", speedup},
              {"baseline_key", "ar"},
              {"kernel_isa", "avx2"},
              {"threads_used", 2},
              {"repetitions", 3},
              {"prompts", 4}};
}

// Each line of a Markdown table has as many cell borders (unescaped "|") as its header.
void ExpectColumnsAligned(const std::string& md) {
  auto borders = [](const std::string& line) {
    size_t n = 0;
    for (size_t i = 0; i < line.size(); ++i) n += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    return n;
  };
  size_t header = 0;
  size_t at = 0;
  while (at < md.size()) {
    const size_t end = md.find('\n', at);
    const std::string line = md.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? md.size() : end + 1;
    if (line.empty() || line[0] != '|') continue;
    if (!header) header = borders(line);
    EXPECT_EQ(borders(line), header) << line << "\n" << md;
  }
  EXPECT_GT(header, 0u) << md;
}

// --- 7: categories -------------------------------------------------------------------

TEST(SilentReport, CategoryOverallOrEmptyIsRefusedAtLoadWithFileAndLine) {
  const std::string dir = testing::TempDir();
  testing::WriteFile(dir + "/overall.jsonl",
                     "{\"question_id\": 1, \"category\": \"writing\", \"turns\": [\"a\"]}\n"
                     "{\"question_id\": 2, \"category\": \"overall\", \"turns\": [\"b\"]}\n");
  ExpectError([&] { ReadQuestions(dir + "/overall.jsonl"); }, {"overall.jsonl:2: category", "'overall' is reserved"});
  testing::WriteFile(dir + "/empty.jsonl", "{\"question_id\": 1, \"category\": \"\", \"turns\": [\"a\"]}\n");
  ExpectError([&] { ReadQuestions(dir + "/empty.jsonl"); }, {"empty.jsonl:1: category: empty"});
  // A group map may not name the reserved group either.
  testing::WriteFile(dir + "/ok.jsonl", "{\"question_id\": 1, \"category\": \"writing\", \"turns\": [\"a\"]}\n");
  QuestionSelection s;
  s.groups = {{"writing", "overall"}};
  ExpectError([&] { SelectQuestions(ReadQuestions(dir + "/ok.jsonl"), s, "exp.yaml"); },
              {"exp.yaml: prompts.groups.writing", "'overall' is reserved"});
  s.groups = {{"writing", "a|b"}};  // any other name is fine: tables escape it
  EXPECT_EQ(SelectQuestions(ReadQuestions(dir + "/ok.jsonl"), s, "exp.yaml").at(0).group, "a|b");
}

// A record of a question set whose prompts carry `categories`.
json CategorizedPoint(const std::vector<std::string>& categories) {
  json j = Point("self", 4, 1.5);
  j["name"] = "qs";
  j["per_prompt_category"] = categories;
  j["per_prompt_speedup"] = std::vector<double>(categories.size(), 1.5);
  j["per_prompt_mean_accepted_length"] = std::vector<double>(categories.size(), 2.5);
  j["speedup"] = 1.5;
  return j;
}

TEST(SilentReport, CategoryOverallInResultsIsAnErrorNotASecondColumn) {
  const auto recs = RecordsFromJson({CategorizedPoint({"overall", "writing"})});
  ExpectError([&] { SpecBenchTable(recs); }, {"point qs", "'overall' is reserved"});
  ExpectError([&] { SplitByCategory(recs); }, {"point qs", "'overall'"});
  const auto empty = RecordsFromJson({CategorizedPoint({"", "writing"})});
  ExpectError([&] { SpecBenchTable(empty); }, {"point qs", "category is empty"});
}

TEST(SilentReport, CellsAreEscapedInMarkdownLatexAndCsv) {
  const auto recs = RecordsFromJson({CategorizedPoint({"a|b", "c\nd", "plain"})});
  const Table t = SpecBenchTable(recs);
  const std::string md = RenderTable(t, TableFormat::Markdown);
  ExpectColumnsAligned(md);
  EXPECT_NE(md.find("a\\|b"), std::string::npos) << md;
  EXPECT_NE(md.find("c d"), std::string::npos) << md;
  const std::string tex = RenderTable(t, TableFormat::Latex);
  EXPECT_NE(tex.find("a\\textbar{}b"), std::string::npos) << tex;
  EXPECT_EQ(tex.find("c\nd"), std::string::npos) << tex;
  const std::string csv = RenderTable(t, TableFormat::Csv);
  EXPECT_NE(csv.find("\"c\nd\""), std::string::npos) << csv;  // quoted: one field
  Table cr;
  cr.header = {"x"};
  cr.rows = {{"a\rb"}};
  EXPECT_EQ(RenderTable(cr, TableFormat::Csv), "x\n\"a\rb\"\n");
}

// --- 13f: acceptance sources are never averaged ----------------------------------------

TEST(SilentReport, PivotSplitsAcceptanceSourcesInsteadOfAveragingThem) {
  json measured = Point("self", 4, 1.5, 0.7), replayed = Point("self", 4, 1.8, 0.9);
  replayed["acceptance_source"] = "alpha=0.9";
  PivotSpec p;
  p.rows = {"k"};
  p.cols = {"model"};
  p.metrics = {"acceptance_rate"};
  const Table t = PivotTable(RecordsFromJson({measured, replayed}), p);
  const std::string md = RenderTable(t, TableFormat::Markdown);
  ASSERT_EQ(t.rows.size(), 2u) << md;                    // a row per source
  EXPECT_EQ(md.find("0.800"), std::string::npos) << md;  // no mean of 0.7 and 0.9
  EXPECT_EQ(md.find("0*"), std::string::npos) << md;     // no averaged cell
  EXPECT_NE(md.find("0.700"), std::string::npos) << md;
  EXPECT_NE(md.find("0.900"), std::string::npos) << md;
  EXPECT_NE(md.find("measured"), std::string::npos) << md;
  EXPECT_NE(md.find("replayed"), std::string::npos) << md;
  // Asked as columns, the sources are the columns.
  p.cols = {"acceptance_source"};
  const Table by_col = PivotTable(RecordsFromJson({measured, replayed}), p);
  EXPECT_EQ(by_col.rows.size(), 1u);
  EXPECT_EQ(by_col.header.size(), 3u);
}

// --- 13a: autoregressive τ ---------------------------------------------------------------

TEST(SilentReport, AutoregressiveTauIsOneAndAbsentWhenNothingWasGenerated) {
  GenerationStats eos;  // 134 tokens, the 135th call yielded the stop token
  eos.generated_tokens = 134;
  eos.target_calls = 135;
  EXPECT_EQ(MeanAcceptedLength(eos, false), 1.0);
  EXPECT_NEAR(MeanAcceptedLength(eos, true), 134.0 / 135.0, 1e-12);  // speculative: as counted
  GenerationStats none;
  none.target_calls = 1;  // -n 0: the prefill ran, nothing came of it
  EXPECT_TRUE(std::isnan(MeanAcceptedLength(none, false)));
  EXPECT_TRUE(std::isnan(MeanAcceptedLength(none, true)));

  // The results hold the same rule for the AR point.
  RawRecord r;
  r.key = r.name = "ar";
  r.params = json{{"decoder", "ar"}, {"model", "m"}};
  r.prompt_tokens = {5, 7};
  r.runs.push_back({0, 0, 0, 0, eos, "h"});
  r.runs.push_back({1, 0, 1, 0, none, "h"});
  AggregateRecord a = AggregateTyped(r, nullptr);
  EXPECT_EQ(a.statistics.Mean("mean_accepted_length"), 1.0);
  ASSERT_EQ(a.statistics.per_prompt_mean_accepted_length.size(), 2u);
  EXPECT_EQ(a.statistics.per_prompt_mean_accepted_length[0], 1.0);
  EXPECT_TRUE(std::isnan(a.statistics.per_prompt_mean_accepted_length[1]));
  r.runs = {{0, 0, 0, 0, none, "h"}};
  r.prompt_tokens = {5};
  EXPECT_TRUE(AggregateTyped(r, nullptr).flat["mean_accepted_length"].is_null());
}

const std::string& TinyModel() {
  static const std::string path = [] {
    ModelConfig c = TinyTestConfig();
    c.max_seq_len = 32;
    const std::string p = testing::TempDir() + "/tiny.gguf";
    WriteGguf(MakeSyntheticModel(c, 21), *MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size)), p);
    return p;
  }();
  return path;
}

TEST(SilentReport, GenerateTauIsNullWhenNothingWasGenerated) {
  for (const char* decoder : {"ar", "self-spec"}) {
    const testing::CliResult r = testing::RunCli(
        {"generate", "--model", TinyModel(), "--json", "--prompt", "a b", "-n", "0", "--decoder", decoder});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_TRUE(j["stats"]["mean_accepted_length"].is_null()) << decoder << ": " << j["stats"].dump();
  }
  const testing::CliResult r =
      testing::RunCli({"generate", "--model", TinyModel(), "--json", "--prompt", "a b", "-n", "4", "--decoder", "ar"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["stats"]["mean_accepted_length"], 1.0);
}

// --- first hour: a draft bridged through text says so -----------------------------------

json Bridged(json j) {
  j["draft_tokenizer"] = "bridged";
  return j;
}

TEST(SilentReport, DraftTokenizerIsReadWrittenAndAbsentInOldRecords) {
  const AggregateRecord b = AggregateRecord::FromJson(Bridged(Point("tinystories-260k", 4, 1.2)));
  EXPECT_EQ(b.identity.draft_tokenizer, "bridged");
  EXPECT_EQ(b.ToJson()["draft_tokenizer"], "bridged");
  const AggregateRecord old = AggregateRecord::FromJson(Point("self", 4, 1.2));
  EXPECT_EQ(old.identity.draft_tokenizer, "");
  EXPECT_FALSE(old.ToJson().contains("draft_tokenizer"));
}

TEST(SilentReport, BridgedDraftIsMarkedInEveryTableFormat) {
  const auto recs =
      RecordsFromJson({Bridged(Point("tinystories-260k", 2, 1.2)), Bridged(Point("tinystories-260k", 4, 1.3)),
                       Point("self", 4, 1.1), testing::ArPointJson()});
  const Table main = MainTable(recs);
  for (TableFormat f : {TableFormat::Markdown, TableFormat::Latex, TableFormat::Csv}) {
    const std::string text = RenderTable(main, f);
    EXPECT_NE(text.find("model=tinystories-260k (bridged)"), std::string::npos) << text;
    EXPECT_EQ(text.find("self (bridged)"), std::string::npos) << text;
  }
  EXPECT_NE(RenderTable(main, TableFormat::Markdown).find("through text"), std::string::npos);
  EXPECT_NE(RenderTable(MainTableLong(recs), TableFormat::Csv).find("model=tinystories-260k (bridged)"),
            std::string::npos);
  const std::string latency = RenderTable(LatencyTable(recs), TableFormat::Markdown);
  EXPECT_NE(latency.find("(bridged)"), std::string::npos) << latency;  // the fastest is the bridged K=4
}

TEST(SilentReport, BridgedDraftIsMarkedWhenTheDraftDoesNotVary) {
  const auto recs =
      RecordsFromJson({Bridged(Point("tinystories-260k", 2, 1.2)), Bridged(Point("tinystories-260k", 4, 1.3))});
  const std::string md = RenderTable(MainTable(recs), TableFormat::Markdown);
  EXPECT_NE(md.find("model=tinystories-260k (bridged)"), std::string::npos) << md;
  const std::vector<Series> s = SpeedupVsK(recs);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NE(s[0].title.find("model=tinystories-260k (bridged)"), std::string::npos) << s[0].title;
  // A question set's per-group records keep the mark.
  json q = Bridged(CategorizedPoint({"writing", "rag"}));
  q["draft"] = q["draft_base"] = "model=tinystories-260k";
  const std::string spec_bench = RenderTable(SpecBenchTable(RecordsFromJson({q})), TableFormat::Markdown);
  EXPECT_NE(spec_bench.find("model=tinystories-260k (bridged)"), std::string::npos) << spec_bench;
}

TEST(SilentReport, BridgedDraftIsMarkedInPlotLegends) {
  const auto recs =
      RecordsFromJson({Bridged(Point("tinystories-260k", 2, 1.2)), Point("self", 2, 1.5), Point("self", 4, 1.6)});
  std::vector<std::string> titles;
  for (const Series& s : SpeedupVsK(recs)) titles.push_back(s.title);
  ASSERT_EQ(titles.size(), 2u);
  EXPECT_NE(std::find(titles.begin(), titles.end(), "m, speculative, model=tinystories-260k (bridged), none"),
            titles.end())
      << titles[0] << " / " << titles[1];
  EXPECT_EQ(std::count_if(titles.begin(), titles.end(),
                          [](const std::string& t) { return t.find("(bridged)") != std::string::npos; }),
            1);
}

}  // namespace
}  // namespace specsweep
