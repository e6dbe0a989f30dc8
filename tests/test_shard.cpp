// Sharded runs: shard selection (groups whole, cost balanced, deterministic), merging
// shard results (refusals, missing/duplicated points, contexts), and the CLI path
// run --shard -> merge -> table/check, plus the Slurm scripts (a fake sbatch records
// what would be submitted; tests/slurm/run_slurm_test.sh runs a real Slurm).
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "harness/report/load.h"
#include "harness/report/check.h"
#include "harness/sweep/experiment.h"
#include "harness/measure/measure.h"
#include "harness/store/merge.h"
#include "harness/store/results.h"
#include "harness/sweep/shard.h"
#include "base/error.h"
#include "models/gguf.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {
namespace {

using testing::ReadFile;
using testing::RunCli;
using testing::TempDir;
using testing::WriteFile;

// A grid over 2 models x 2 input lengths = 4 baseline groups of 3 (the model files
// only need to exist: costs come from GridCost).
Experiment GridExperiment() {
  static std::string dir = [] {
    std::string d = TempDir();
    WriteFile(d + "/big.bin", "");
    WriteFile(d + "/small.bin", "");
    WriteFile(d + "/passages.txt", "text\n");
    return d;
  }();
  json doc = json::parse(R"({
    "name": "grid", "models": [")" +
                         dir + R"(/big.bin", ")" + dir + R"(/small.bin"],
    "prompts": {"passages": "passages.txt", "count": 2},
    "sweep": {"k": [2, 4], "input_length": [16, 128], "max_new_tokens": 32},
    "decoders": ["ar", {"decoder": "self-spec", "draft_quant": ["q8_0"]}]})");
  return ParseExperiment(doc, dir + "/grid.json");
}

double GridCost(const Point& p) { return PointCost(p, p.model.ends_with("big.bin") ? 100.0 : 1.0, 2, 1, 0.0); }

TEST(Shard, ParsesSpecAndNamesStem) {
  ShardSpec s = ParseShard("2/5", "--shard");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(ShardStem("quick", s), "quick.shard-2-of-5");
  for (const char* bad : {"", "3", "5/5", "-1/2", "1/0", "a/b", "1/2x", "1//2"}) {
    try {
      ParseShard(bad, "--shard");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--shard"), std::string::npos) << e.what();
    }
  }
}

TEST(Shard, GroupsAreBaselinePlusItsSpeculativePoints) {
  Experiment e = GridExperiment();
  ASSERT_EQ(e.points.size(), 12u);
  auto groups = BaselineGroups(e.points);
  ASSERT_EQ(groups.size(), 4u);
  for (auto& g : groups) {
    ASSERT_EQ(g.size(), 3u);
    const Point& base = e.points[g[0]];
    EXPECT_FALSE(base.speculative());
    for (size_t i : g) EXPECT_EQ(e.points[i].Baseline().Key(), base.Key());
  }
}

TEST(Shard, AssignsLargestFirstToLeastLoaded) {
  EXPECT_EQ(AssignGroups({5, 4, 3, 3, 3}, 2), (std::vector<int>{0, 1, 1, 0, 1}));
  // By cost, not count: the one expensive group is alone.
  EXPECT_EQ(AssignGroups({1, 10, 1, 1}, 2), (std::vector<int>{1, 0, 1, 1}));
  // More shards than groups: the extra shards stay empty.
  EXPECT_EQ(AssignGroups({1, 1}, 3), (std::vector<int>{0, 1}));
}

