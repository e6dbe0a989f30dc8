// Plots a paper can print (#46): the generated data and gnuplot settings (not pixels) of
// grouped bars per task group, a log latency axis, hollow named suspect points, gaps for
// 0/0, legends that are the main table's row names, distinct colours, the caption, PDF.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "base/build_info.h"
#include "harness/report/category.h"
#include "harness/report/plot.h"
#include "harness/report/plot_layout.h"
#include "harness/report/record.h"
#include "harness/report/table.h"
#include "tests/record_fixtures.h"

using nlohmann::json;

namespace specsweep {
namespace {

// A speculative point of model "m" with draft `quant` (a self-draft) or `base` at K.
json Point(const std::string& quant, int k, double speedup, const std::string& base = "self") {
  return json{{"key", base + quant + std::to_string(k)},
              {"name", quant},
              {"model", "m"},
              {"decoder", "speculative"},
              {"k", k},
              {"k_policy", "constant"},
              {"draft", base == "self" ? quant : base},
              {"draft_base", base},
              {"draft_quant", quant},
              {"acceptance_source", "measured"},
              {"speedup", speedup},
              {"speedup_ci_low", speedup - 0.1},
              {"speedup_ci_high", speedup + 0.1},
              {"mean_accepted_length", 2.5},
              {"predicted_speedup", speedup},
              {"suspect", false},
              {"busy", false},
              {"wide_ci", false},
              {"repetitions", 3},
              {"prompts", 4},
              {"max_new_tokens", 64}};
}

const PlotFigure& Figure(const std::vector<PlotFigure>& figures, const std::string& name) {
  for (auto& f : figures)
    if (f.name == name) return f;
  throw std::runtime_error("no figure " + name);
}

TEST(CameraPlots, ByCategoryIsOneGroupedBarFigure) {
  std::vector<json> recs;
  for (const char* q : {"q4_0", "q8_0"}) {
    json j = Point(q, 4, 1.5);
    j["per_prompt_category"] = {"writing", "writing", "rag", "rag"};
    j["per_prompt_speedup"] = {1.4, 1.6, 1.2, 1.3};
    j["per_prompt_mean_accepted_length"] = {2.4, 2.6, 2.0, 2.2};
    recs.push_back(j);
  }
  PlotOptions o;
  o.by_category = true;
  const auto figures = PlotFigures(SplitByCategory(RecordsFromJson(recs)), o);
  std::vector<std::string> names;
  for (auto& f : figures) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"speedup_by_category", "accepted_length_by_category"}));
  const PlotFigure& f = Figure(figures, "speedup_by_category");
  // One series per method (not one per method and group), a bar per group, overall last.
  ASSERT_EQ(f.series.size(), 2u);
  for (size_t m = 0; m < 2; ++m) {
    ASSERT_EQ(f.series[m].labels, (std::vector<std::string>{"writing", "rag", "overall"}));
    for (size_t g = 0; g < 3; ++g) {
      EXPECT_NEAR(f.series[m].xy[g].first, double(g) + (m == 0 ? -0.2 : 0.2), 1e-12);  // side by side
      EXPECT_LT(f.series[m].ci[g].first, f.series[m].ci[g].second);                    // with its interval
    }
  }
  EXPECT_NEAR(f.series[0].xy[0].second, std::sqrt(1.4 * 1.6), 1e-12);  // writing: the geometric mean of 1.4 and 1.6
  EXPECT_EQ(f.Var("boxwidth"), "0.4");
  EXPECT_EQ(f.Var("ngroups"), "3");
  EXPECT_EQ(f.Var("xticvals"), "'\"writing\" 0, \"rag\" 1, \"overall\" 2'");
  const std::string script = std::string(SourceDir()) + "/plots/speedup_by_category.gp";
  std::ifstream in(script);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("with boxerrorbars"), std::string::npos) << script;
}

json LatencyPoint(const json& base, int input_length, double ms) {
  json j = base;
  j["key"] = base["key"].get<std::string>() + std::to_string(input_length);
  j["input_length"] = input_length;
  j["prompt_tokens"] = input_length;
  j["mean_next_token_latency_s"] = ms / 1e3;
  return j;
}

TEST(CameraPlots, LatencyAxisIsLogarithmicWhenTheSeriesSpanADecade) {
  auto figure = [](double spec_ms) {
    std::vector<json> recs;
    for (int n : {16, 64}) {
      recs.push_back(LatencyPoint(testing::ArPointJson(), n, 0.05));
      recs.push_back(LatencyPoint(Point("q4_0", 4, 1.2), n, spec_ms));
    }
    return Figure(PlotFigures(RecordsFromJson(recs), PlotOptions{}), "latency_vs_input_length");
  };
  EXPECT_EQ(figure(1.0).Var("logy"), "1");  // 0.05 to 1 ms: a log axis
  EXPECT_EQ(figure(0.3).Var("logy"), "0");  // within a decade: linear from 0
  // AR is black and no other series is.
  const PlotFigure f = figure(1.0);
  ASSERT_EQ(f.series.size(), 2u);
  const std::vector<SeriesStyle> st = SeriesStyles(f.series);
  for (size_t i = 0; i < f.series.size(); ++i) EXPECT_EQ(st[i].colour == "#000000", f.series[i].ar) << i;
  EXPECT_EQ(f.Var("colours"), "'" + st[0].colour + "|" + st[1].colour + "'");
}

