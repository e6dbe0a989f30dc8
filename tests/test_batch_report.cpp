// Issue #50, items 4 and 5 (report side): batched points aggregate their per-sequence
// figures, the cost model at batch B, the crossover batch, the speedup-vs-batch table
// (Markdown, LaTeX that compiles) and plot (measured and predicted series).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "decoders/common.h"
#include "harness/report/aggregate.h"
#include "harness/report/batch_curve.h"
#include "harness/report/plot.h"
#include "harness/report/record.h"
#include "harness/report/table.h"
#include "tests/record_fixtures.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace specsweep {
namespace {

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// One sequence of K = 2 steps: the first accepts both drafts, the second none; its
// prefill yields the first token. 5 tokens, 3 target calls, 4 draft calls (the second
// step's first one a catch-up of two tokens).
GenerationStats SpecSequence() {
  GenerationStats s;
  s.prompt_tokens = 8;
  s.generated_tokens = 5;
  s.target_calls = 3;
  s.draft_calls = 4;
  s.drafted = 4;
  s.accepted = 2;
  s.k_per_step = {2, 2};
  s.accepted_per_step = {2, 0};
  s.drafted_at_pos = {2, 2};
  s.accepted_at_pos = {1, 1};
  return s;
}

// A batch of `b` sequences as the batched decoders aggregate them: counts and step traces
// summed (concatenated) over the sequences, per_sequence listing each. Sequence i's
// next-token latency is (1 + i) ms; acceptance 2/4 for all but the last, which accepts
// everything when `ragged`.
GenerationStats Batch(int b, bool speculative, double tps, bool ragged = false) {
  GenerationStats agg;
  agg.batch = b;
  for (int i = 0; i < b; ++i) {
    GenerationStats s = SpecSequence();
    if (!speculative) s = GenerationStats{}, s.prompt_tokens = 8, s.generated_tokens = 5, s.target_calls = 5;
    if (speculative && ragged && i == b - 1) s.accepted = 4;
    AddStats(agg, s);
    agg.per_sequence.push_back(
        {s.prompt_tokens, s.generated_tokens, s.target_calls, s.drafted, s.accepted, 0.01, 1e-3 * (1 + i), false});
  }
  agg.batch_target_calls = speculative ? 3 : 5;
  agg.batch_draft_calls = speculative ? 4 : 0;
  agg.tokens_per_s = tps;
  agg.total_s = double(agg.generated_tokens) / tps;
  return agg;
}

RawRecord RawAt(int b, bool speculative, double tps, bool ragged = false) {
  RawRecord r;
  r.key = r.name = fmt::format("{}{}", speculative ? "spec" : "ar", b);
  r.baseline_key = speculative ? fmt::format("ar{}", b) : "";
  r.params = json{{"decoder", speculative ? "speculative" : "ar"}, {"k", speculative ? 2 : 0},
                  {"k_policy", speculative ? "constant" : "-"},    {"draft", speculative ? "q4_0" : "-"},
                  {"draft_quant", speculative ? "q4_0" : "-"},     {"model", "m"}};
  if (b != 1) r.params["batch"] = std::to_string(b);  // as the batch setting writes it
  r.prompt_tokens = {8};
  // At batch 4: T(4 x 1) 20 ms, T(4 x 2) 24 ms, T(4 x 3) 30 ms; T_d(4 x 1) 2 ms, T_d(4 x 2) 3 ms.
  r.costs.target_s = {0.020, 0.024, 0.030};
  if (speculative) r.costs.draft_s = {0.002, 0.003};
  r.runs.push_back({0, 0, 0, 0, Batch(b, speculative, tps, ragged), "h"});
  return r;
}

TEST(BatchAggregate, RecordsCarryTheBatchAndPerSequenceFigures) {
  std::vector<RawRecord> raws;
  for (int b : {1, 2, 4, 8, 16}) {
    raws.push_back(RawAt(b, false, 100.0 * b));
    raws.push_back(RawAt(b, true, 150.0 * b, true));
  }
  const std::vector<AggregateRecord> recs = AggregateAllTyped(raws);
  ASSERT_EQ(recs.size(), 10u);
  for (const AggregateRecord& r : recs) {
    const int b = r.batch.batch;
    SCOPED_TRACE(r.identity.key);
    EXPECT_EQ(r.flat["batch"], b);  // a number in the flat record, 1 when the params have none
    EXPECT_EQ(FieldText(r, "batch"), std::to_string(b));
    // The mean accepted length stays per sequence: generated / target calls of the sequences.
    EXPECT_NEAR(FieldNumber(r, "mean_accepted_length"), r.Speculative() ? 5.0 / 3.0 : 1.0, 1e-12);
    if (b == 1) {
      EXPECT_FALSE(r.flat.contains("per_sequence_next_token_latency_s"));
      continue;
    }
    EXPECT_EQ(FieldNumber(r, "batch_target_calls"), r.Speculative() ? 3 : 5);
    // Sequences' latencies 1 .. b ms: mean (b + 1) / 2 ms, spread 1 to b ms.
    EXPECT_NEAR(FieldNumber(r, "per_sequence_next_token_latency_s"), 1e-3 * (b + 1) / 2.0, 1e-12);
    EXPECT_NEAR(FieldNumber(r, "per_sequence_next_token_latency_min_s"), 1e-3, 1e-12);
    EXPECT_NEAR(FieldNumber(r, "per_sequence_next_token_latency_max_s"), 1e-3 * b, 1e-12);
    EXPECT_NEAR(FieldNumber(r, "batch_occupancy"), 1.0, 1e-12);  // every sequence in every call
    if (r.Speculative()) {
      EXPECT_NEAR(FieldNumber(r, "per_sequence_acceptance_min"), 0.5, 1e-12);
      EXPECT_NEAR(FieldNumber(r, "per_sequence_acceptance_max"), 1.0, 1e-12);  // the ragged one
    }
    // Read back from the flat form: the same figures.
    const AggregateRecord back = AggregateRecord::FromJson(r.flat);
    EXPECT_EQ(back.batch.batch, b);
    EXPECT_EQ(back.ToJson().dump(), r.flat.dump());
  }
}

TEST(BatchAggregate, RecordsWithoutTheFieldRanAtBatchOne) {
  json old = testing::ArPointJson();
  const AggregateRecord r = AggregateRecord::FromJson(old);
  EXPECT_EQ(r.batch.batch, 1);
  EXPECT_EQ(FieldText(r, "batch"), "1");   // as a newer batch-1 record says it
  EXPECT_FALSE(r.flat.contains("batch"));  // kept as read
  old["batch"] = 1;
  EXPECT_TRUE(Varying({r, AggregateRecord::FromJson(old)}, {}).empty());
}

TEST(BatchAggregate, OccupancyFallsWhenSequencesLeave) {
  RawRecord r = RawAt(4, true, 600);
  // One sequence finished after its prefill: 3 + 3 + 3 + 1 calls of 4 x 3 slots.
  r.runs[0].stats.per_sequence.back().target_calls = 1;
  const AggregateRecord a = AggregateTyped(r, nullptr);
  EXPECT_NEAR(a.batch.batch_occupancy, 10.0 / 12.0, 1e-12);
}

// The cost model at batch 4 from the batch's costs: a batch step drafts K = 2 calls of
// T_d(4) (the catch-up after a full step T_d(8)) and verifies in one T(4 x 3), yielding
// 4 E[tokens]; AR yields 4 tokens per T(4 x 1).
TEST(BatchCostModel, PredictedSpeedupAtBatchFromTheBatchCosts) {
  const RawRecord ar = RawAt(4, false, 400), spec = RawAt(4, true, 500);
  const AggregateRecord a = AggregateTyped(spec, &ar);
  ASSERT_TRUE(a.cost.speculative);
  // Per sequence-step: E[tokens] = 1 + (4 + 4) / 8 = 2; draft time (16 T_d(4) + 4 catch-ups
  // x (T_d(8) - T_d(4))) / 8 = 4.5 ms; verify T(4 x 3) = 30 ms. The AR baseline's 4
  // sequences each yield their first token in their prefill: 20 tokens in 16 decode calls.
  const double expected = 2.0 * 0.020 / (20.0 / 16.0) / (0.0045 + 0.030);
  EXPECT_NEAR(a.cost.speculative->predicted_speedup, expected, 1e-12);
  EXPECT_NEAR(expected, 0.92753623, 1e-8);
  EXPECT_NEAR(FieldNumber(a, "predicted_speedup"), expected, 1e-12);
  // At batch 1 (one prefill) the same runs give the batch-1 model unchanged.
  const RawRecord ar1 = RawAt(1, false, 100);
  const AggregateRecord one = AggregateTyped(RawAt(1, true, 150), &ar1);
  EXPECT_NEAR(one.cost.speculative->predicted_speedup, 2.0 * 0.020 / (5.0 / 4.0) / (0.0045 + 0.030), 1e-12);
}

TEST(BatchCrossover, InterpolatedInLog2BatchBeyondAndNone) {
  // Between 2 (1.2) and 4 (0.9): log2 = 1 + 0.2 / 0.3.
  Crossover c = FindCrossover({{8, 0.6}, {1, 1.5}, {4, 0.9}, {2, 1.2}});
  ASSERT_EQ(c.kind, Crossover::Kind::kAt);
  EXPECT_NEAR(c.batch, std::exp2(1.0 + 2.0 / 3.0), 1e-12);
  EXPECT_EQ(CrossoverText(c), "3.2");
  // Exactly 1 is not below 1: the crossover starts there.
  EXPECT_NEAR(FindCrossover({{1, 1.3}, {4, 1.0}, {8, 0.8}}).batch, 4.0, 1e-12);
  // The first fall below 1, though it rises again.
  EXPECT_NEAR(FindCrossover({{1, 1.3}, {2, 0.7}, {4, 1.1}}).batch, std::exp2(0.3 / 0.6), 1e-12);
  const Crossover beyond = FindCrossover({{1, 2.0}, {2, 1.6}, {4, 1.3}, {8, 1.1}, {16, 1.01}});
  EXPECT_EQ(beyond.kind, Crossover::Kind::kBeyond);
  EXPECT_EQ(CrossoverText(beyond), "> 16");
  const Crossover none = FindCrossover({{1, 0.9}, {2, 0.8}});
  EXPECT_EQ(none.kind, Crossover::Kind::kNone);
  EXPECT_EQ(CrossoverText(none), "none (< 1 at 1)");
  EXPECT_EQ(CrossoverText(FindCrossover({{1, NAN}})), "-");
  // Non-finite speedups (a suspect point) are skipped, not read as 0.
  EXPECT_NEAR(FindCrossover({{1, 1.5}, {2, NAN}, {4, 0.5}}).batch, 2.0, 1e-12);
}

// Flat records of drafts q4_0 and q8_0 at K 2 over batch 1-16 (q4_0's speedup falling by
// 0.25 per doubling; q8_0's always above 1) with predictions, and their baselines.
std::vector<json> SweepRecords() {
  std::vector<json> recs;
  for (int b : {1, 2, 4, 8, 16}) {
    json ar = testing::ArPointJson();
    ar["key"] = fmt::format("ar;batch={}", b), ar["batch"] = b;
    recs.push_back(ar);
    for (const char* q : {"q4_0", "q8_0"}) {
      const bool q4 = std::string(q) == "q4_0";
      const double s = q4 ? 1.6 - 0.25 * std::log2(b) : 1.5, p = q4 ? 1.7 - 0.25 * std::log2(b) : 1.4;
      recs.push_back(json{{"key", fmt::format("{};batch={}", q, b)},
                          {"name", q},
                          {"model", "m"},
                          {"decoder", "speculative"},
                          {"k", 2},
                          {"k_policy", "constant"},
                          {"draft", q},
                          {"draft_base", "self"},
                          {"draft_quant", q},
                          {"acceptance_source", "alpha=0.8"},
                          {"batch", b},
                          {"speedup", s},
                          {"speedup_ci_low", s - 0.05},
                          {"speedup_ci_high", s + 0.05},
                          {"predicted_speedup", p},
                          {"mean_accepted_length", 2.2},
                          {"acceptance_rate", 0.6},
                          {"suspect", false},
                          {"busy", false},
                          {"wide_ci", false},
                          {"kernel_isa", "avx512"},
                          {"threads_used", 2},
                          {"repetitions", 3},
                          {"prompts", 4},
                          {"baseline_tokens_per_s", 100.0 * b}});
    }
  }
  return recs;
}

TEST(BatchTable, MeasuredAndPredictedPerBatchWithTheCrossover) {
  const std::vector<AggregateRecord> recs = RecordsFromJson(SweepRecords());
  const Table t = BatchTable(recs, {}, json{{"cpu_model", "AMD EPYC Zen 4"}});
  const std::string md = RenderTable(t, TableFormat::Markdown);
  for (const char* s : {"B=1", "B=2", "B=4", "B=8", "B=16", "crossover", "measured", "predicted", "q4_0", "q8_0",
                        "replayed α=0.8", "AMD EPYC Zen 4", "1.60x [1.55, 1.65]", "1.70x", "1.10x [1.05, 1.15]"})
    EXPECT_TRUE(Has(md, s)) << s << "\n" << md;
  ASSERT_EQ(t.rows.size(), 4u);  // measured and predicted rows of two drafts
  auto crossover = [&](const std::string& draft, const std::string& kind) {
    for (const auto& row : t.rows)
      if (std::find(row.begin(), row.end(), draft) != row.end() && row[t.label_cols - 1] == kind) return row.back();
    return std::string("no row");
  };
  // q4_0 measured, 1.6 - 0.25 log2 B: between 4 (1.1) and 8 (0.85), 2^(2 + 0.1/0.25) = 2^2.4;
  // predicted, 1.7 - 0.25 log2 B: between 4 (1.2) and 8 (0.95), 2^(2 + 0.2/0.25) = 2^2.8.
  EXPECT_EQ(crossover("q4_0", "measured"), fmt::format("{:.1f}", std::exp2(2.4))) << md;
  EXPECT_EQ(crossover("q4_0", "predicted"), fmt::format("{:.1f}", std::exp2(2.8))) << md;
  EXPECT_EQ(crossover("q8_0", "measured"), "> 16") << md;
  EXPECT_EQ(crossover("q8_0", "predicted"), "> 16") << md;
  EXPECT_TRUE(Has(md, "log2(batch)")) << md;  // the note says how it is interpolated
}

// The batch table's LaTeX compiles with pdflatex in a plain article without an overfull
// box (the pattern of test_camera_latex).
TEST(BatchTable, LatexCompiles) {
  if (std::system("command -v pdflatex >/dev/null 2>&1") != 0) GTEST_SKIP() << "pdflatex is not installed";
  const std::string dir = testing::TempDir();
  testing::WriteFile(dir + "/batch.json", json{{"benchmarks", SweepRecords()}}.dump());
  const testing::CliResult r = testing::RunCli({"table", dir + "/batch.json", "--table", "batch", "--format", "latex"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& tex = r.out;
  EXPECT_TRUE(Has(tex, "\\label{tab:batch-batch}")) << tex;
  for (unsigned char c : tex) ASSERT_LT(c, 0x80) << tex;
  std::string packages;
  for (const char* p : {"booktabs", "graphicx", "amssymb", "amsmath", "textcomp"})
    if (Has(tex, fmt::format("\\usepackage{{{}}}", p))) packages += fmt::format("\\usepackage{{{}}}\n", p);
  testing::WriteFile(dir + "/table.tex", tex);
  testing::WriteFile(dir + "/doc.tex",
                     "\\documentclass{article}\n" + packages + "\\begin{document}\n\\input{table}\n\\end{document}\n");
  const std::string run =
      "cd '" + dir + "' && pdflatex -interaction=nonstopmode -halt-on-error doc.tex >/dev/null 2>&1";
  ASSERT_EQ(std::system(run.c_str()), 0) << testing::ReadFile(dir + "/doc.log") << "\n" << tex;
  EXPECT_FALSE(Has(testing::ReadFile(dir + "/doc.log"), "Overfull \\hbox")) << tex;
  // Also from `table --table all`: the batch table joins when the batch varies.
  const testing::CliResult all = testing::RunCli({"table", dir + "/batch.json", "--table", "all"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_TRUE(Has(all.out, "crossover")) << all.out;
}

TEST(BatchPlot, SpeedupVsBatchHasThePredictionBesideEachDraft) {
  const std::vector<AggregateRecord> recs = RecordsFromJson(SweepRecords());
  const std::vector<Series> series = SpeedupVsBatch(recs);
  ASSERT_EQ(series.size(), 4u);  // per draft its measured series, then its prediction
  size_t q4 = Has(series[0].title, "q4_0") ? 0 : 2;
  ASSERT_TRUE(Has(series[q4].title, "q4_0")) << series[q4].title;
  EXPECT_EQ(series[q4 + 1].title, series[q4].title + kPredictedSuffix);
  ASSERT_EQ(series[q4].xy.size(), 5u);
  EXPECT_EQ(series[q4].xy.back().first, 16);
  EXPECT_EQ(series[q4].ci.size(), 5u);                   // measured: interval bars
  EXPECT_NEAR(series[q4 + 1].xy[2].second, 1.2, 1e-12);  // predicted at B = 4
  EXPECT_TRUE(series[q4 + 1].ci.empty());
  EXPECT_TRUE(Has(series[q4].title, "replayed α=0.8")) << series[q4].title;  // the acceptance source
  PlotOptions o;
  o.subtitle = "AMD EPYC Zen 4";
  std::vector<PlotFigure> figures = PlotFigures(recs, o);
  const PlotFigure* f = nullptr;
  for (const PlotFigure& g : figures)
    if (g.name == "speedup_vs_batch") f = &g;
  ASSERT_TRUE(f);
  EXPECT_EQ(f->skipped, "");
  EXPECT_TRUE(Has(f->dat, "\"" + series[q4 + 1].title + "\"")) << f->dat;
  // A pair shares its colour.
  const std::string colours = f->Var("colours");
  const std::string first = colours.substr(1, colours.find('|') - 1);
  EXPECT_TRUE(Has(colours, first + "|" + first + "|")) << colours;
  EXPECT_TRUE(Has(f->Var("plotsubtitle"), "AMD EPYC Zen 4"));
  // One batch: no such plot.
  std::vector<json> one;
  for (const json& j : SweepRecords())
    if (j["batch"] == 1) one.push_back(j);
  for (const PlotFigure& g : PlotFigures(RecordsFromJson(one), o))
    if (g.name == "speedup_vs_batch") {
      EXPECT_EQ(g.skipped, "the experiment has no batch axis");
    }
  // gnuplot draws it (its script reads the pairs).
  if (FindGnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed";
  o.out_dir = testing::TempDir() + "/plots";
  bool drawn = false;
  for (const PlotOutput& p : MakePlots(recs, o))
    if (p.name == "speedup_vs_batch") drawn = p.skipped.empty() && p.images.size() >= 2;
  EXPECT_TRUE(drawn);
  const std::string script = testing::ReadFile(std::string(SPECSWEEP_SOURCE_DIR) + "/plots/speedup_vs_batch.gp");
  EXPECT_TRUE(Has(script, "index 2*j+1") && Has(script, "dt 2") && Has(script, "logscale x 2")) << script;
}

// A batch of 16 over 8 prompts and 2 repetitions makes 2 rounds: a bootstrap over 2-4
// ratios cannot give 95% tails however tight they are, so the point is flagged (‡).
TEST(BatchReport, IntervalsOfFewerThanFiveRoundsAreFlaggedWide) {
  EXPECT_TRUE(WideInterval({1.0, 0.99, 1.01, 2}));
  EXPECT_TRUE(WideInterval({1.0, 0.99, 1.01, 4}));
  EXPECT_FALSE(WideInterval({1.0, 0.99, 1.01, 5}));
  EXPECT_TRUE(WideInterval({1.0, 0.8, 1.2, 50}));  // ±20%: wide at any count
  // The same through aggregation: identical per-round ratios, 4 rounds against 5.
  for (int rounds : {4, 5}) {
    RawRecord ar = RawAt(16, false, 100.0), spec = RawAt(16, true, 150.0);
    for (RawRecord* r : {&ar, &spec})
      for (int i = 1; i < rounds; ++i) r->runs.push_back({0, i, i, 0, r->runs[0].stats, "h"});
    for (const AggregateRecord& r : AggregateAllTyped({ar, spec}))
      if (r.Speculative()) {
        EXPECT_EQ(r.WideCi(), rounds < 5) << rounds << " rounds";
      }
  }
}

}  // namespace
}  // namespace specsweep
