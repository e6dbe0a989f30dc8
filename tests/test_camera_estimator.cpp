// One speedup estimator (issue #46, docs/metrics.md "The speedup estimator"): the geometric
// mean of paired per-round ratios with a log-space bootstrap interval, and every display
// of a point's speedup (progress line, main table, latency table, CSV, plot data) giving
// that one figure.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/pipeline.h"
#include "harness/report/aggregate.h"
#include "harness/report/load.h"
#include "harness/report/plot.h"
#include "harness/report/statistics.h"
#include "harness/report/table.h"
#include "harness/store/merge.h"
#include "harness/store/results.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/shard.h"
#include "tests/run_fixtures.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using nlohmann::json;

// exp(mean log x), written out here so the tests do not take the library's word for it.
double GeoMean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += std::log(v);
  return std::exp(s / double(x.size()));
}

TEST(Estimator, IsTheGeometricMeanOfTheRatios) {
  const std::vector<double> ratios = {2.0, 0.5, 1.0, 4.0, 1.25};
  const Interval s = Speedup(ratios, 7);
  EXPECT_NEAR(s.mean, GeoMean(ratios), 1e-12);
  EXPECT_NE(s.mean, Mean(ratios));  // 1.38 (geometric) against 1.75 (arithmetic)
  EXPECT_EQ(s.n, 5);
  // Ratios no logarithm has (a run that generated nothing, a missing value) are left out.
  const Interval some = Speedup(std::vector<double>{2.0, NAN, 0.0, -1.0, 8.0}, 7);
  EXPECT_NEAR(some.mean, 4.0, 1e-12);
  EXPECT_EQ(some.n, 2);
  EXPECT_TRUE(std::isnan(Speedup(std::vector<double>{1.5}, 7).low));  // no interval from one round
}

TEST(Estimator, IsSymmetric) {
  const std::vector<double> ab = {1.2, 0.9, 1.5, 1.1, 0.7, 1.3, 2.0, 1.05};
  std::vector<double> ba;
  for (double r : ab) ba.push_back(1.0 / r);
  const Interval s = Speedup(ab, 42), t = Speedup(ba, 42);
  // speedup(A, B) = 1 / speedup(B, A), and the interval's ends swap alike.
  EXPECT_NEAR(s.mean * t.mean, 1.0, 1e-12);
  EXPECT_NEAR(s.low * t.high, 1.0, 1e-12);
  EXPECT_NEAR(s.high * t.low, 1.0, 1e-12);
  // The arithmetic mean of ratios is not: its two directions multiply to 1.09 here.
  EXPECT_GT(Mean(ab) * Mean(ba), 1.05);
}

TEST(Estimator, LogSpaceIntervalContainsThePointAndIsAsymmetric) {
  const std::vector<double> ratios = {1.0, 1.1, 0.9, 1.0, 3.0, 1.05, 0.95, 1.0};
  const Interval s = Speedup(ratios, SeedOf("point"));
  EXPECT_LT(s.low, s.mean);
  EXPECT_GT(s.high, s.mean);
  EXPECT_GT(s.low, 0.0);
  // One slow baseline round stretches the upper side more than the lower.
  EXPECT_GT(s.high - s.mean, s.mean - s.low);
  // The same rounds always give the same interval.
  const Interval again = Speedup(ratios, SeedOf("point"));
  EXPECT_EQ(s.low, again.low);
  EXPECT_EQ(s.high, again.high);
}

