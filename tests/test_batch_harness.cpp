// Issue #50, the harness's side of batching: the experiment axis `batch:` (keys, names,
// params, the AR baseline at the same batch, errors naming the field), a sweep run at
// batch 2 (one GenerateBatch per round over cyclic prompts, per-sequence records,
// resume), the raw record's batch fields round-tripping, and `generate --batch`.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "harness/pipeline.h"
#include "harness/store/results.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/schedule.h"
#include "tests/run_fixtures.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using nlohmann::json;
using testing::QuietRun;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

const testing::TinyFiles& Files() {
  static const testing::TinyFiles f = testing::MakeTinyFiles(11, "Once upon a time\nThe dog ran\nA big red ball\n");
  return f;
}

// An experiment of self-spec (q8_0) at k 2 over `sweep_extra` (YAML lines under sweep:).
std::string Exp(const std::string& file, const std::string& sweep_extra, int count = 3,
                const std::string& decoders = "[{decoder: speculative, draft: q8_0}]") {
  const std::string p = TempDir() + "/" + file;
  WriteFile(p, "name: b\nmodels: [\"" + Files().model + "\"]\nprompts: {file: \"" + Files().prompts +
                   "\", count: " + std::to_string(count) + "}\nrepetitions: 1\nwarmup: 1\nsweep:\n  k: 2\n" +
                   "  max_new_tokens: 4\n" + sweep_extra + "decoders: " + decoders + "\n");
  return p;
}

TEST(BatchAxis, ExpandsIntoKeysNamesParamsAndBaselinesAtTheSameBatch) {
  const Experiment e = LoadExperiment(Exp("axis.yaml", "  batch: [1, 2]\n"));
  ASSERT_EQ(e.points.size(), 4u);  // (baseline, speculative) at batch 1 and at batch 2
  const std::vector<Group> groups = MakeGroups(e.points);
  ASSERT_EQ(groups.size(), 2u);  // the batch is in the baseline's key: one group per batch
  for (const Group& g : groups) {
    ASSERT_EQ(g.points.size(), 2u);
    const Point& spec = *g.points[1];
    ASSERT_TRUE(spec.speculative());
    EXPECT_EQ(spec.Baseline().options.batch, spec.options.batch);
    EXPECT_EQ(spec.Baseline().Key(), g.baseline().Key());
    for (const Point* p : g.points) {
      const bool two = p->options.batch == 2;
      EXPECT_EQ(p->Key().find(";batch=2") != std::string::npos, two) << p->Key();
      EXPECT_EQ(p->Name().find("/batch=2") != std::string::npos, two) << p->Name();
      EXPECT_EQ(p->Key().find("batch=1"), std::string::npos) << p->Key();  // batch 1: keys as before the axis
      const json params = p->ParamsJson();
      EXPECT_EQ(params.contains("batch"), two) << params.dump();
      if (two) {
        EXPECT_EQ(params["batch"], "2");
      }
      EXPECT_EQ(PointFromParams(params, "params").Key(), p->Key());  // params read back: the same point
    }
  }
  EXPECT_EQ(groups[0].baseline().options.batch, 1);
  EXPECT_EQ(groups[1].baseline().options.batch, 2);
  // A decoder entry may give the axis too.
  const Experiment d = LoadExperiment(Exp("entry.yaml", "", 3, "[{decoder: speculative, draft: q8_0, batch: 4}]"));
  ASSERT_EQ(d.points.size(), 2u);
  EXPECT_EQ(d.points[0].options.batch, 4);  // its baseline
  EXPECT_EQ(d.points[1].options.batch, 4);
}

TEST(BatchAxis, BadValuesNameTheFileAndTheField) {
  for (const auto& [value, field, what] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"0", "sweep.batch", "0 is out of range [1, 256]"},
           {"[1, 300]", "sweep.batch[1]", "300 is out of range [1, 256]"},
           {"\"x\"", "sweep.batch", "expected an integer, got a string"},
           {"2.5", "sweep.batch", "expected an integer, got a number"}}) {
    const std::string p = Exp("bad.yaml", "  batch: " + value + "\n");
    const std::string err = testing::ErrorOf([&] { LoadExperiment(p); });
    EXPECT_NE(err.find(p + ": " + field + ": " + what), std::string::npos) << value << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  const std::string p = Exp("bad_entry.yaml", "", 3, "[{decoder: ar, batch: 0}]");
  const std::string err = testing::ErrorOf([&] { LoadExperiment(p); });
  EXPECT_NE(err.find(p + ": decoders[0].batch: 0 is out of range [1, 256]"), std::string::npos) << err;
}

