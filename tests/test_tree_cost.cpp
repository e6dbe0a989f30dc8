// The cost model of token trees (docs/trees.md, "Cost model"): each draft call priced at
// its size, the verify call at T(nodes + 1), E[tokens per step] from the accepted paths.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/pipeline.h"
#include "harness/report/aggregate.h"
#include "harness/report/load.h"
#include "harness/sweep/experiment.h"
#include "harness/store/results.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace specsweep {
namespace {

// A dynamic tree of K = 4 over two steps: 4 nodes each, accepted paths of depth 2 and 1.
RawRecord TreeRecord(const std::string& draft) {
  RawRecord r;
  r.key = "S";
  r.baseline_key = "B";  // a speculative record; no baseline given: no measured speedup
  r.params = json{{"decoder", "speculative"}, {"k", 4}, {"k_policy", "constant"}, {"draft", draft}};
  r.prompt_tokens = {5};
  r.costs.target_s = {0.010, 0.012, 0.014, 0.016, 0.018};  // T(1..5)
  GenerationStats s;
  s.generated_tokens = 5;
  s.target_calls = 2;
  s.draft_calls = 4;
  s.draft_s = 0.009;  // what the loop measured drafting
  s.k_per_step = {4, 4};
  s.drafted_at_pos = {4, 3, 1};  // nodes per depth
  s.accepted_at_pos = {2, 1, 0};
  s.accepted_per_step = {2, 1};
  s.draft_calls_by_size = {1, 1};             // catch-ups of 1 and of 2 tokens
  s.draft_tree_calls_by_size = {0, 1, 0, 1};  // tree calls over 2 and over 4 nodes
  r.runs.push_back({0, 0, 0, 0, s, "h"});
  return r;
}

TEST(TreeCost, PricesEveryDraftCallAtItsSize) {
  RawRecord r = TreeRecord("q4_0+tree_budget=4");
  r.costs.draft_s = {0.0010, 0.0015, 0.0020, 0.0025, 0.0030};       // T_d(1..5), catch-ups
  r.costs.draft_tree_s = {0.0012, 0.0018, 0.0024, 0.0030, 0.0036};  // T_d,tree(1..5)
  const json a = Aggregate(r, nullptr);
  // E[tokens/step] = 1 + (2 + 1) / 2; draft per step (1 + 1.5 + 1.8 + 3.0) ms / 2; verify T(5).
  const double e_tok = 2.5, draft = (0.0010 + 0.0015 + 0.0018 + 0.0030) / 2;
  ASSERT_TRUE(a["predicted_speedup"].is_number()) << a.dump();
  EXPECT_NEAR(a["predicted_speedup"].get<double>(), e_tok * 0.010 / (draft + 0.018), 1e-12);
  EXPECT_EQ(a["draft_tree_time_by_n_s"].size(), 5u);
  // A record read back from JSON gives the same figures.
  EXPECT_EQ(Aggregate(RawFromJson(RawToJson(r), "t"), nullptr).dump(), a.dump());

  // Beyond the measured sizes the fit extrapolates (here a line: T_d,tree(8) = 1.2 + 0.6 x 7 ms).
  r.runs[0].stats.draft_tree_calls_by_size = {0, 0, 0, 0, 0, 0, 0, 1};
  const double draft8 = (0.0010 + 0.0015 + 0.0054) / 2;
  EXPECT_NEAR(Aggregate(r, nullptr)["predicted_speedup"].get<double>(), e_tok * 0.010 / (draft8 + 0.018), 1e-9);

  // Records without the call sizes (before the tree cost model) predict nothing.
  r.runs[0].stats.draft_calls_by_size.clear();
  r.runs[0].stats.draft_tree_calls_by_size.clear();
  EXPECT_TRUE(Aggregate(r, nullptr)["predicted_speedup"].is_null());
}

TEST(TreeCost, DraftFreeTreesUseTheMeasuredDraftTime) {
  const json a = Aggregate(TreeRecord("lookup+max_ngram=3+min_ngram=1+tree_budget=4"), nullptr);
  EXPECT_NEAR(a["predicted_speedup"].get<double>(), 2.5 * 0.010 / (0.009 / 2 + 0.018), 1e-12);
}

// A run's records: model-drafted trees get a prediction, from call sizes the run counted.
TEST(TreeCost, RunRecordsPredictTreeSpeedups) {
  const std::string dir = testing::TempDir(), model = dir + "/tiny.gguf", prompts = dir + "/p.txt";
  testing::WriteTinyGguf(model, 7);
  testing::WriteFile(prompts, "Once upon a time\nThe dog ran\n");
  const std::string exp = dir + "/trees.yaml";
  testing::WriteFile(exp, "name: trees\nmodels: [\"" + model + "\"]\nprompts: {file: \"" + prompts +
                              "\", count: 2}\nsweep:\n  k: [4]\n  max_new_tokens: 12\ndecoders:\n"
                              "  - decoder: speculative\n    draft: [\"layers=1+tree_budget=4\", "
                              "\"layers=1+branching=2,1\", \"layers=1\"]\n");
  RunOptions o;
  o.out_dir = dir;
  o.progress = nullptr;
  const RunSummary s = RunExperiment(LoadExperiment(exp), o);
  int trees = 0;
  for (const json& rec : LoadResults(s.json_path).records) {
    if (rec["decoder"] != "speculative") continue;
    EXPECT_TRUE(rec["predicted_speedup"].is_number()) << rec["draft"];
    const bool tree = rec["draft"].get<std::string>().find("+") != std::string::npos;
    EXPECT_EQ(rec.contains("draft_tree_time_by_n_s"), tree) << rec["draft"];
    if (!tree) continue;
    EXPECT_EQ(rec["draft_tree_time_by_n_s"].size(), 5u);  // K + 1 sizes
    ++trees;
  }
  EXPECT_EQ(trees, 2);
}

}  // namespace
}  // namespace specsweep