// A point and its baseline over `tps.size()` rounds of one prompt: round i ran the baseline at
// base[i] and the point at tps[i] tokens/s (next-token latency 1/tokens/s).
struct Pair {
  RawRecord base, point;
};
GenerationStats Run(double tps) {
  GenerationStats s;
  s.prompt_tokens = 5;
  s.generated_tokens = 10;
  s.target_calls = 5;
  s.tokens_per_s = tps;
  s.total_s = 10 / tps;
  s.mean_next_token_latency_s = 1.0 / tps;
  return s;
}
RawRecord Record(const std::string& key, const std::string& baseline_key, const std::vector<double>& tps) {
  RawRecord r;
  r.key = key;
  r.baseline_key = baseline_key;
  r.params = json{{"decoder", "speculative"}, {"k", 2}, {"k_policy", "constant"}};
  r.prompt_tokens = {5};
  r.costs.target_s = {0.010, 0.011, 0.012};
  r.costs.draft_s = {0.001, 0.002};
  for (size_t i = 0; i < tps.size(); ++i) r.runs.push_back({0, int(i), int(i), 0, Run(tps[i]), "h"});
  return r;
}

TEST(Estimator, RecordsCarryTheGeometricMeanNotTheArithmeticOne) {
  // A point exactly as fast as its baseline on a noisy host: each round one of the two runs
  // caught a slow spell (x e^-0.5). The mean of the per-round ratios says 1.13x; the
  // geometric mean says what happened, 1.00x, for tokens/s and next-token latency alike.
  const double slow = 100 * std::exp(-0.5);
  const RawRecord base = Record("B", "", {100, slow, 100, slow, 100, slow});
  const RawRecord point = Record("P", "B", {slow, 100, slow, 100, slow, 100});
  const AggregateRecord a = AggregateTyped(point, &base);
  ASSERT_TRUE(a.comparison);
  EXPECT_NEAR(a.comparison->speedup.mean, 1.0, 1e-12);
  EXPECT_NEAR(a.comparison->latency_speedup.mean, 1.0, 1e-12);
  EXPECT_NEAR(a.flat["speedup"].get<double>(), 1.0, 1e-12);
  EXPECT_LT(a.flat["speedup_ci_low"].get<double>(), 1.0);
  EXPECT_GT(a.flat["speedup_ci_high"].get<double>(), 1.0);
  EXPECT_NEAR(a.flat["per_prompt_speedup"][0].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(std::cosh(0.5), 1.1276, 1e-4);  // what the arithmetic mean of the ratios gave

  // Compared the other way round, the speedup is the reciprocal.
  const RawRecord fast = Record("F", "B", {150, 130, 160, 120, 155, 140});
  const RawRecord back = Record("B2", "F", {100, slow, 100, slow, 100, slow});
  const double there = AggregateTyped(fast, &base).comparison->speedup.mean;
  const double and_back = AggregateTyped(back, &fast).comparison->speedup.mean;
  EXPECT_NEAR(there * and_back, 1.0, 1e-12);
}

// ------------------------------------------------------------------------------------
// Every display of one point's speedup, over the points of a small sweep.

struct Shown {
  double speedup = NAN, low = NAN, high = NAN;
};

// "[3/5] NAME  ..., speedup 1.23x [1.10, 1.40]..." lines of the progress output, by name.
std::map<std::string, std::string> ProgressSpeedups(const std::string& text) {
  std::map<std::string, std::string> out;
  static const std::regex line(R"(\[\d+/\d+\] (\S+)  .*, speedup (\S+x \[[^\]]*\]))");
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) out[(*it)[1]] = (*it)[2];
  return out;
}

// The geometric mean of the point's paired per-round ratios, from the raw runs of the .jsonl.
double FromRawRuns(const RawRecord& r, const RawRecord& b, bool latency) {
  std::map<std::pair<int, int>, const GenerationStats*> base;
  for (auto& run : b.runs) base[{run.prompt, run.rep}] = &run.stats;
  std::vector<double> ratios;
  for (auto& run : r.runs) {
    const GenerationStats& bs = *base.at({run.prompt, run.rep});
    ratios.push_back(latency ? bs.mean_next_token_latency_s / run.stats.mean_next_token_latency_s
                             : run.stats.tokens_per_s / bs.tokens_per_s);
  }
  return GeoMean(ratios);
}

// The CSV's value of `column` in its only data row.
double CsvValue(const Table& t, const std::string& column) {
  EXPECT_EQ(t.rows.size(), 1u);
  for (size_t i = 0; i < t.header.size(); ++i)
    if (t.header[i] == column) return t.rows.at(0)[i].empty() ? NAN : std::stod(t.rows.at(0)[i]);
  ADD_FAILURE() << "no column " << column;
  return NAN;
}

