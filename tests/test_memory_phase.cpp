// Memory phases (harness/bench/memory_phase.h): the classifier on synthetic probe
// readings, the pairing of repetitions by phase, bench-forward --compare on synthetic
// child records, and bench-forward's per-repetition phase fields on a tiny model.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "harness/bench/bench_compare.h"
#include "harness/bench/memory_phase.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using P = MemoryPhase;

#define EXPECT_CONTAINS(msg, what) EXPECT_NE((msg).find(what), std::string::npos) << (msg)

TEST(MemoryPhase, TwoGroupsWithAGapAreTwoPhases) {
  // This host's two phases, readings in time order.
  const std::vector<double> r = {33.1, 34.0, 31.2, 55.3, 57.9, 52.4, 35.0, 56.0};
  const PhaseSplit s = SplitPhases(r);
  ASSERT_TRUE(s.two_phases);
  EXPECT_EQ(s.slow.readings, 4);
  EXPECT_EQ(s.fast.readings, 4);
  EXPECT_DOUBLE_EQ(s.slow.min_gbs, 31.2);
  EXPECT_DOUBLE_EQ(s.slow.max_gbs, 35.0);
  EXPECT_DOUBLE_EQ(s.fast.min_gbs, 52.4);
  EXPECT_DOUBLE_EQ(s.fast.max_gbs, 57.9);
  EXPECT_DOUBLE_EQ(s.split_gbs, (35.0 + 52.4) / 2);
  const std::vector<P> want = {P::kSlow, P::kSlow, P::kSlow, P::kFast, P::kFast, P::kFast, P::kSlow, P::kFast};
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(PhaseOf(s, r[i]), want[i]) << r[i];
  // Zen 5's phases, and one reading of a phase alone against many of the other.
  EXPECT_TRUE(SplitPhases(std::vector<double>{41, 45, 50, 57, 79, 84, 89}).two_phases);
  const PhaseSplit lone = SplitPhases(std::vector<double>{33, 34, 32, 33, 55});
  ASSERT_TRUE(lone.two_phases);
  EXPECT_EQ(lone.fast.readings, 1);
  EXPECT_EQ(PhaseOf(lone, 55), P::kFast);
}

// A long run on this host (1501 readings, 2026-11-29): both phases, a few readings taken
// during a switch between them and a tail below the fast phase.
TEST(MemoryPhase, AFewReadingsInTheGapDoNotHideTwoPhases) {
  std::vector<double> r;
  for (int i = 0; i < 550; ++i) r.push_back(30.0 + (i % 40) * 0.1);                  // 30.0..33.9
  for (int i = 0; i < 900; ++i) r.push_back(49.0 + (i % 60) * 0.1);                  // 49.0..54.9
  for (double g : {38.5, 40.2, 42.1, 42.8, 43.5, 44.0, 44.9, 45.5}) r.push_back(g);  // switches
  for (int i = 0; i < 40; ++i) r.push_back(45.0 + i * 0.1);                          // tail 45.0..48.9
  const PhaseSplit s = SplitPhases(r);
  ASSERT_TRUE(s.two_phases);
  EXPECT_EQ(PhaseOf(s, 32), P::kSlow);
  EXPECT_EQ(PhaseOf(s, 52), P::kFast);
  EXPECT_GT(s.split_gbs, 34.0);
  EXPECT_LT(s.split_gbs, 45.0);
  // One phase with a continuous tail of slow readings below it (a neighbour's busy
  // spells): no gap, one phase.
  std::vector<double> tail;
  for (int i = 0; i < 500; ++i) tail.push_back(31.0 + (i % 40) * 0.1);
  for (int i = 0; i < 60; ++i) tail.push_back(20.0 + i * 0.18);  // 20.0..30.6
  EXPECT_FALSE(SplitPhases(tail).two_phases);
}