TEST(Shard, ShardsPartitionTheGridKeepGroupsAndBalanceCost) {
  Experiment e = GridExperiment();
  // Costs: big model 100x the small one, input 128 vs 16 tokens -> (128+32)/(16+32).
  for (int n : {1, 2, 3, 5}) {
    std::map<std::string, int> owner;
    std::vector<double> load(n, 0.0);
    for (int i = 0; i < n; ++i) {
      auto pts = ShardPoints(e.points, ShardSpec{i, n}, GridCost);
      auto again = ShardPoints(e.points, ShardSpec{i, n}, GridCost);
      ASSERT_EQ(pts.size(), again.size());
      for (size_t j = 0; j < pts.size(); ++j) EXPECT_EQ(pts[j].Key(), again[j].Key());  // deterministic
      for (auto& p : pts) {
        EXPECT_TRUE(owner.emplace(p.Key(), i).second) << "in two shards: " << p.Key();
        load[i] += GridCost(p);
      }
      // Grid order kept: each baseline comes before its speculative points.
      std::set<std::string> seen;
      for (auto& p : pts) {
        if (p.speculative()) {
          EXPECT_TRUE(seen.count(p.Baseline().Key())) << p.Key();
        }
        seen.insert(p.Key());
      }
    }
    ASSERT_EQ(owner.size(), e.points.size()) << n << " shards";
    for (auto& p : e.points) EXPECT_EQ(owner[p.Key()], owner[p.Baseline().Key()]) << "group split: " << p.Key();
    if (n == 2) {
      // The two big-model groups (cost 160 vs 48 per point) go to different shards.
      EXPECT_NE(owner[e.points[0].Key()], owner[e.points[3].Key()]);
      EXPECT_TRUE(e.points[0].model.ends_with("big.bin"));
      EXPECT_TRUE(e.points[3].model.ends_with("big.bin"));
    }
  }
}

TEST(Shard, FileCostModelUsesModelBytesAndTokens) {
  std::string dir = TempDir();
  WriteFile(dir + "/big.bin", std::string(4000, 'x'));
  WriteFile(dir + "/small.bin", std::string(1000, 'x'));
  WriteFile(dir + "/prompts.txt", "abcdefgh\nabcdefghijkl\n");  // mean 10 bytes -> 3.5 tokens
  json doc = {{"name", "c"},
              {"models", {dir + "/big.bin", dir + "/small.bin"}},
              {"prompts", {{"file", dir + "/prompts.txt"}, {"count", 2}}},
              {"repetitions", 3},
              {"sweep", {{"max_new_tokens", 10}}},
              {"decoders", {"ar"}}};
  Experiment e = ParseExperiment(doc, dir + "/c.json");
  auto cost = FileCostModel(e);
  ASSERT_EQ(e.points.size(), 2u);
  EXPECT_DOUBLE_EQ(cost(e.points[0]), 4000.0 * 2 * 3 * (3.5 + 10));
  EXPECT_DOUBLE_EQ(cost(e.points[1]), 1000.0 * 2 * 3 * (3.5 + 10));
}

// ------------------------------------------------------------------------- merge

Results FakeShard(const std::string& path, int index, int count, const std::vector<std::string>& keys,
                  const std::string& hash = "abc", const std::string& host = "node1") {
  Results r;
  r.path = path;
  r.context = {{"schema_version", kResultsSchemaVersion},
               {"experiment", "exp"},
               {"host_name", host},
               {"experiment_sha256", hash}};
  r.context.update(ShardContext(ShardSpec{index, count}, keys.size(), 4));
  for (auto& k : keys) r.records.push_back({{"key", k}, {"acceptance_rate", 0.5}});
  return r;
}

TEST(Merge, MergesShardsKeepsContextsAndShardOfEachRecord) {
  std::vector<Results> shards = {FakeShard("s1.json", 1, 2, {"c", "d"}, "abc", "node2"),
                                 FakeShard("s0.json", 0, 2, {"a", "b"})};
  MergedResults m = MergeShards(shards, {"a", "b", "c", "d"});
  EXPECT_TRUE(m.report.complete());
  const json& recs = m.doc["benchmarks"];
  ASSERT_EQ(recs.size(), 4u);
  std::vector<std::string> keys;
  for (auto& r : recs) keys.push_back(r["key"]);
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b", "c", "d"}));  // grid order
  EXPECT_EQ(recs[0]["shard"], 0);
  EXPECT_EQ(recs[3]["shard"], 1);
  const json& c = m.doc["context"];
  EXPECT_EQ(c["experiment_sha256"], "abc");
  EXPECT_EQ(c["schema_version"], kResultsSchemaVersion);
  EXPECT_FALSE(c.contains("host_name"));  // differs between shards: only per shard
  EXPECT_FALSE(c.contains("shard"));
  ASSERT_EQ(c["shards"].size(), 2u);
  EXPECT_EQ(c["shards"][0]["host_name"], "node2");
  EXPECT_EQ(c["shards"][0]["file"], "s1.json");
  EXPECT_EQ(c["merged"]["points"], 4);
}