TEST(CameraPlots, SuspectPointIsHollowAndNamedNeverDropped) {
  std::vector<json> recs = {Point("q4_0", 2, 1.2), Point("q4_0", 4, 3.0)};
  recs[1]["suspect"] = true;
  const auto figures = PlotFigures(RecordsFromJson(recs), PlotOptions{});
  for (const char* name : {"speedup_vs_k", "predicted_vs_measured"}) {
    const PlotFigure& f = Figure(figures, name);
    ASSERT_EQ(f.series.size(), 1u) << name;
    ASSERT_EQ(f.series[0].xy.size(), 2u) << name;  // kept
    EXPECT_EQ(f.series[0].marks[1], kSuspectMark) << name;
    EXPECT_EQ(f.series[0].marks[0], "") << name;
    EXPECT_NE(f.dat.find(" 3 2.9 3.1 \"" + std::string(name == std::string("speedup_vs_k") ? "" : "k=4") +
                         "\" \"suspect\"\n"),
              std::string::npos)
        << f.dat;  // the marks column makes common.gp draw it hollow
    EXPECT_NE(f.Var("markkey").find("hollow: suspect"), std::string::npos) << f.Var("markkey");
    EXPECT_NE(f.Var("note").find(f.series[0].title + " at k=4"), std::string::npos) << f.Var("note");
  }
  EXPECT_EQ(Figure(PlotFigures(RecordsFromJson({recs[0]}), PlotOptions{}), "speedup_vs_k").Var("note"), "''");
}

TEST(CameraPlots, AcceptancePerPositionHasCountsIntervalsAndGapsForZeroOverZero) {
  json r = Point("q4_0", 3, 1.2);
  r["drafted_at_pos"] = {100, 50, 0};  // no step drafted position 3
  r["accepted_at_pos"] = {50, 0, 0};
  r["acceptance_at_pos_conditional"] = {0.5, 0.0, 0.0};  // as the results store 0/0
  PlotOptions o;
  o.subtitle = PlotSubtitle(json::object(), RecordsFromJson({r}));  // "...; error bars: 95% bootstrap CI"
  const PlotFigure f = Figure(PlotFigures(RecordsFromJson({r}), o), "acceptance_per_position");
  ASSERT_EQ(f.series.size(), 1u);
  const Series& s = f.series[0];
  ASSERT_EQ(s.xy.size(), 3u);
  EXPECT_EQ(s.xy[1].second, 0.0);  // 0 of 50: a measured 0
  EXPECT_GT(s.ci[1].second, 0.0);  // with its interval
  EXPECT_TRUE(std::isnan(s.xy[2].second));
  EXPECT_NE(s.title.find("n 100/50/0"), std::string::npos) << s.title;
  EXPECT_NE(f.dat.find("# 3: no data (0/0)\n\n"), std::string::npos) << f.dat;
  EXPECT_EQ(f.dat.find("\n3 0 "), std::string::npos) << f.dat;
  EXPECT_EQ(f.Var("errorbars"), "1");
  EXPECT_NE(f.Var("plotsubtitle").find("Wilson"), std::string::npos) << f.Var("plotsubtitle");
  const auto [lo, hi] = WilsonInterval(50, 100);
  EXPECT_NEAR(lo, 0.4038, 1e-3);
  EXPECT_NEAR(hi, 0.5962, 1e-3);
}

TEST(CameraPlots, LegendIsTheMainTablesRowName) {
  std::vector<json> recs = {Point("q8_0 (5 of 36 f16)", 2, 1.2), Point("q8_0 (5 of 36 f16)", 4, 1.3),
                            Point("none", 2, 0.9, "layers=1"), Point("none", 4, 0.8, "layers=1")};
  const auto records = RecordsFromJson(recs);
  const Table t = MainTable(records);
  std::set<std::string> rows;
  for (auto& row : t.rows) {
    std::string name;
    for (size_t i = 0; i < t.label_cols; ++i) name += (i ? ", " : "") + row[i];
    rows.insert(name);
  }
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows.count("m, speculative, self, q8_0 (5 of 36 f16)")) << *rows.begin();
  for (auto* series : {&SpeedupVsK, &AcceptedLengthVsK, &PredictedVsMeasured}) {
    std::set<std::string> titles;
    for (auto& s : (*series)(records)) titles.insert(s.title);
    EXPECT_EQ(titles, rows);
  }
  for (auto& s : AcceptancePerPosition(records)) EXPECT_TRUE(rows.count(s.title.substr(0, s.title.find(", k=4"))));
}