std::string Cell(double v, double lo, double hi) { return fmt::format("{:.2f}x [{:.2f}, {:.2f}]", v, lo, hi); }

TEST(Estimator, ProgressLineTablesCsvAndPlotGiveOneSpeedupPerPoint) {
  const testing::TinyFiles f = testing::MakeTinyFiles(11, "Once upon a time\nThe dog ran\nA big red ball\n");
  const std::string yaml = f.dir + "/est.yaml";
  testing::WriteFile(yaml, "name: est\nmodels: [\"" + f.model + "\"]\nprompts: {file: \"" + f.prompts +
                               "\", count: 3}\nrepetitions: 2\nsweep:\n  k: [2, 3]\n  max_new_tokens: 6\n"
                               "decoders:\n  - decoder: speculative\n    draft: [layers=1]\n  - self-spec\n");
  RunOptions o = testing::QuietRun(f.dir + "/out");
  std::FILE* progress = std::tmpfile();
  ASSERT_NE(progress, nullptr);
  o.progress = progress;
  const RunSummary s = RunExperiment(LoadExperiment(yaml), o);
  std::string text(size_t(std::ftell(progress)), '\0');
  std::rewind(progress);
  ASSERT_EQ(std::fread(text.data(), 1, text.size(), progress), text.size());
  std::fclose(progress);
  const std::map<std::string, std::string> progress_speedups = ProgressSpeedups(text);

  std::map<std::string, RawRecord> raw;
  for (auto& r : ReadJsonl(s.jsonl_path).records) raw[r.key] = r;
  const LoadedRecords json_file = LoadRecords(s.json_path), jsonl_file = LoadRecords(s.jsonl_path);
  EXPECT_EQ(json_file.context["schema_version"], kGeometricSpeedupSchemaVersion);
  EXPECT_EQ(json_file.speedup_note, "");
  ASSERT_EQ(json_file.records.size(), 5u);
  int checked = 0;
  for (size_t i = 0; i < json_file.records.size(); ++i) {
    const AggregateRecord& rec = json_file.records[i];
    if (!rec.Speculative()) continue;
    SCOPED_TRACE(rec.identity.name);
    ASSERT_TRUE(rec.comparison);
    const RawRecord& r = raw.at(rec.identity.key);
    const RawRecord& b = raw.at(r.baseline_key);
    const Interval& sp = rec.comparison->speedup;
    const Interval& lat = rec.comparison->latency_speedup;
    // The record: the geometric mean of its rounds, by both readers (.json as written,
    // .jsonl aggregated now).
    EXPECT_NEAR(sp.mean, FromRawRuns(r, b, false), 1e-9 * sp.mean);
    EXPECT_NEAR(lat.mean, FromRawRuns(r, b, true), 1e-9 * lat.mean);
    EXPECT_DOUBLE_EQ(jsonl_file.records[i].comparison->speedup.mean, sp.mean);
    EXPECT_LE(sp.low, sp.mean);
    EXPECT_GE(sp.high, sp.mean);
    // The progress line.
    ASSERT_TRUE(progress_speedups.count(rec.identity.name)) << text;
    EXPECT_EQ(progress_speedups.at(rec.identity.name), Cell(sp.mean, sp.low, sp.high));
    // The main table and its CSV, of this point alone.
    std::vector<AggregateRecord> one = {json_file.records[0], rec};
    ASSERT_FALSE(json_file.records[0].Speculative());
    const std::string md = RenderTable(MainTable(one), TableFormat::Markdown);
    EXPECT_NE(md.find(rec.Suspect() ? std::string("suspect") : Cell(sp.mean, sp.low, sp.high)), std::string::npos)
        << md;
    const Table csv = MainTableLong(one);
    if (!rec.Suspect()) {
      EXPECT_NEAR(CsvValue(csv, "speedup"), sp.mean, 1e-5 * sp.mean);
      EXPECT_NEAR(CsvValue(csv, "speedup_ci_low"), sp.low, 1e-5 * sp.low);
      EXPECT_NEAR(CsvValue(csv, "speedup_ci_high"), sp.high, 1e-5 * sp.high);
      // The plot's data.
      const std::vector<Series> plot = SpeedupVsK(one);
      ASSERT_EQ(plot.size(), 1u);
      EXPECT_DOUBLE_EQ(plot[0].xy.at(0).second, sp.mean);
    }
    ++checked;
    if (rec.Suspect()) continue;  // no candidate for the latency table's fastest configuration
    // The latency table: the point's speedup as everywhere, and the reduction of next-token
    // latency from the same estimator on the latency ratio, 1 - 1/latency speedup.
    const Table lt = LatencyTable(one);
    ASSERT_EQ(lt.rows.size(), 1u);
    const std::vector<std::string>& row = lt.rows[0];
    ASSERT_GE(row.size(), 2u);
    EXPECT_EQ(row[row.size() - 2].rfind(Cell(sp.mean, sp.low, sp.high), 0), 0u) << row[row.size() - 2];
    EXPECT_EQ(row.back().rfind(fmt::format("{:.1f}%", 100 * (1 - 1 / lat.mean)), 0), 0u) << row.back();
  }
  EXPECT_EQ(checked, 4);
}

