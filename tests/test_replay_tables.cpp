// Issue #48, item 2: tables that show a replayed point's declared and realised acceptance
// side by side. The expected τ of a source (one formula, decoders/acceptance_source.h),
// the replay table, the marks of a point more than 3% off, the latency table's measured
// and modelled reductions and the long (CSV) form; measured points stay as they were.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "decoders/acceptance_source.h"
#include "harness/report/record.h"
#include "tests/record_fixtures.h"
#include "harness/report/table.h"
#include "harness/report/table_cells.h"

using nlohmann::json;

namespace specsweep {
namespace {

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A speculative point at K = `k` under `source` that realised the conditional rates `rates`.
json Point(const std::string& source, int k, const std::vector<double>& rates, double predicted = 1.2) {
  std::vector<int64_t> drafted(rates.size(), 100);
  return json{{"key", "spec " + source},
              {"name", "spec " + source},
              {"model", "m"},
              {"decoder", "speculative"},
              {"k", k},
              {"k_policy", "constant"},
              {"draft", "q4_0"},
              {"draft_base", "self"},
              {"draft_quant", "q4_0"},
              {"acceptance_source", source},
              {"speedup", 1.3},
              {"speedup_ci_low", 1.25},
              {"speedup_ci_high", 1.35},
              {"mean_accepted_length", 2.5},
              {"acceptance_rate", 0.7},
              {"mean_next_token_latency_s", 0.01 / 1.3},
              {"latency_speedup", 1.3},
              {"latency_speedup_ci_low", 1.25},
              {"latency_speedup_ci_high", 1.35},
              {"predicted_speedup", predicted},
              {"speedup_bound", 3.0},
              {"drafted_at_pos", drafted},
              {"acceptance_at_pos_conditional", rates},
              {"baseline_key", "ar"},
              {"kernel_isa", "avx2"},
              {"threads_used", 2},
              {"repetitions", 3},
              {"prompts", 4}};
}

double Tau(const std::vector<double>& p) {  // 1 + p1 + p1 p2 + ... over the whole list
  double t = 1, reach = 1;
  for (double x : p) t += reach *= x;
  return t;
}

TEST(ReplayTables, ExpectedTauIsLeviathansForAlphaAndTheProductSumForPositions) {
  for (auto [a, k] : {std::pair{0.8, 4}, {0.6, 6}, {0.9, 2}, {0.5, 8}})
    EXPECT_NEAR(ExpectedTau(ParseAcceptanceSource(fmt::format("alpha={}", a), "t"), k),
                (1 - std::pow(a, k + 1)) / (1 - a), 1e-12);
  EXPECT_NEAR(ExpectedTau(ParseAcceptanceSource("alpha=0.8", "t"), 4), 3.3616, 1e-9);
  EXPECT_NEAR(ExpectedTau(ParseAcceptanceSource("alpha=0.8+iid", "t"), 4), 3.3616, 1e-9);
  EXPECT_DOUBLE_EQ(ExpectedTau(ParseAcceptanceSource("alpha=1", "t"), 4), 5.0);
  EXPECT_DOUBLE_EQ(ExpectedTau(ParseAcceptanceSource("alpha=0", "t"), 4), 1.0);
  // positions: 1 + 0.9 + 0.9*0.7 + 0.9*0.7*0.5; past the list its last rate.
  EXPECT_NEAR(ExpectedTau(ParseAcceptanceSource("positions=[0.9,0.7,0.5]", "t"), 3), 2.845, 1e-12);
  EXPECT_NEAR(ExpectedTau(ParseAcceptanceSource("positions=[0.9,0.7,0.5]", "t"), 4), 2.845 + 0.315 * 0.5, 1e-12);
  EXPECT_NEAR(ExpectedTau(ParseAcceptanceSource("positions=[0.9,0.7,0.5]", "t"), 1), 1.9, 1e-12);
  EXPECT_TRUE(std::isnan(ExpectedTau(ParseAcceptanceSource("measured", "t"), 4)));
  EXPECT_TRUE(std::isnan(ExpectedTau(ParseAcceptanceSource("trace=x.jsonl", "t"), 4)));
}

TEST(ReplayTables, ReplayedRowShowsDeclaredRealisedAndExpectedTau) {
  const std::vector<double> rates = {0.8, 0.79, 0.81, 0.8};
  const Table t = ReplayTable(RecordsFromJson({testing::ArPointJson(), Point("alpha=0.8", 4, rates)}));
  ASSERT_EQ(t.rows.size(), 1u);
  const std::string md = RenderTable(t, TableFormat::Markdown);
  EXPECT_TRUE(Has(md, "replayed α=0.8")) << md;
  EXPECT_TRUE(Has(md, "0.80/0.79/0.81/0.80")) << md;
  EXPECT_TRUE(Has(md, fmt::format("{:.2f}", Tau(rates)))) << md;  // realised
  EXPECT_TRUE(Has(md, "3.36")) << md;                             // expected
  EXPECT_FALSE(Has(md, "§")) << md;                               // 0.3% apart: no mark
  // A trace declares no rates: its expected τ is "—", and it is never marked.
  const Table tr = ReplayTable(RecordsFromJson({Point("trace=x.jsonl", 4, {0.5, 0.5, 0.5, 0.5})}));
  const std::string trmd = RenderTable(tr, TableFormat::Markdown);
  EXPECT_TRUE(Has(trmd, "—")) << trmd;
  EXPECT_FALSE(Has(trmd, "§")) << trmd;
  // Positions no step drafted (an adaptive K's or a tree's depth below K) are compared neither way.
  json shallow = Point("alpha=0.8", 8, {0.8, 0.8, 0.8, 0.8, 0.0});
  shallow["drafted_at_pos"] = {100, 100, 100, 100, 0};
  const auto sf = ReplayFiguresOf(AggregateRecord::FromJson(shallow));
  ASSERT_TRUE(sf);
  EXPECT_EQ(sf->realised.size(), 4u);
  EXPECT_NEAR(sf->tau_expected, 3.3616, 1e-9);
  EXPECT_FALSE(sf->off);
  // A replayed record written without per-position rates still renders: no figures, no mark.
  json old = Point("alpha=0.8", 4, rates);
  old.erase("acceptance_at_pos_conditional");
  const std::string oldmd =
      RenderTable(LatencyTable(RecordsFromJson({testing::ArPointJson(), old})), TableFormat::Markdown);
  EXPECT_TRUE(Has(oldmd, "replayed α=0.8")) << oldmd;
  EXPECT_FALSE(Has(oldmd, "§")) << oldmd;
  // Measured points only: no replay table, an error naming what is missing.
  EXPECT_FALSE(ReplayedAny(RecordsFromJson({Point("measured", 4, rates)})));
  EXPECT_THROW(ReplayTable(RecordsFromJson({Point("measured", 4, rates)})), Error);
}

TEST(ReplayTables, MoreThanThreePercentOffIsMarkedInEveryFormatAndAtMostThreeIsNot) {
  // positions=[0.9,0.7,0.5] at K = 3 promises 2.845: 2.8135 is 1.1% off, 2.71 is 4.7% off.
  const json near = Point("positions=[0.9,0.7,0.5]", 3, {0.9, 0.7, 0.45});
  const json off = Point("alpha=0.8", 4, {0.7, 0.7, 0.7, 0.7});  // τ 2.77 against 3.36
  const json off_pos = Point("positions=[0.9,0.7,0.5]", 3, {0.9, 0.6, 0.5});
  ASSERT_TRUE(ReplayFiguresOf(AggregateRecord::FromJson(near)));
  EXPECT_FALSE(ReplayFiguresOf(AggregateRecord::FromJson(near))->off);
  EXPECT_TRUE(ReplayFiguresOf(AggregateRecord::FromJson(off))->off);
  EXPECT_TRUE(ReplayFiguresOf(AggregateRecord::FromJson(off_pos))->off);

  const Table t = ReplayTable(RecordsFromJson({near, off}));
  ASSERT_EQ(t.rows.size(), 2u);
  const std::string md = RenderTable(t, TableFormat::Markdown), csv = RenderTable(t, TableFormat::Csv),
                    tex = RenderTable(t, TableFormat::Latex);
  EXPECT_TRUE(Has(md, "2.77§")) << md;
  EXPECT_FALSE(Has(md, "2.81§")) << md;
  EXPECT_TRUE(Has(md, "§ replayed point whose realised τ")) << md;  // the note saying what it means
  EXPECT_TRUE(Has(csv, "2.77§")) << csv;
  EXPECT_TRUE(Has(tex, "2.77$^{\\S}$")) << tex;
  EXPECT_TRUE(Has(tex, "$\\tau$\\\\ realised")) << tex;  // the header stacked over its narrow column
  // The main table's speedup cell of the off point carries the mark too, with its note.
  const std::string main = RenderTable(MainTable(RecordsFromJson({near, off})), TableFormat::Markdown);
  EXPECT_TRUE(Has(main, "1.30x [1.25, 1.35]§")) << main;
  EXPECT_TRUE(Has(main, "§ replayed point")) << main;
  // The long form: a tau_off column, 1 for the off point only.
  const Table lng = MainTableLong(RecordsFromJson({near, off}));
  const size_t off_col = std::find(lng.header.begin(), lng.header.end(), "tau_off") - lng.header.begin();
  ASSERT_LT(off_col, lng.header.size());
  int marked = 0;
  for (auto& row : lng.rows) marked += row[off_col] == "1";
  EXPECT_EQ(marked, 1);
}

TEST(ReplayTables, MeasuredRowsAndMeasuredOnlyTablesAreUnchanged) {
  const std::vector<double> rates = {0.7, 0.6, 0.5, 0.4};
  const json measured = Point("measured", 4, rates);
  EXPECT_FALSE(ReplayFiguresOf(AggregateRecord::FromJson(measured)));
  // Measured only: no replay columns anywhere, no mark, no τ note.
  const std::vector<AggregateRecord> only = RecordsFromJson({testing::ArPointJson(), measured});
  const Table lng = MainTableLong(only);
  EXPECT_EQ(lng.header.back(), "wide_ci");
  const Table lat = LatencyTable(only);
  EXPECT_EQ(lat.header.back(), "speculative reduction");
  const std::string md = RenderTable(MainTable(only), TableFormat::Markdown);
  EXPECT_FALSE(Has(md, "§")) << md;
  EXPECT_FALSE(Has(md, "τ")) << md;
  // Beside a replayed point, the measured point's replay cells stay empty.
  const std::vector<AggregateRecord> both =
      RecordsFromJson({testing::ArPointJson(), measured, Point("alpha=0.8", 4, rates)});
  const Table mixed = MainTableLong(both);
  const size_t tau_col = std::find(mixed.header.begin(), mixed.header.end(), "tau_realised") - mixed.header.begin();
  ASSERT_LT(tau_col, mixed.header.size());
  ASSERT_EQ(mixed.rows.size(), 2u);
  for (auto& row : mixed.rows) {
    const bool is_measured = std::find(row.begin(), row.end(), "measured") != row.end();
    EXPECT_EQ(row[tau_col].empty(), is_measured) << fmt::format("{}", fmt::join(row, ","));
    // The measured row's other cells are those of the measured-only table.
    if (is_measured) {
      ASSERT_EQ(lng.rows.size(), 1u);
      for (size_t i = lng.header.size() - 8; i < lng.header.size(); ++i) {
        const size_t j = std::find(mixed.header.begin(), mixed.header.end(), lng.header[i]) - mixed.header.begin();
        ASSERT_LT(j, mixed.header.size());
        EXPECT_EQ(row[j], lng.rows[0][i]) << lng.header[i];
      }
    }
  }
}

TEST(ReplayTables, LatencyTableGivesMeasuredAndModelReductionsSideBySide) {
  const std::vector<double> rates = {0.7, 0.7, 0.7, 0.7};
  const std::vector<AggregateRecord> recs =
      RecordsFromJson({testing::ArPointJson(), Point("alpha=0.8", 4, rates, 1.2)});
  const Table t = LatencyTable(recs);
  const auto col = [&](const std::string& h) {
    const size_t i = std::find(t.header.begin(), t.header.end(), h) - t.header.begin();
    EXPECT_LT(i, t.header.size()) << h;
    return i;
  };
  ASSERT_EQ(t.rows.size(), 1u);
  const std::vector<std::string>& row = t.rows[0];
  EXPECT_EQ(row[col("speculative reduction")], "23.1% [20.0, 25.9]");  // measured: 1 - 1/1.3
  // The cost model at the declared acceptance: 1.2 x 3.3616 / τ realised.
  const double model = 1.2 * 3.3616 / Tau(rates);
  EXPECT_EQ(row[col("speculative model reduction at declared")], fmt::format("{:.1f}%", 100 * (1 - 1 / model)));
  EXPECT_EQ(row[col("speculative τ expected")], "3.36");
  EXPECT_EQ(row[col("speculative τ realised")], fmt::format("{:.2f}§", Tau(rates)));
  EXPECT_EQ(row[col("speculative acceptance by position")], "0.70/0.70/0.70/0.70");
  const std::string md = RenderTable(t, TableFormat::Markdown), csv = RenderTable(t, TableFormat::Csv),
                    tex = RenderTable(t, TableFormat::Latex);
  for (const std::string* s : {&md, &csv}) EXPECT_TRUE(Has(*s, "speculative model reduction at declared")) << *s;
  EXPECT_TRUE(Has(tex, "speculative\\\\ model\\\\ reduction\\\\ at declared")) << tex;
  EXPECT_TRUE(Has(md, "model reduction at declared: 1 - 1/")) << md;
}

}  // namespace
}  // namespace specsweep