TEST(CameraPlots, SeriesHaveDistinctColoursAndArIsBlack) {
  std::vector<Series> series(9);
  series[3].ar = true;
  const std::vector<SeriesStyle> st = SeriesStyles(series);
  std::set<std::string> colours;
  std::set<std::pair<std::string, int>> looks;
  for (size_t i = 0; i < series.size(); ++i) {
    EXPECT_EQ(st[i].colour == "#000000", series[i].ar) << i;  // AR's black is never reused
    if (!series[i].ar && colours.size() < kPalette.size()) {
      EXPECT_TRUE(colours.insert(st[i].colour).second) << i;
    }
    EXPECT_TRUE(looks.insert({st[i].colour, st[i].dash}).second) << i;  // past the palette: another dash
  }
  EXPECT_EQ(colours.size(), kPalette.size());
  EXPECT_EQ(std::set<std::string>(kPalette.begin(), kPalette.end()).size(), kPalette.size());
  // Okabe-Ito's orange next to its vermillion was the pair readers could not tell apart.
  EXPECT_FALSE(colours.count("#E69F00") && colours.count("#D55E00"));
}

TEST(CameraPlots, CaptionHasDateNAndMaxNewTokensAndTauIsASymbol) {
  const auto records = RecordsFromJson({Point("q4_0", 2, 1.2), Point("q4_0", 4, 1.3)});
  const std::string caption = PlotCaption(json{{"date", "2026-11-29T04:30:50+0000"}}, records);
  EXPECT_EQ(caption, "2026-11-29 04:30 UTC; n = 3 repetitions x 4 prompts; max_new_tokens 64");
  PlotOptions o;
  o.caption = caption;
  const auto figures = PlotFigures(records, o);
  for (auto& f : figures)
    if (f.skipped.empty()) {
      EXPECT_NE(f.Var("plotsubtitle").find(caption), std::string::npos) << f.name;
    }
  const std::string title = Figure(figures, "accepted_length_vs_k").Var("plottitle");
  EXPECT_NE(title.find("τ"), std::string::npos) << title;
  EXPECT_EQ(title.find("tau"), std::string::npos) << title;
}

TEST(CameraPlots, PdfIsWrittenBesidePngAndSvg) {
  const std::string gnuplot = FindGnuplot();
  if (gnuplot.empty()) GTEST_SKIP() << "gnuplot is not installed";
  const std::string probe = ::testing::TempDir() + "/camera_terminals.txt";
  const std::string cmd = "'" + gnuplot + "' -e 'print GPVAL_TERMINALS' >'" + probe + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(probe);
  std::stringstream terminals;
  terminals << in.rdbuf();
  if (terminals.str().find("pdfcairo") == std::string::npos)
    GTEST_SKIP() << "this gnuplot has no pdfcairo terminal (plot writes EPS instead)";
  PlotOptions o;
  o.out_dir = ::testing::TempDir() + "/camera_pdf";
  std::filesystem::remove_all(o.out_dir);
  for (auto& p : MakePlots(RecordsFromJson({Point("q4_0", 2, 1.2), Point("q4_0", 4, 1.3)}), o)) {
    if (!p.skipped.empty()) continue;
    ASSERT_EQ(p.images.size(), 3u) << p.name;
    EXPECT_TRUE(p.images[2].ends_with(".pdf")) << p.images[2];
    std::ifstream pdf(p.images[2], std::ios::binary);
    std::string magic(4, '\0');
    pdf.read(magic.data(), 4);
    EXPECT_EQ(magic, "%PDF") << p.images[2];
    EXPECT_EQ(p.note, "") << p.name;
  }
}

}  // namespace
}  // namespace specsweep

namespace specsweep {
namespace {

// A replayed trace names its file and point: a legend title wider than a key column made
// gnuplot drop the whole key ("difficulty fitting plot titles into key"), so its middle
// gives way to "…" and every title fits.
TEST(CameraPlots, LongLegendTitlesAreShortenedNotDropped) {
  json r = Point("q4_0", 8, 1.4);
  const std::string trace =
      "trace=traces/record_trace_656k.jsonl:tinystories-656k/speculative/q4_0/k=8/adaptive/new=128/thr=1/"
      "in=32/new=32/thr=2/and/more/parts/of/a/long/point/key";
  r["acceptance_source"] = trace;
  const std::vector<PlotFigure> figures = PlotFigures(RecordsFromJson({Point("q4_0", 4, 1.2), r}), PlotOptions{});
  const PlotFigure& f = Figure(figures, "speedup_vs_k");
  ASSERT_EQ(f.series.size(), 2u);
  for (const Series& s : f.series) {
    size_t points = 0;
    for (unsigned char c : s.title) points += (c & 0xC0) != 0x80;
    EXPECT_LE(points, 95u) << s.title;
    EXPECT_EQ(s.title.rfind("m, speculative", 0), 0u) << s.title;
  }
  const std::string& long_one =
      f.series[0].title.find("…") != std::string::npos ? f.series[0].title : f.series[1].title;
  EXPECT_NE(long_one.find("…"), std::string::npos) << long_one;
  EXPECT_NE(long_one.find("long/point/key"), std::string::npos) << long_one;  // its end kept
  EXPECT_NE(f.dat.find(long_one), std::string::npos);
}

}  // namespace
}  // namespace specsweep