TEST(MemoryPhase, OneGroupOrTooFewReadingsAreOnePhase) {
  const PhaseSplit one = SplitPhases(std::vector<double>{31, 32, 33, 34, 35, 33.5});
  EXPECT_FALSE(one.two_phases);
  EXPECT_EQ(one.slow.readings, 6);
  EXPECT_EQ(one.fast.readings, 0);
  EXPECT_DOUBLE_EQ(one.slow.min_gbs, 31);
  EXPECT_DOUBLE_EQ(one.slow.max_gbs, 35);
  EXPECT_EQ(PhaseOf(one, 31), P::kOne);
  EXPECT_EQ(PhaseOf(one, 80), P::kOne);  // no second phase to fall into
  EXPECT_EQ(RepetitionPhase(one, 31, 35), P::kOne);
  const PhaseSplit single = SplitPhases(std::vector<double>{42});
  EXPECT_FALSE(single.two_phases);
  EXPECT_EQ(single.slow.readings, 1);
  EXPECT_FALSE(SplitPhases(std::vector<double>{}).two_phases);
  EXPECT_FALSE(SplitPhases(std::vector<double>{40, 40}).two_phases);
}

TEST(MemoryPhase, NoisyReadingsWithoutAClearGapAreOnePhase) {
  // Spread evenly from 30 to 60: every cut's gap is below 1.25x.
  std::vector<double> even;
  for (double g = 30; g <= 60; g += 3) even.push_back(g);
  EXPECT_FALSE(SplitPhases(even).two_phases);
  // Three readings far apart but evenly spaced: the gap (15) is no wider than the upper
  // group's range (15), so nothing says where one phase ends.
  EXPECT_FALSE(SplitPhases(std::vector<double>{30, 45, 60}).two_phases);
  // A gap of 1.2x only (below kPhaseGapRatio) between two tight groups.
  EXPECT_FALSE(SplitPhases(std::vector<double>{40, 40.5, 41, 49.2, 49.5, 50}).two_phases);
  // The same groups 1.3x apart are two phases.
  EXPECT_TRUE(SplitPhases(std::vector<double>{40, 40.5, 41, 53.3, 53.5, 54}).two_phases);
}

TEST(MemoryPhase, RepetitionAcrossASwitchIsMixed) {
  const PhaseSplit s = SplitPhases(std::vector<double>{33, 34, 55, 56});
  ASSERT_TRUE(s.two_phases);
  EXPECT_EQ(RepetitionPhase(s, 33, 34), P::kSlow);
  EXPECT_EQ(RepetitionPhase(s, 55, 56), P::kFast);
  EXPECT_EQ(RepetitionPhase(s, 34, 55), P::kMixed);
  EXPECT_EQ(RepetitionPhase(s, 56, 33), P::kMixed);
  EXPECT_EQ(ParseMemoryPhase("mixed", "x"), P::kMixed);
  EXPECT_EQ(std::string(MemoryPhaseName(P::kOne)), "one");
  EXPECT_THROW(ParseMemoryPhase("medium", "phase"), Error);
}

