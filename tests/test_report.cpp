// Reports of results: statistics, table cells and formats, plot series. What a reader
// sees must say what was measured: intervals, flags, units, no number for a suspect cell.
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "harness/report/plot.h"
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
  return json{{"key", quant + std::to_string(k)}, {"name", quant}, {"model", "m"}, {"decoder", "speculative"},
              {"k", k}, {"k_policy", "constant"}, {"draft", quant}, {"draft_base", "self"}, {"draft_quant", quant},
              {"speedup", speedup}, {"speedup_ci_low", speedup - 0.1}, {"speedup_ci_high", speedup + 0.1},
              {"mean_accepted_length", 2.5}, {"acceptance_rate", 0.7}, {"suspect", false}, {"busy", false},
              {"wide_ci", false}, {"kernel_isa", "avx2"}, {"threads_used", 2}, {"repetitions", 3}, {"prompts", 4},
              {"baseline_tokens_per_s", 123.4}, {"temperature", 0.0}, {"kv_type", "f32"}};
}

TEST(Table, CellsCarryIntervalsFlagsAndNoNumberWhenSuspect) {
  std::vector<json> recs = {Spec("q4_0", 2, 1.52), Spec("q8_0", 2, 1.31), Spec("f16", 2, 1.1)};
  recs[1]["busy"] = true;
  recs[2]["suspect"] = true;
  recs[2]["speedup"] = 9.9;
  Table t = MainTable(recs, {}, json{{"cpu_model", "Test CPU"}});
  std::string md = RenderTable(t, TableFormat::Markdown);
  EXPECT_NE(md.find("1.52x ±0.10"), std::string::npos) << md;
  EXPECT_NE(md.find("1.31x ±0.10†"), std::string::npos) << md;
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
  EXPECT_NE(tex.find("$1.52\\times$ $\\pm$0.10"), std::string::npos) << tex;
  // CSV: one numeric value per column; the suspect point has no speedup.
  std::string csv = RenderTable(MainTableLong(recs), TableFormat::Csv);
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
  std::string md = RenderTable(PivotTable(recs, p), TableFormat::Markdown);
  EXPECT_NE(md.find("512.2"), std::string::npos) << md;
  EXPECT_EQ(md.find("(ms)"), std::string::npos) << md;
}

TEST(Plot, LegendsFromVaryingAxesAndErrorBars) {
  std::vector<json> recs;
  for (const char* q : {"q4_0", "q8_0"})
    for (int k : {2, 4}) recs.push_back(Spec(q, k, 1.0 + k * 0.1));
  json ar = {{"key", "ar"}, {"model", "m"}, {"decoder", "ar"}, {"k", 0}, {"k_policy", "-"}, {"draft_quant", "-"},
             {"kv_type", "f32"}, {"mean_next_token_latency_s", 0.001}, {"prompt_tokens", 5}};
  recs.push_back(ar);
  auto s = SpeedupVsK(recs);
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
  for (auto& x : LatencyVsInputLength(recs)) EXPECT_EQ(x.title.find("k_policy"), std::string::npos) << x.title;
}

TEST(Plot, BusyAndWidePointsAreMarkedAsInTables) {
  std::vector<json> recs = {Spec("q4_0", 2, 1.2), Spec("q4_0", 4, 1.3), Spec("q4_0", 6, 1.4)};
  recs[0]["busy"] = true;
  recs[1]["busy"] = true;
  recs[1]["wide_ci"] = true;
  auto s = SpeedupVsK(recs);
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0].marks.size(), 3u);
  for (size_t i = 0; i < recs.size(); ++i) {  // the table's cell carries the same marks
    CellFlags f;
    const std::string cell = SpeedupCell(recs[i], f);
    EXPECT_TRUE(cell.ends_with(s[0].marks[i])) << cell;
    EXPECT_EQ(f.busy, i < 2);
  }
  EXPECT_EQ(s[0].marks[0], "†");
  EXPECT_EQ(s[0].marks[1], "†‡");
  EXPECT_EQ(s[0].marks[2], "");
  EXPECT_EQ(MarksKey(s), "hollow: † host busy while measured, ‡ 95% CI wider than ±15%");
  EXPECT_NE(DatText("t", s).find("\n4 1.3 1.2 1.4000000000000001 \"\" \"†‡\"\n"), std::string::npos) << DatText("t", s);
  EXPECT_EQ(MarksKey(PredictedVsMeasured(recs)), "");  // no predicted_speedup: no points
  recs[0]["predicted_speedup"] = 1.1;
  EXPECT_EQ(MarksKey(PredictedVsMeasured(recs)), "hollow: † host busy while measured");
  // Acceptance does not depend on the machine's load: its plots mark nothing.
  EXPECT_TRUE(AcceptedLengthVsK(recs)[0].marks.empty());
  recs[0]["busy"] = false, recs[1]["busy"] = false, recs[1]["wide_ci"] = false;
  EXPECT_EQ(MarksKey(SpeedupVsK(recs)), "");
  if (FindGnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed";
  recs[1]["busy"] = true;
  PlotOptions o;
  o.out_dir = testing::TempDir();
  for (auto& p : MakePlots(recs, o)) {
    if (p.name == "speedup_vs_k") EXPECT_EQ(p.images.size(), 2u);
  }
}

TEST(Plot, NoInputLengthPlotWithoutThatAxis) {
  if (FindGnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed";
  std::vector<json> recs = {Spec("q4_0", 2, 1.2), Spec("q4_0", 4, 1.3)};
  for (auto& r : recs) r["input_length"] = 0;
  PlotOptions o;
  o.out_dir = testing::TempDir();
  for (auto& p : MakePlots(recs, o))
    if (p.name == "latency_vs_input_length") EXPECT_EQ(p.skipped, "the experiment has no input_length axis");
}

}  // namespace
}  // namespace specsweep