TEST(BatchAxis, ConversationsAtBatchAboveOneAreRefusedWhenRead) {
  const std::string dir = TempDir();
  WriteFile(dir + "/target.bin", std::string(1000, 'x'));
  WriteFile(dir + "/qs.jsonl",
            json{{"question_id", 1}, {"category", "writing"}, {"turns", {"Hi?", "More?"}}}.dump() + "\n");
  auto exp = [&](const std::string& turns, const std::string& batch) {
    WriteFile(dir + "/e.yaml", "name: qb\nmodels: [\"" + dir + "/target.bin\"]\nprompts: {file: qs.jsonl, turns: " +
                                   turns + "}\nsweep: {k: 2, batch: " + batch + "}\ndecoders: [{decoder: ar}]\n");
    return dir + "/e.yaml";
  };
  const std::string err = testing::ErrorOf([&] { LoadExperiment(exp("all", "[1, 2]")); });
  EXPECT_NE(err.find(dir + "/e.yaml: prompts.turns: all (conversations) decodes one sequence at a time"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("batch 2"), std::string::npos) << err;
  EXPECT_EQ(testing::ErrorOf([&] { LoadExperiment(exp("all", "1")); }), "");
  EXPECT_EQ(testing::ErrorOf([&] { LoadExperiment(exp("first", "2")); }), "");
}

// Batch-2 runs: one GenerateBatch per round over the round's prompt and the next, cyclic;
// per-sequence statistics and output hashes; the AR baseline at batch 2; resume.
TEST(BatchRun, RecordsPerSequenceStatsAndResume) {
  const std::string dir = TempDir();
  const Experiment e = LoadExperiment(Exp("run.yaml", "  batch: [1, 2]\n"));
  const RunSummary s = RunExperiment(e, QuietRun(dir));
  const std::vector<RawRecord> recs = ReadJsonl(s.jsonl_path).records;
  ASSERT_EQ(recs.size(), 4u);
  const RawRecord* ar1 = nullptr;
  int at_two = 0;
  for (const RawRecord& r : recs) {
    const bool two = r.params.value("batch", "1") == "2";
    // Batch 1: a run per prompt; batch 2: ceil(3 / 2) rounds, prompts {0, 1} and {2, 0}.
    ASSERT_EQ(r.runs.size(), two ? 2u : 3u) << r.name;
    if (!two && r.baseline_key.empty()) ar1 = &r;
    if (!two) {
      for (const RawRun& run : r.runs) EXPECT_EQ(run.stats.batch, 1);
      continue;
    }
    ++at_two;
    if (!r.baseline_key.empty()) {
      EXPECT_NE(r.baseline_key.find(";batch=2"), std::string::npos) << r.baseline_key;
    }
    EXPECT_FALSE(r.costs.target_s.empty());
    for (const RawRun& run : r.runs) {
      EXPECT_EQ(run.stats.batch, 2) << r.name;
      ASSERT_EQ(run.stats.per_sequence.size(), 2u) << r.name;
      ASSERT_EQ(run.sequence_hashes.size(), 2u) << r.name;
      for (const SequenceStats& q : run.stats.per_sequence) EXPECT_EQ(q.generated_tokens, 4);
    }
  }
  EXPECT_EQ(at_two, 2);  // the AR baseline and the speculative point
  // Greedy: sequence b of round i's batch is prompt (i + b) % 3, which the batch-1 AR
  // point generated alone in round (i + b) % 3.
  ASSERT_NE(ar1, nullptr);
  for (const RawRecord& r : recs) {
    if (r.params.value("batch", "1") != "2") continue;
    for (const RawRun& run : r.runs)
      for (int b = 0; b < 2; ++b)
        EXPECT_EQ(run.sequence_hashes[size_t(b)], ar1->runs[size_t((run.prompt + b) % 3)].output_hash)
            << r.name << " prompt " << run.prompt << " sequence " << b;
  }
  // The .jsonl: batch fields only in the batch-2 records.
  const std::string text = ReadFile(s.jsonl_path);
  size_t lines_with_batch = 0;
  for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1)
    lines_with_batch += text.substr(at, end - at).find("\"per_sequence\"") != std::string::npos;
  EXPECT_EQ(lines_with_batch, 2u);
  // Resume reuses every record, batch fields and all.
  const RunSummary again = RunExperiment(e, QuietRun(dir, ResumeMode::Same));
  EXPECT_EQ(again.resumed, 4);
  EXPECT_EQ(again.measured, 0);
}

GenerationStats BatchStats() {
  GenerationStats s;
  s.prompt_tokens = 12;
  s.generated_tokens = 9;
  s.target_calls = 5;
  s.batch = 3;
  s.batch_target_calls = 2;
  s.batch_draft_calls = 4;
  for (int i = 0; i < 3; ++i) s.per_sequence.push_back({4, 3, 2 - (i == 2), 4 + i, 2, 0.01 * i, 0.002 + i, i == 1});
  return s;
}