TEST(MemoryPhase, PairsOnlyRepetitionsOfTheSamePhase) {
  // Slow-phase times near 20 ms, fast near 10: a pair across phases would give ~2 or ~0.5.
  const std::vector<double> num = {22, 11, 21, 16}, den = {10, 20, 21, 15};
  const std::vector<P> num_p = {P::kSlow, P::kFast, P::kSlow, P::kMixed};
  const std::vector<P> den_p = {P::kFast, P::kSlow, P::kSlow, P::kFast};
  PhasePairs pp;
  PairByPhase(num, num_p, den, den_p, pp);
  ASSERT_EQ(pp.ratios[P::kSlow].size(), 2u);
  EXPECT_DOUBLE_EQ(pp.ratios[P::kSlow][0], 22.0 / 20);  // the first slow of each side
  EXPECT_DOUBLE_EQ(pp.ratios[P::kSlow][1], 21.0 / 21);
  ASSERT_EQ(pp.ratios[P::kFast].size(), 1u);
  EXPECT_DOUBLE_EQ(pp.ratios[P::kFast][0], 11.0 / 10);
  EXPECT_EQ(pp.ratios.count(P::kMixed), 0u);
  EXPECT_EQ(pp.unpaired_num, 1);  // the repetition across a switch
  EXPECT_EQ(pp.mixed_num, 1);
  EXPECT_EQ(pp.unpaired_den, 1);  // the second fast one, which has no partner
  EXPECT_EQ(pp.mixed_den, 0);
  for (const auto& [phase, ratios] : pp.ratios)
    for (double r : ratios) EXPECT_LT(std::abs(r - 1.05), 0.1) << MemoryPhaseName(phase);
  // A second round adds to the same pairs.
  PairByPhase(std::vector<double>{12}, std::vector<P>{P::kFast}, std::vector<double>{10}, std::vector<P>{P::kFast}, pp);
  EXPECT_EQ(pp.ratios[P::kFast].size(), 2u);
  EXPECT_THROW(PairByPhase(num, std::vector<P>{P::kSlow}, den, den_p, pp), Error);
}

// A bench-forward child record: repetitions of q4_0 at n = 1 with the probe readings
// before and after each.
nlohmann::json ChildJson(const std::vector<double>& ms, const std::vector<double>& readings) {
  nlohmann::json reps = nlohmann::json::array();
  for (double t : ms) reps.push_back({{"ms", t}});
  return {{"context", {{"git_rev", "fake"}, {"memory_phases", {{"readings_gbs", readings}}}}},
          {"benchmarks",
           {{{"name", "bench_forward/q4_0/n:1"},
             {"format", "q4_0"},
             {"real_time", ms[1]},
             {"roofline_fraction", 0.5},
             {"per_repetition", reps}}}}};
}

