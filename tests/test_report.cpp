// Reports of results: statistics, table cells and formats, plot series. What a reader
// sees must say what was measured: intervals, flags, units, no number for a suspect cell.
#include <cmath>
#include <filesystem>
#include <regex>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "harness/report/aggregate.h"
#include "harness/report/plot.h"
#include "harness/report/record.h"
#include "harness/report/plot_layout.h"
#include "harness/report/statistics.h"
#include "harness/report/table.h"
#include "harness/report/table_cells.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace specsweep {
namespace {

TEST(Statistics, BootstrapIsSeededAndBracketsTheMean) {
  std::vector<double> v = {1.4, 1.6, 1.5, 1.7, 1.3, 1.55, 1.45, 1.62};
  Interval a = BootstrapMean(v, 42), b = BootstrapMean(v, 42), c = BootstrapMean(v, 43);
  EXPECT_EQ(a.low, b.low);  // same data, same seed: same interval
  EXPECT_EQ(a.high, b.high);
  EXPECT_NE(a.low, c.low);
  EXPECT_EQ(a.n, 8);
  EXPECT_NEAR(a.mean, Mean(v), 1e-12);
  EXPECT_LT(a.low, a.mean);
  EXPECT_GT(a.high, a.mean);
  // Roughly mean +- 1.96 sd / sqrt(n).
  const double se = StdDev(v) / std::sqrt(8.0);
  EXPECT_NEAR(a.high - a.low, 2 * 1.96 * se, 0.35 * 2 * 1.96 * se);
  std::vector<double> one = {2.0, NAN};
  Interval d = BootstrapMean(one, 1);
  EXPECT_EQ(d.n, 1);
  EXPECT_TRUE(std::isnan(d.low));
}

json Spec(const std::string& quant, int k, double speedup) {
  return json{{"key", quant + std::to_string(k)},
              {"name", quant},
              {"model", "m"},
              {"decoder", "speculative"},
              {"k", k},
              {"k_policy", "constant"},
              {"draft", quant},
              {"draft_base", "self"},
              {"draft_quant", quant},
              {"speedup", speedup},
              {"speedup_ci_low", speedup - 0.1},
              {"speedup_ci_high", speedup + 0.1},
              {"mean_accepted_length", 2.5},
              {"acceptance_rate", 0.7},
              {"suspect", false},
              {"busy", false},
              {"wide_ci", false},
              {"kernel_isa", "avx2"},
              {"threads_used", 2},
              {"repetitions", 3},
              {"prompts", 4},
              {"baseline_tokens_per_s", 123.4},
              {"temperature", 0.0},
              {"kv_type", "f32"}};
}

// A speculative raw record of one run against an AR baseline of one run.
RawRecord Raw(const std::string& key, const std::string& baseline_key, const std::string& draft, double tps) {
  RawRecord r;
  r.key = r.name = key;
  r.baseline_key = baseline_key;
  r.params = json{{"decoder", baseline_key.empty() ? "ar" : "speculative"},
                  {"k", 2},
                  {"k_policy", "constant"},
                  {"draft", draft},
                  {"draft_quant", "q4_0"},
                  {"model", "m"}};
  r.prompt_tokens = {5};
  r.costs.target_s = {0.010, 0.012, 0.014};
  r.costs.draft_s = {0.001, 0.0015};
  r.draft_types = {{"q4_0", 2}, {"f16", 5}};  // a partial quant type: the labels say so
  GenerationStats s;
  s.generated_tokens = 6;
  s.target_calls = 3;
  s.draft_calls = 4;
  s.k_per_step = {2, 2};
  s.drafted_at_pos = {2, 2};
  s.accepted_at_pos = {2, 1};
  s.accepted_per_step = {2, 1};
  s.tokens_per_s = tps;
  s.total_s = 6 / tps;
  r.runs.push_back({0, 0, 0, 0, s, "h"});
  return r;
}

TEST(Record, PartsWriteTheFlatRecordAndReadItBack) {
  const RawRecord base = Raw("B", "", "-", 100), spec = Raw("S", "B", "q4_0+tree_budget=4", 180);
  const AggregateRecord a = AggregateTyped(spec, &base);
  EXPECT_EQ(a.flat.dump(), a.ToJson().dump());
  EXPECT_EQ(a.flat["draft"], "q4_0+tree_budget=4 (5 of 7 f16)");  // what ran
  ASSERT_TRUE(a.comparison && a.cost.speculative);
  EXPECT_TRUE(a.Speculative());
  EXPECT_NEAR(a.comparison->speedup.mean, 1.8, 1e-12);
  // Read back from its flat form, every part is the same and writes the same JSON.
  const AggregateRecord b = AggregateRecord::FromJson(a.flat);
  EXPECT_EQ(b.ToJson().dump(), a.flat.dump());
  EXPECT_EQ(b.Suspect(), a.Suspect());
  EXPECT_EQ(b.comparison->speedup.n, a.comparison->speedup.n);
  // The stored label notes the partial quant type: no draft this version parses.
  EXPECT_FALSE(b.identity.draft);
  EXPECT_EQ(b.identity.draft_label, "q4_0+tree_budget=4 (5 of 7 f16)");
  const AggregateRecord ar = AggregateTyped(base, nullptr);
  EXPECT_FALSE(ar.Speculative());
  EXPECT_FALSE(ar.comparison);
  EXPECT_FALSE(ar.cost.speculative);
  EXPECT_EQ(AggregateRecord::FromJson(ar.flat).ToJson().dump(), ar.flat.dump());
}

TEST(Record, FlagsAreBooleansAndDraftsParsedOnce) {
  json j = Spec("q4_0", 2, 1.5);
  j["suspect"] = "true";  // text is no boolean
  j["busy"] = true;
  AggregateRecord r = AggregateRecord::FromJson(j);
  EXPECT_FALSE(r.Suspect());
  EXPECT_TRUE(r.Busy());
  ASSERT_TRUE(r.identity.draft);
  EXPECT_EQ(r.identity.draft->Label(), "q4_0");
  EXPECT_FALSE(r.identity.draft->IsTree());
  // A record without the draft label: its base and quant.
  j.erase("draft");
  j["draft_base"] = "layers=2";
  EXPECT_EQ(AggregateRecord::FromJson(j).identity.draft->Label(), "layers=2+q4_0");
  // Records of older versions miss fields: they read as absent, not as errors.
  const AggregateRecord bare = AggregateRecord::FromJson(json{{"key", "k"}, {"decoder", "ar"}});
  EXPECT_FALSE(bare.Speculative());
  EXPECT_FALSE(bare.comparison);
  EXPECT_TRUE(std::isnan(bare.statistics.Mean("tokens_per_s")));
}

TEST(Table, CellsCarryIntervalsFlagsAndNoNumberWhenSuspect) {
  std::vector<json> recs = {Spec("q4_0", 2, 1.52), Spec("q8_0", 2, 1.31), Spec("f16", 2, 1.1)};
  recs[1]["busy"] = true;
  recs[2]["suspect"] = true;
  recs[2]["speedup"] = 9.9;
  Table t = MainTable(RecordsFromJson(recs), {}, json{{"cpu_model", "Test CPU"}});
  std::string md = RenderTable(t, TableFormat::Markdown);
  EXPECT_NE(md.find("1.52x [1.42, 1.62]"), std::string::npos) << md;
  EXPECT_NE(md.find("1.31x [1.21, 1.41]†"), std::string::npos) << md;
  EXPECT_NE(md.find("suspect"), std::string::npos) << md;
  EXPECT_EQ(md.find("9.90x"), std::string::npos) << md;
  // The caption names the machine, kernels, threads, repetitions, prompts and baseline.
  for (const char* s : {"Test CPU", "avx2 kernels", "2 threads", "3 repetitions x 4 prompts", "123.4 tokens/s"})
    EXPECT_NE(md.find(s), std::string::npos) << s << "\n" << md;
  // Rows by bits per weight, widest first, not alphabetically.
  EXPECT_LT(md.find("| f16"), md.find("| q8_0"));
  EXPECT_LT(md.find("| q8_0"), md.find("| q4_0"));
  std::string tex = RenderTable(t, TableFormat::Latex);
  EXPECT_NE(tex.find("usepackage{booktabs}"), std::string::npos);
  EXPECT_NE(tex.find("1.52$\\times$ / "), std::string::npos) << tex;  // LaTeX: no interval unless asked
  tex = RenderTable(t, TableFormat::Latex, {true, ""});
  EXPECT_NE(tex.find("1.52$\\times$ [1.42, 1.62]"), std::string::npos) << tex;
  // CSV: one numeric value per column; the suspect point has no speedup.
  std::string csv = RenderTable(MainTableLong(RecordsFromJson(recs)), TableFormat::Csv);
  EXPECT_NE(csv.find("speedup,speedup_ci_low,speedup_ci_high"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",2,1.52,1.42,1.62,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("9.9"), std::string::npos) << csv;
}

TEST(Table, TokensPerSecondIsNotScaledAsSeconds) {
  EXPECT_EQ(FormatMetric("tokens_per_s", 512.25), "512.2");
  EXPECT_EQ(FormatMetric("tokens_per_s_median", 512.25), "512.2");
  EXPECT_EQ(FormatMetric("total_s", 0.0125), "12.500");  // seconds are shown in ms
  PivotSpec p;
  p.metrics = {"tokens_per_s"};
  std::vector<json> recs = {json{{"key", "a"}, {"model", "m"}, {"tokens_per_s", 512.25}}};
  std::string md = RenderTable(PivotTable(RecordsFromJson(recs), p), TableFormat::Markdown);
  EXPECT_NE(md.find("512.2"), std::string::npos) << md;
  EXPECT_EQ(md.find("(ms)"), std::string::npos) << md;
}

TEST(Plot, LegendsFromVaryingAxesAndErrorBars) {
  std::vector<json> recs;
  for (const char* q : {"q4_0", "q8_0"})
    for (int k : {2, 4}) recs.push_back(Spec(q, k, 1.0 + k * 0.1));
  json ar = {{"key", "ar"},       {"model", "m"},       {"decoder", "ar"},  {"k", 0},
             {"k_policy", "-"},   {"draft_quant", "-"}, {"kv_type", "f32"}, {"mean_next_token_latency_s", 0.001},
             {"prompt_tokens", 5}};
  recs.push_back(ar);
  auto s = SpeedupVsK(RecordsFromJson(recs));
  ASSERT_EQ(s.size(), 2u);
  for (auto& x : s) {
    EXPECT_EQ(x.title.find("k_policy"), std::string::npos) << x.title;
    EXPECT_EQ(x.title.find("kv_type"), std::string::npos) << x.title;
    ASSERT_EQ(x.ci.size(), 2u);
  }
  EXPECT_NEAR(s[0].ci[0].first, s[0].xy[0].second - 0.1, 1e-12);
  std::string dat = DatText("t", s);
  EXPECT_NE(dat.find("2 1.2 1.0999999999999999 1.3 \"\""), std::string::npos) << dat;
  // Latency lines: AR vs speculative differ in k_policy "-" vs "constant", which is no axis.
  for (auto& x : LatencyVsInputLength(RecordsFromJson(recs)))
    EXPECT_EQ(x.title.find("k_policy"), std::string::npos) << x.title;
}

TEST(Plot, BusyAndWidePointsAreMarkedAsInTables) {
  std::vector<json> recs = {Spec("q4_0", 2, 1.2), Spec("q4_0", 4, 1.3), Spec("q4_0", 6, 1.4)};
  recs[0]["busy"] = true;
  recs[1]["busy"] = true;
  recs[1]["wide_ci"] = true;
  auto s = SpeedupVsK(RecordsFromJson(recs));
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0].marks.size(), 3u);
  for (size_t i = 0; i < recs.size(); ++i) {  // the table's cell carries the same marks
    CellFlags f;
    const std::string cell = SpeedupCell(AggregateRecord::FromJson(recs[i]), f);
    EXPECT_TRUE(cell.ends_with(s[0].marks[i])) << cell;
    EXPECT_EQ(f.busy, i < 2);
  }
  EXPECT_EQ(s[0].marks[0], "†");
  EXPECT_EQ(s[0].marks[1], "†‡");
  EXPECT_EQ(s[0].marks[2], "");
  EXPECT_EQ(MarksKey(s), "hollow: † host busy while measured|hollow: ‡ 95% CI wider than ±15% or of < 5 rounds");
  EXPECT_NE(DatText("t", s).find("\n4 1.3 1.2 1.4000000000000001 \"\" \"†‡\"\n"), std::string::npos) << DatText("t", s);
  EXPECT_EQ(MarksKey(PredictedVsMeasured(RecordsFromJson(recs))), "");  // no predicted_speedup: no points
  recs[0]["predicted_speedup"] = 1.1;
  EXPECT_EQ(MarksKey(PredictedVsMeasured(RecordsFromJson(recs))), "hollow: † host busy while measured");
  // Acceptance does not depend on the machine's load: its plots mark nothing.
  EXPECT_TRUE(AcceptedLengthVsK(RecordsFromJson(recs))[0].marks.empty());
  recs[0]["busy"] = false, recs[1]["busy"] = false, recs[1]["wide_ci"] = false;
  EXPECT_EQ(MarksKey(SpeedupVsK(RecordsFromJson(recs))), "");
  if (FindGnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed";
  recs[1]["busy"] = true;
  PlotOptions o;
  o.out_dir = testing::TempDir();
  for (auto& p : MakePlots(RecordsFromJson(recs), o)) {
    if (p.name == "speedup_vs_k") {
      EXPECT_EQ(p.images.size(), 3u);  // PNG, SVG and PDF (EPS from a gnuplot without pdfcairo)
    }
  }
}

TEST(Plot, NoInputLengthPlotWithoutThatAxis) {
  if (FindGnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed";
  std::vector<json> recs = {Spec("q4_0", 2, 1.2), Spec("q4_0", 4, 1.3)};
  for (auto& r : recs) r["input_length"] = 0;
  PlotOptions o;
  o.out_dir = testing::TempDir();
  for (auto& p : MakePlots(RecordsFromJson(recs), o))
    if (p.name == "latency_vs_input_length") {
      EXPECT_EQ(p.skipped, "the experiment has no input_length axis");
    }
}

TEST(Plot, SubtitleWrapsAtPartsAndPointKeysInKOrder) {
  EXPECT_EQ(WrapParts("aaa; bbb; cc", 8), "aaa; bbb\ncc");
  EXPECT_EQ(WrapParts("a-very-long-part; b", 4), "a-very-long-part\nb");
  EXPECT_EQ(WrapParts("short", 80), "short");
  Series a, b;
  a.labels = {"k=12", "k=2", ""};
  b.labels = {"k=4", "k=2", "k<=8 adaptive"};
  EXPECT_EQ(PointKeys({a, b}), (std::vector<std::string>{"k<=8 adaptive", "k=2", "k=4", "k=12"}));
  // The legend's entries and longest title in characters (not bytes: † is three).
  a.title = "q4_0 self-draft", b.title = "early exit L=1";
  const KeyText key = KeyTextOf({a, b}, "hollow: † host busy|hollow: ‡ wide", PointKeys({a, b}), 1);
  EXPECT_EQ(key.entries, 2u + 2u + 4u + 1u);
  EXPECT_EQ(key.longest, 19u);
  // More legend rows than the base canvas holds make it taller, so the plot keeps its height.
  EXPECT_EQ(CanvasForKeyBelow({1100, 650}, key).height, 650);
  EXPECT_GT(CanvasForKeyBelow({1100, 650}, KeyText{40, 60}).height, 650);
  EXPECT_TRUE(KeyFitsRight({1100, 700}, key));
  EXPECT_FALSE(KeyFitsRight({1100, 700}, KeyText{50, 30}));  // too many lines
  EXPECT_FALSE(KeyFitsRight({1100, 700}, KeyText{5, 80}));   // too wide
  EXPECT_GT(CanvasForKeyRight({1100, 700}, KeyText{30, 30}).height, 700);
}

// A text of an SVG gnuplot wrote, with a box estimated from its font size (Arial: a
// character about half the size wide, 0.75 above the baseline and 0.2 below).
struct TextBox {
  std::string text;
  double x0, y0, x1, y1;
};

std::vector<TextBox> SvgTexts(const std::string& svg) {
  static const std::regex re(
      R"re(<g transform="translate\(([-\d.]+),([-\d.]+)\)( rotate\((\d+)\))?"[^>]*font-size="([\d.]+)"[^>]*text-anchor="(\w+)">\s*<text>([^<]*)</text>)re");
  std::vector<TextBox> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end; ++it) {
    const std::smatch& m = *it;
    std::string text = m[7];
    size_t chars = 0;
    for (unsigned char c : text) chars += (c & 0xC0) != 0x80;  // UTF-8 code points
    if (text.find_first_not_of(' ') == std::string::npos) continue;
    const double x = std::stod(m[1]), y = std::stod(m[2]), size = std::stod(m[5]);
    const double len = 0.5 * size * double(chars);
    const double start = m[6] == "end" ? -len : m[6] == "middle" ? -len / 2 : 0;
    if (m[4].matched)  // rotated 270: the text runs upwards from (x, y)
      out.push_back({text, x - 0.75 * size, y - start - len, x + 0.2 * size, y - start});
    else
      out.push_back({text, x + start, y - 0.75 * size, x + start + len, y + 0.2 * size});
  }
  return out;
}

// Records of two models x four drafts x eight K with long legend names and a point of
// two drafts at the same place in predicted vs measured, and AR at three input lengths,
// all busy: each plot of them must keep its text apart and inside the canvas.
TEST(Plot, NoTextOverlapsOrLeavesTheCanvas) {
  if (FindGnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed";
  std::vector<json> recs;
  const char* drafts[] = {"q4_0", "q8_0", "layers=1", "tinystories-656k+q8_0"};
  for (const char* model : {"tinystories-260k", "tinystories-656k"})
    for (int d = 0; d < 4; ++d)
      for (int k : {1, 2, 3, 4, 6, 8, 12, 16}) {
        json r = Spec(drafts[d], k, 0.3 + 0.1 * d + 0.01 * k);
        r["model"] = model, r["draft_base"] = d == 3 ? "tinystories-656k" : "self";
        r["key"] = fmt::format("{}{}{}", model, d, k);
        r["busy"] = true;
        r["alpha"] = 0.5 + 0.1 * d;
        // Drafts 0 and 1 predict and measure the same at every K: coinciding points.
        r["predicted_speedup"] = 0.35 + 0.1 * (d / 2) + 0.01 * k;
        r["speedup"] = 0.3 + 0.1 * (d / 2) + 0.01 * k;
        r["acceptance_at_pos_conditional"] = std::vector<double>(size_t(k), 0.5 + 0.05 * d);
        r["input_length"] = 128, r["prompt_tokens"] = 128, r["mean_next_token_latency_s"] = 0.002 + 1e-4 * k;
        recs.push_back(r);
      }
  for (const char* model : {"tinystories-260k", "tinystories-656k"})  // AR at three input lengths
    for (int n : {32, 128, 512})
      recs.push_back(json{{"key", fmt::format("{}ar{}", model, n)},
                          {"model", model},
                          {"decoder", "ar"},
                          {"k", 0},
                          {"k_policy", "-"},
                          {"draft_quant", "-"},
                          {"kv_type", "f32"},
                          {"input_length", n},
                          {"prompt_tokens", n},
                          {"mean_next_token_latency_s", 0.002 + 1e-6 * n},
                          {"busy", true}});
  PlotOptions o;
  o.out_dir = testing::TempDir() + "/overlap";
  o.subtitle = PlotSubtitle(json{{"cpu_model", "AMD EPYC 9R14 96-Core Processor"}}, RecordsFromJson(recs));
  size_t drawn = 0;
  for (auto& p : MakePlots(RecordsFromJson(recs), o)) {
    if (!p.skipped.empty()) continue;
    const std::string svg = testing::ReadFile(p.images.at(1));
    std::smatch size;
    ASSERT_TRUE(std::regex_search(svg, size, std::regex(R"re(viewBox="0 0 (\d+) (\d+)")re"))) << p.name;
    const double width = std::stod(size[1]), height = std::stod(size[2]);
    const std::vector<TextBox> texts = SvgTexts(svg);
    ASSERT_GT(texts.size(), 10u) << p.name;
    for (size_t i = 0; i < texts.size(); ++i) {
      const TextBox& a = texts[i];
      EXPECT_TRUE(a.x0 >= 0 && a.x1 <= width && a.y0 >= 0 && a.y1 <= height)
          << p.name << ": '" << a.text << "' leaves the canvas";
      for (size_t j = i + 1; j < texts.size(); ++j) {
        const TextBox& b = texts[j];
        const double gap = 1.0;  // px: touching text reads as one
        const bool apart = a.x1 + gap <= b.x0 || b.x1 + gap <= a.x0 || a.y1 + gap <= b.y0 || b.y1 + gap <= a.y0;
        EXPECT_TRUE(apart) << p.name << ": '" << a.text << "' overlaps '" << b.text << "'";
      }
    }
    ++drawn;
  }
  EXPECT_EQ(drawn, 6u);
}

}  // namespace
}  // namespace specsweep