// A final .json of the arithmetic-mean schema still loads, its speedups as written, and the
// reader is told; merge does not relabel such shards as geometric.
TEST(Estimator, OlderResultsLoadAndSaySoAndMergeKeepsTheirSchema) {
  const std::string path = testing::TempDir() + "/old.json";
  json rec = {{"key", "k"}, {"name", "p"}, {"decoder", "speculative"}, {"k", 2}, {"speedup", 1.4}};
  testing::WriteFile(path, json{{"context", {{"schema_version", 3}}}, {"benchmarks", {rec}}}.dump());
  const LoadedRecords old = LoadRecords(path);
  ASSERT_EQ(old.records.size(), 1u);
  EXPECT_EQ(FieldNumber(old.records[0], "speedup"), 1.4);
  EXPECT_NE(old.speedup_note.find("arithmetic means"), std::string::npos) << old.speedup_note;
  EXPECT_NE(old.speedup_note.find(path), std::string::npos) << old.speedup_note;
  const auto cli = testing::RunCli({"table", path, "--format", "csv"});
  EXPECT_NE(cli.err.find("note: " + path + ": results schema 3"), std::string::npos) << cli.err;
  // An unknown future schema is refused, naming the field.
  testing::WriteFile(path,
                     json{{"context", {{"schema_version", kResultsSchemaVersion + 1}}}, {"benchmarks", {rec}}}.dump());
  testing::ExpectError([&] { LoadRecords(path); }, {"context.schema_version", "2 to 4"});

  // Shards: records are merged as written, so an arithmetic-mean shard keeps schema 3, and
  // shards of both estimators are refused.
  auto shard = [&](int index, int version) {
    Results r;
    r.path = fmt::format("s{}.json", index);
    r.context = {{"schema_version", version}, {"experiment", "exp"}, {"experiment_sha256", "abc"}};
    r.context.update(ShardContext(ShardSpec{index, 2}, 1, 2));
    r.records.push_back({{"key", fmt::format("k{}", index)}, {"speedup", 1.2}});
    return r;
  };
  EXPECT_EQ(MergeShards({shard(0, 3), shard(1, 3)}, {}).doc["context"]["schema_version"], 3);
  EXPECT_EQ(MergeShards({shard(0, 4), shard(1, 4)}, {}).doc["context"]["schema_version"], 4);
  testing::ExpectError(
      [&] {
        MergeShards({shard(0, 4), shard(1, 3)}, {});
      },
      {"s1.json: context.schema_version: 3", "s0.json has 4"});
}

}  // namespace
}  // namespace specsweep