// --compare on children that write synthetic records: variant b is 1.1x a in each
// phase, and its repetitions meet the phases in the opposite order, so any pair across
// phases would show as ~2.2 or ~0.55.
TEST(MemoryPhase, CompareRatiosNeverMixPhases) {
  const std::string dir = testing::TempDir();
  // a: slow, across a switch, fast; b: fast, across a switch, slow.
  std::ofstream(dir + "/a.json") << ChildJson({20, 15, 10}, {33, 34, 55, 56});
  std::ofstream(dir + "/b.json") << ChildJson({11, 16, 22}, {55, 56, 33, 34});
  const std::string script = dir + "/child.sh";
  std::ofstream(script) << "#!/bin/sh\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --json ]; then cp \"$FAKE_JSON\" "
                           "\"$2\"; fi\n  shift\ndone\n";
  ASSERT_EQ(0, chmod(script.c_str(), 0755));
  CompareArgs c;
  c.variants = {ParseCompareSpec("a=FAKE_JSON=" + dir + "/a.json", "--compare"),
                ParseCompareSpec("b=FAKE_JSON=" + dir + "/b.json", "--compare")};
  for (CompareVariant& v : c.variants) v.binary = script;
  c.rounds = 2;
  c.bench_args = {"bench-forward", "m.gguf"};
  c.model = "m.gguf";
  c.json = dir + "/cmp.json";
  ::testing::internal::CaptureStdout();
  RunCompare(c);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_CONTAINS(out,
                  "memory phases over the children's readings: two, slow 33.0..34.0 GB/s (8 readings) and fast "
                  "55.0..56.0 GB/s (8 readings), split at 44.5 GB/s");
  EXPECT_CONTAINS(out, "b/a slow (range) pairs");
  EXPECT_CONTAINS(out, "1.100 (1.10..1.10) 2");
  EXPECT_CONTAINS(out,
                  "b/a: 4 pairs of repetitions (slow 2, fast 2); unpaired: 2 repetitions of b and 2 of a (2 and 2 "
                  "across a phase switch)");
  std::ifstream f(c.json);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("context").at("memory_phases").at("two_phases"), true);
  EXPECT_EQ(j.at("context").at("memory_phases").at("paired"), "repetitions");
  const nlohmann::json* ratio = nullptr;
  for (const auto& r : j.at("benchmarks"))
    if (r.at("name") == "bench_forward_compare/ratio/b:a/q4_0/n:1") ratio = &r;
  ASSERT_NE(ratio, nullptr);
  EXPECT_DOUBLE_EQ(ratio->at("phases").at("slow").at("ratio").get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(ratio->at("phases").at("fast").at("ratio").get<double>(), 1.1);
  EXPECT_EQ(ratio->at("phases").at("slow").at("pairs"), 2);
  EXPECT_DOUBLE_EQ(ratio->at("ratio").get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(ratio->at("ratio_max").get<double>(), 1.1);
  EXPECT_EQ(ratio->at("unpaired").at("a"), 2);
}

// The real binary on a tiny model: every timing record lists each repetition's time, the
// probe readings right before and after it and its phase, and the medians per phase.
TEST(MemoryPhase, BenchForwardReportsEachRepetitionsPhase) {
  const std::string dir = testing::TempDir();
  testing::WriteTinyGguf(dir + "/tiny.gguf", 7);
  const testing::CliResult r = testing::RunCli({"--threads", "1", "bench-forward", dir + "/tiny.gguf", "--n", "1,2",
                                                "--reps", "3", "--ctx", "4", "--json", dir + "/b.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.find("memory phase: one (") != std::string::npos ||
              r.out.find("memory phases: two, slow ") != std::string::npos)
      << r.out;
  std::ifstream f(dir + "/b.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  const nlohmann::json& mp = j.at("context").at("memory_phases");
  const std::vector<double> readings = mp.at("readings_gbs").get<std::vector<double>>();
  ASSERT_EQ(readings.size(), 4u);  // after the warm-up and after each of 3 repetitions
  ASSERT_EQ(mp.at("repetition_phases").size(), 3u);
  const PhaseSplit s = SplitPhases(readings);
  EXPECT_EQ(mp.at("two_phases"), s.two_phases);
  ASSERT_EQ(j.at("benchmarks").size(), 2u);
  for (const auto& b : j.at("benchmarks")) {
    const auto& reps = b.at("per_repetition");
    ASSERT_EQ(reps.size(), 3u);
    int in_phases = 0;
    for (size_t k = 0; k < reps.size(); ++k) {
      EXPECT_GT(reps[k].at("ms").get<double>(), 0.0);
      EXPECT_EQ(reps[k].at("read_gbs_before").get<double>(), readings[k]);
      EXPECT_EQ(reps[k].at("read_gbs_after").get<double>(), readings[k + 1]);
      EXPECT_EQ(reps[k].at("phase"), MemoryPhaseName(RepetitionPhase(s, readings[k], readings[k + 1])));
      EXPECT_EQ(reps[k].at("phase"), mp.at("repetition_phases")[k]);
      in_phases += reps[k].at("phase") != "mixed";
    }
    int counted = 0;
    for (const auto& [name, ph] : b.at("phases").items()) {
      EXPECT_NE(name, "mixed");
      counted += ph.at("repetitions").get<int>();
      EXPECT_NEAR(ph.at("roofline_fraction").get<double>(),
                  ph.at("floor_ms").get<double>() / ph.at("real_time").get<double>(), 1e-9);
    }
    EXPECT_EQ(counted, in_phases);
    if (!s.two_phases) {  // one phase: its medians and roofline are the run's
      EXPECT_EQ(b.at("phases").at("one").at("real_time"), b.at("real_time"));
      EXPECT_EQ(b.at("phases").at("one").at("roofline_fraction"), b.at("roofline_fraction"));
    }
  }
}

}  // namespace
}  // namespace specsweep