TEST(Merge, ReportsMissingDuplicatedAndUnexpectedPoints) {
  MergedResults m = MergeShards({FakeShard("s0.json", 0, 3, {"a", "b"}), FakeShard("s2.json", 2, 3, {"b", "x"})},
                                {"a", "b", "c", "d"});
  EXPECT_FALSE(m.report.complete());
  EXPECT_EQ(m.report.missing_shards, (std::vector<int>{1}));
  EXPECT_EQ(m.report.missing, (std::vector<std::string>{"c", "d"}));
  EXPECT_EQ(m.report.duplicated, (std::vector<std::string>{"b"}));
  EXPECT_EQ(m.report.unexpected, (std::vector<std::string>{"x"}));
  // Without the experiment's keys the count still reveals missing points.
  MergedResults blind = MergeShards({FakeShard("s0.json", 0, 2, {"a", "b"})}, {});
  EXPECT_FALSE(blind.report.complete());
  EXPECT_EQ(blind.report.merged_points, 2u);
  EXPECT_EQ(blind.report.experiment_points, 4u);
  // One shard of one: complete.
  Results all = FakeShard("all.json", 0, 1, {"a", "b", "c", "d"});
  EXPECT_TRUE(MergeShards({all}, {}).report.complete());
}

TEST(Merge, RefusesOtherExperimentsAndNonShards) {
  auto fails = [](const std::vector<Results>& shards, const std::string& what) {
    try {
      MergeShards(shards, {});
      ADD_FAILURE() << "no error, expected " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails({FakeShard("s0.json", 0, 2, {"a"}), FakeShard("s1.json", 1, 2, {"b"}, "other")},
        "s1.json: context.experiment_sha256: other differs from abc");
  fails({FakeShard("s0.json", 0, 2, {"a"}), FakeShard("s1.json", 1, 3, {"b"})}, "s1.json: context.shard.count");
  Results plain = FakeShard("plain.json", 0, 1, {"a"});
  plain.context.erase("shard");
  fails({plain}, "plain.json: context.shard: missing");
  Results unhashed = FakeShard("old.json", 0, 1, {"a"});
  unhashed.context.erase("experiment_sha256");
  fails({unhashed}, "old.json: context.experiment_sha256: missing");
}

// #30: shards measured with other weights or prompts (same experiment file, other
// bytes) are refused, naming the point and both hashes.
TEST(Merge, RefusesShardsOfOtherWeightsOrPrompts) {
  auto with = [](Results r, const std::string& sha, const std::string& prompt) {
    for (auto& rec : r.records) {
      rec["name"] = "m/" + rec["key"].get<std::string>();
      rec["model"] = "m";
      rec["input_length"] = 0;
      rec["model_files"] = json::array({json{{"role", "target"}, {"file", "m.gguf"}, {"sha256", sha}}});
      rec["prompt_sha256"] = prompt;
    }
    return r;
  };
  EXPECT_EQ(MergeShards({with(FakeShard("s0.json", 0, 2, {"a"}), "aaaa", "p"),
                         with(FakeShard("s1.json", 1, 2, {"b"}), "aaaa", "p")},
                        {})
                .report.merged_points,
            2u);
  testing::ExpectError(
      [&] {
        MergeShards({with(FakeShard("s0.json", 0, 2, {"a"}), "aaaa", "p"),
                     with(FakeShard("s1.json", 1, 2, {"b"}), "bbbb", "p")},
                    {});
      },
      {"s1.json: point m/b: model file target m.gguf has sha256 bbbb", "point m/a in s0.json", "sha256 aaaa"});
  testing::ExpectError(
      [&] {
        MergeShards({with(FakeShard("s0.json", 0, 2, {"a"}), "aaaa", "p"),
                     with(FakeShard("s1.json", 1, 2, {"b"}), "aaaa", "q")},
                    {});
      },
      {"point m/b: the prompt set of m (input_length 0) has sha256 q", "sha256 p"});
}

// ------------------------------------------------------------------------- CLI

struct Files {
  std::string dir, exp;
};
// Two synthetic models (two baseline groups) and an experiment over both.
const Files& TwoModelExperiment() {
  static Files f = [] {
    Files x;
    x.dir = TempDir();
    testing::WriteTinyGguf(x.dir + "/a.gguf", 7);
    testing::WriteTinyGguf(x.dir + "/b.gguf", 8);
    WriteFile(x.dir + "/prompts.txt", "Once upon a time\nThe dog ran\n");
    x.exp = x.dir + "/two.yaml";
    WriteFile(x.exp, "name: two\nmodels: [\"" + x.dir + "/a.gguf\", \"" + x.dir + "/b.gguf\"]\n" +
                         "prompts: {file: \"" + x.dir + "/prompts.txt\", count: 2}\n" +
                         "sweep: {k: [2], max_new_tokens: 6}\ndecoders: [ar, self-spec]\n");
    return x;
  }();
  return f;
}

TEST(Cli, ShardedRunMergesToTheFullRun) {
  const Files& f = TwoModelExperiment();
  std::string dir = TempDir();
  auto full = RunCli({"--threads", "1", "run", f.exp, "-o", dir + "/full"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  for (const char* s : {"0/2", "1/2"}) {
    auto r = RunCli({"--threads", "1", "run", f.exp, "-o", dir + "/shards", "--shard", s});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("2 points"), std::string::npos) << r.out;  // one group of 2 each
  }
  Results s0 = LoadResults(dir + "/shards/two.shard-0-of-2.json");
  EXPECT_EQ(s0.context["shard"]["index"], 0);
  EXPECT_EQ(s0.context["shard"]["count"], 2);
  EXPECT_EQ(s0.context["shard"]["experiment_points"], 4);
  EXPECT_EQ(s0.context["experiment_sha256"], ExperimentSha256(LoadExperiment(f.exp)));
  EXPECT_TRUE(fs::exists(dir + "/shards/two.shard-1-of-2.jsonl"));

  // Only one shard: missing points are named, nothing written without --partial.
  auto part = RunCli({"merge", dir + "/shards/two.shard-0-of-2.json", "-o", dir + "/m.json"});
  EXPECT_EQ(part.exit_code, 1);
  EXPECT_NE(part.err.find("shard(s) 1 of 2 missing"), std::string::npos) << part.err;
  EXPECT_NE(part.err.find("2 missing point(s)"), std::string::npos) << part.err;
  EXPECT_FALSE(fs::exists(dir + "/m.json"));

  auto merge = RunCli({"merge", dir + "/shards", "-o", dir + "/merged.json"});
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  Results merged = LoadResults(dir + "/merged.json"), ref = LoadResults(dir + "/full/two.json");
  ASSERT_EQ(merged.records.size(), ref.records.size());
  for (size_t i = 0; i < ref.records.size(); ++i) {  // grid order, greedy figures equal
    EXPECT_EQ(merged.records[i]["key"], ref.records[i]["key"]);
    EXPECT_EQ(merged.records[i]["acceptance_rate"], ref.records[i]["acceptance_rate"]);
    EXPECT_EQ(merged.records[i]["mean_accepted_length"], ref.records[i]["mean_accepted_length"]);
    EXPECT_TRUE(merged.records[i]["speedup"].is_number() || ref.records[i]["decoder"] == "ar");
  }
  EXPECT_TRUE(CheckRegressions(RecordsFromJson(merged.records), RecordsFromJson(ref.records), 0.0).ok());
  auto table = RunCli({"table", dir + "/merged.json", "--format", "csv"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  auto check = RunCli({"check", dir + "/merged.json", "--baseline", dir + "/full/two.json"});
  EXPECT_EQ(check.exit_code, 0) << check.err;

  // #30: an -o that is one of the inputs is refused (it would overwrite that shard).
  const std::string shard0 = dir + "/shards/two.shard-0-of-2.json", before = ReadFile(shard0);
  auto onto = RunCli({"merge", dir + "/shards", "-o", shard0});
  EXPECT_EQ(onto.exit_code, 1);
  EXPECT_NE(onto.err.find("is one of the input shards"), std::string::npos) << onto.err;
  EXPECT_EQ(ReadFile(shard0), before);

  // The same shard twice: duplicated points are an error.
  auto dup = RunCli({"merge", dir + "/shards", dir + "/shards/two.shard-0-of-2.json", "-o", dir + "/d.json"});
  EXPECT_EQ(dup.exit_code, 1);
  EXPECT_NE(dup.err.find("2 duplicated point(s)"), std::string::npos) << dup.err;

  // A shard of another experiment is refused (a comment alone would not make one: the
  // hash is of the parsed experiment).
  std::string other = dir + "/other.yaml";
  WriteFile(other, ReadFile(f.exp) + "repetitions: 2\n");
  auto o = RunCli({"--threads", "1", "run", other, "-o", dir + "/other", "--shard", "1/2"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto mixed = RunCli(
      {"merge", dir + "/shards/two.shard-0-of-2.json", dir + "/other/two.shard-1-of-2.json", "-o", dir + "/x.json"});
  EXPECT_EQ(mixed.exit_code, 1);
  EXPECT_NE(mixed.err.find("a shard of a different experiment"), std::string::npos) << mixed.err;
}

TEST(Cli, SlurmWritesArrayAndMergeScriptsAndSubmitsWithDependency) {
  const Files& f = TwoModelExperiment();
  std::string dir = TempDir();
  auto w = RunCli({"slurm", f.exp, "-o", dir, "--shards", "3", "--partition", "cpu", "--time", "1:00:00",
                   "--cpus-per-task", "8", "--mem", "16G"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  std::string array = ReadFile(dir + "/two.array.sbatch"), merge = ReadFile(dir + "/two.merge.sbatch");
  for (const char* s : {"#SBATCH --array=0-2\n", "#SBATCH --partition=cpu\n", "#SBATCH --time=1:00:00\n",
                        "#SBATCH --cpus-per-task=8\n", "#SBATCH --mem=16G\n", "--threads \"${SLURM_CPUS_PER_TASK:-0}\"",
                        "--shard \"${SLURM_ARRAY_TASK_ID}/3\" --resume", "shard-%a-of-3.job-%A.log"})
    EXPECT_NE(array.find(s), std::string::npos) << s << "\n" << array;
  EXPECT_NE(merge.find("merge '" + dir + "'/'two'.shard-{0..2}-of-3.json -o '" + dir + "/two.json'"), std::string::npos)
      << merge;
  EXPECT_EQ(merge.find("--mem"), std::string::npos);
  EXPECT_TRUE(fs::is_directory(dir + "/logs"));
  EXPECT_NE(w.out.find("--dependency=afterok"), std::string::npos) << w.out;

  // --submit with a fake sbatch that logs its arguments and answers like --parsable.
  std::string fake = dir + "/fake-sbatch.sh", log = dir + "/sbatch.log";
  WriteFile(fake,
            "#!/bin/sh\necho \"$@\" >> '" + log + "'\nn=$(wc -l < '" + log + "')\necho \"$((100 + n));cluster\"\n");
  fs::permissions(fake, fs::perms::owner_all);
  auto s = RunCli({"slurm", f.exp, "-o", dir, "--shards", "3", "--submit", "--sbatch", fake});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("array job: 101 (3 tasks)"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("merge job: 102"), std::string::npos) << s.out;
  std::string calls = ReadFile(log);
  EXPECT_NE(calls.find("--parsable " + dir + "/two.array.sbatch\n"), std::string::npos) << calls;
  EXPECT_NE(calls.find("--parsable --dependency=afterok:101 " + dir + "/two.merge.sbatch\n"), std::string::npos)
      << calls;
  // A failing sbatch is an error naming the script.
  WriteFile(fake, "#!/bin/sh\necho 'sbatch: error: invalid partition' >&2\nexit 1\n");
  auto bad = RunCli({"slurm", f.exp, "-o", dir, "--shards", "3", "--submit", "--sbatch", fake});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("two.array.sbatch: sbatch failed: sbatch: error: invalid partition"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace specsweep