TEST(BatchRecord, RawRecordRoundTripsAndBatchOneKeepsItsBytes) {
  RawRecord r;
  r.key = "k";
  r.name = "n";
  r.params = json{{"model", "m"}};
  r.prompt_tokens = {4, 4};
  RawRun single;
  single.output_hash = "abc";
  const std::string single_json = StatsToJson(single.stats).dump();
  r.runs.push_back(single);
  RawRun batch;
  batch.prompt = 1;
  batch.stats = BatchStats();
  batch.output_hash = "all";
  batch.sequence_hashes = {"s0", "s1", "s2"};
  r.runs.push_back(batch);
  const json j = RawToJson(r);
  // Batch 1: no batch field at all (old records and batch-1 records alike).
  for (const char* f : {"batch", "batch_target_calls", "batch_draft_calls", "per_sequence"})
    EXPECT_FALSE(j["runs"][0]["stats"].contains(f)) << f;
  const json& seqs = j["runs"][1]["stats"]["per_sequence"];
  ASSERT_EQ(seqs.size(), 3u);
  EXPECT_EQ(seqs[2]["output"], "s2");
  EXPECT_EQ(seqs[1]["stopped_at_eos"], true);
  EXPECT_EQ(seqs[2]["target_calls"], 1);
  const RawRecord back = RawFromJson(j, "rec");
  EXPECT_EQ(RawToJson(back).dump(), j.dump());
  ASSERT_EQ(back.runs.size(), 2u);
  EXPECT_EQ(StatsToJson(back.runs[0].stats).dump(), single_json);
  EXPECT_TRUE(back.runs[0].sequence_hashes.empty());
  const GenerationStats& s = back.runs[1].stats;
  EXPECT_EQ(s.batch, 3);
  EXPECT_EQ(s.batch_target_calls, 2);
  EXPECT_EQ(s.batch_draft_calls, 4);
  ASSERT_EQ(s.per_sequence.size(), 3u);
  EXPECT_EQ(s.per_sequence[2].drafted, 6);
  EXPECT_DOUBLE_EQ(s.per_sequence[2].mean_next_token_latency_s, 2.002);
  EXPECT_EQ(back.runs[1].sequence_hashes, batch.sequence_hashes);
  // A list whose length is not the batch is refused, naming the record.
  json bad = j;
  bad["runs"][1]["stats"]["per_sequence"].erase(0);
  testing::ExpectError([&] { RawFromJson(bad, "rec"); }, {"rec: stats: per_sequence: 2 entries for batch 3"});
}

TEST(GenerateBatch, PrintsEverySequenceAndAnAggregate) {
  const std::string& m = Files().model;
  testing::CliResult r = testing::RunCli({"generate", "-m", m, "-n", "3", "--batch", "3", "--draft", "q8_0", "--k", "2",
                                          "-p", "Once upon", "-p", "The dog", "-p", "A big"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* seq : {"--- sequence 1 of 3", "--- sequence 2 of 3", "--- sequence 3 of 3", "The dog", "A big"})
    EXPECT_NE(r.out.find(seq), std::string::npos) << seq << "\n" << r.out;
  EXPECT_NE(r.out.find("acceptance "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("next-token latency"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nbatch 3: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokens/s (batch), target calls "), std::string::npos) << r.out;

  r = testing::RunCli({"generate", "-m", m, "-n", "3", "--batch", "3", "--json", "-p", "The dog"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["batch"], 3);
  ASSERT_EQ(j["sequences"].size(), 3u);
  for (const json& s : j["sequences"]) {
    EXPECT_EQ(s["prompt"], "The dog");  // one prompt: every sequence's
    EXPECT_EQ(s["generated_tokens"], 3);
    EXPECT_EQ(s["stats"]["generated_tokens"], 3);
    EXPECT_TRUE(s["stats"].contains("mean_next_token_latency_s"));
  }
  EXPECT_EQ(j["sequences"][0]["tokens"], j["sequences"][2]["tokens"]);  // greedy, the same prompt
  EXPECT_EQ(j["aggregate"]["batch"], 3);
  EXPECT_EQ(j["aggregate"]["per_sequence"].size(), 3u);
  // The single generation's output stays as it was: one JSON object, no batch fields.
  r = testing::RunCli({"generate", "-m", m, "-n", "3", "--json", "-p", "The dog"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json one = json::parse(r.out);
  EXPECT_EQ(one["prompt"], "The dog");
  EXPECT_FALSE(one["stats"].contains("per_sequence"));
  EXPECT_EQ(one["tokens"], j["sequences"][0]["tokens"]);  // each sequence: its batch-1 output
}

TEST(GenerateBatch, PromptCountMustMatchTheBatch) {
  const std::string& m = Files().model;
  testing::CliResult r = testing::RunCli({"generate", "-m", m, "-n", "2", "--batch", "3", "-p", "a", "-p", "b"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--prompt: 2 prompts for --batch 3 (give one, used for every sequence, or 3)"),
            std::string::npos)
      << r.err;
  r = testing::RunCli({"generate", "-m", m, "-n", "2", "-p", "a", "-p", "b"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--prompt: 2 prompts need --batch 2"), std::string::npos) << r.err;
  r = testing::RunCli({"generate", "-m", m, "-n", "2", "--batch", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--batch: batch must be a whole number in [1, 256], got '0'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace specsweep
