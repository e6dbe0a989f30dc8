// Acceptance replay of token trees (decoders/acceptance_source.h, docs/trees.md): a
// trace of a real tree run replays its trees, draft calls and accepted paths step for
// step; alpha applies along a static tree's first-child path; uses a replay cannot
// support fail with one line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "decoders/decoder.h"
#include "decoders/draft_tree.h"
#include "harness/store/results.h"
#include "models/forward.h"
#include "models/synthetic.h"
#include "tests/replay_fixtures.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::ExpectError;
using testing::PromptIds;
using testing::Tiny;

// The q4_0 self-draft as a tree: static `branching`, or dynamic of `budget` nodes.
DecoderOptions SelfSpecTree(std::vector<int> branching, int budget, int k, int new_tokens) {
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.draft = DraftSpec::Make(TargetDraft{0, QType::Q4_0}, DraftTree::Of(std::move(branching), budget));
  o.k = k;
  o.max_new_tokens = new_tokens;
  o.stop_at_eos = false;
  return o;
}

std::shared_ptr<const std::vector<AcceptanceTrace>> TracesOf(const std::vector<GenerationStats>& runs) {
  auto out = std::make_shared<std::vector<AcceptanceTrace>>();
  for (auto& s : runs) {
    AcceptanceTrace t;
    EXPECT_EQ(s.tree_per_step.size(), s.k_per_step.size());
    for (size_t i = 0; i < s.k_per_step.size(); ++i)
      t.push_back({s.k_per_step[i], s.accepted_per_step[i], s.tree_per_step.at(i)});
    out->push_back(t);
  }
  return out;
}

void ExpectSameTrees(const std::vector<TreeStep>& a, const std::vector<TreeStep>& b, int prompt) {
  ASSERT_EQ(a.size(), b.size()) << "prompt " << prompt;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].parents, b[i].parents) << "prompt " << prompt << " step " << i;
    EXPECT_EQ(a[i].ranks, b[i].ranks) << "prompt " << prompt << " step " << i;
    EXPECT_EQ(a[i].expanded, b[i].expanded) << "prompt " << prompt << " step " << i;
    EXPECT_EQ(a[i].path, b[i].path) << "prompt " << prompt << " step " << i;
  }
}

// Replaying a real tree run's trace with the same draft on the same prompts grows the
// same trees with the same draft calls, accepts the same paths and (greedy, same draft)
// emits the same tokens -- the autoregressive output, since the run was lossless.
void ExpectTreeTraceReplaysExactly(const LoadedModel& m, const DecoderOptions& real, int n_prompts) {
  auto rec = MakeDecoder(m, real);
  std::vector<GenerationStats> runs;
  std::vector<std::vector<int>> tokens;
  int accepted = 0, nodes = 0, calls = 0;
  for (int i = 0; i < n_prompts; ++i) {
    GenerationResult r = rec->Generate(PromptIds(i, m.model->config.vocab_size));
    for (size_t j = 0; j < r.stats.k_per_step.size(); ++j) accepted += r.stats.accepted_per_step[j];
    for (auto& t : r.stats.tree_per_step) nodes += int(t.parents.size()), calls += int(t.expanded.size());
    runs.push_back(r.stats);
    tokens.push_back(r.tokens);
  }
  ASSERT_GT(accepted, 0);
  ASSERT_GT(calls, 0);
  ASSERT_GT(nodes, accepted);  // some nodes rejected: the trace is not trivial
  DecoderOptions o = real;
  o.acceptance_source = ParseAcceptanceSource("trace=recorded", "test");
  o.acceptance_source.traces = TracesOf(runs);
  auto rep = MakeDecoder(m, o);
  auto run = rep->NewState();  // generation i replays trace i
  for (int i = 0; i < n_prompts; ++i) {
    GenerationResult r = rep->Generate(PromptIds(i, m.model->config.vocab_size), *run);
    EXPECT_EQ(r.stats.k_per_step, runs[i].k_per_step) << "prompt " << i;
    EXPECT_EQ(r.stats.accepted_per_step, runs[i].accepted_per_step) << "prompt " << i;
    EXPECT_EQ(r.stats.draft_calls_by_size, runs[i].draft_calls_by_size) << "prompt " << i;
    EXPECT_EQ(r.stats.draft_tree_calls_by_size, runs[i].draft_tree_calls_by_size) << "prompt " << i;
    ExpectSameTrees(r.stats.tree_per_step, runs[i].tree_per_step, i);
    EXPECT_EQ(r.tokens, tokens[i]) << "prompt " << i;
  }
}

TEST(TreeReplay, StaticAndDynamicTreeTracesReplayStepForStep) {
  const LoadedModel m = Tiny();
  ExpectTreeTraceReplaysExactly(m, SelfSpecTree({2, 2, 1, 1}, 0, 10, 40), 4);
  ExpectTreeTraceReplaysExactly(m, SelfSpecTree({}, 8, 8, 40), 4);
}

TEST(TreeReplay, TreeTraceOfTinyStories656kReplaysExactly) {
  if (testing::SharedModelsDir().empty()) GTEST_SKIP() << "no shared models";
  LoadedModel m = LoadModel("tinystories-656k", testing::SharedModelsDir());
  ExpectTreeTraceReplaysExactly(m, SelfSpecTree({}, 16, 16, 64), 4);
  ExpectTreeTraceReplaysExactly(m, SelfSpecTree({2, 1, 1, 1, 1, 1, 1, 1}, 0, 16, 64), 2);
}

// A trace replayed where its generations are shorter cuts a recorded tree larger than
// the step's K as its drafter would: a static tree to the nodes it grows first, a
// dynamic one keeping the accepted path (ClipTree).
TEST(TreeReplay, ClippedStepsCutTheRecordedTreeAsItsDrafterWould) {
  const TreeStep t{{-1, -1, 0, 1, 2, 4}, {0, 1, 0, 0, 0, 0}, {2, 2, 1}, {1, 3}};
  const TreeStep s = ClipTree(t, 3, true);
  EXPECT_EQ(s.parents, (std::vector<int>{-1, -1, 0}));
  EXPECT_EQ(s.ranks, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(s.path, (std::vector<int>{1}));
  const TreeStep d = ClipTree(t, 3, false);
  EXPECT_EQ(d.parents, (std::vector<int>{-1, -1, 1}));
  EXPECT_EQ(d.ranks, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(d.path, (std::vector<int>{1, 2}));
  EXPECT_EQ(d.expanded, t.expanded);
  EXPECT_EQ(ClipTree(t, 6, false).parents, t.parents);

  const LoadedModel m = Tiny();
  for (const DecoderOptions& real : {SelfSpecTree({}, 8, 8, 40), SelfSpecTree({2, 2, 1}, 0, 8, 40)}) {
    auto rec = MakeDecoder(m, real);
    std::vector<GenerationStats> runs{rec->Generate(PromptIds(0, m.model->config.vocab_size)).stats};
    DecoderOptions o = real;
    o.max_new_tokens = 7;
    o.acceptance_source = ParseAcceptanceSource("trace=recorded", "test");
    o.acceptance_source.traces = TracesOf(runs);
    const GenerationStats s7 = MakeDecoder(m, o)->Generate(PromptIds(0, m.model->config.vocab_size)).stats;
    EXPECT_EQ(s7.generated_tokens, 7);
    for (size_t i = 0; i < s7.tree_per_step.size(); ++i) {
      const TreeStep want = ClipTree(runs[0].tree_per_step[i], s7.k_per_step[i], !real.draft.branching().empty());
      ExpectSameTrees({s7.tree_per_step[i]},
                      {TreeStep{want.parents, want.ranks, s7.tree_per_step[i].expanded, want.path}}, int(i));
    }
  }
}

// alpha on a static tree: the first-child path (the draft's best tokens) is accepted
// position by position at the declared rate; the tree is still the shape's.
TEST(TreeReplay, AlphaAppliesAlongAStaticTreesFirstChildPath) {
  const LoadedModel m = Tiny();
  DecoderOptions o = SelfSpecTree({2, 1, 1, 1}, 0, 16, 60);
  o.acceptance_source = ParseAcceptanceSource("alpha=0.8", "test");
  auto dec = MakeDecoder(m, o);
  auto run = dec->NewState();
  std::vector<int64_t> at(4, 0);
  int64_t steps = 0;
  for (int i = 0; steps < 1500; ++i) {
    const GenerationStats s = dec->Generate(PromptIds(i, m.model->config.vocab_size), *run).stats;
    for (size_t j = 0; j < s.k_per_step.size(); ++j) {
      if (s.k_per_step[j] != 8) continue;  // the last steps are clipped
      const TreeStep& t = s.tree_per_step[j];
      EXPECT_EQ(t.parents, (std::vector<int>{-1, -1, 0, 1, 2, 3, 4, 5}));
      for (size_t d = 0; d < t.path.size(); ++d) EXPECT_EQ(t.path[d], d == 0 ? 0 : 2 * int(d));
      ++steps;
      for (int p = 0; p < s.accepted_per_step[j]; ++p) ++at[p];
    }
  }
  EXPECT_NEAR(double(at[0]) / double(steps), 0.8, 0.04);
  for (int p = 1; p < 4; ++p) EXPECT_NEAR(double(at[p]) / double(at[p - 1]), 0.8, 0.05);
}

TEST(TreeReplay, RecordsRoundTripThroughResults) {
  GenerationStats s;
  s.k_per_step = {3};
  s.accepted_per_step = {1};
  s.tree_per_step = {{{-1, -1, 0}, {0, 1, 0}, {2}, {1}}};
  const GenerationStats back = StatsFromJson(StatsToJson(s), "test");
  ExpectSameTrees(back.tree_per_step, s.tree_per_step, 0);
}

TEST(TreeReplay, BadUsesFailWithOneLine) {
  const LoadedModel m = Tiny();
  DecoderOptions dyn = SelfSpecTree({}, 8, 8, 8);
  dyn.acceptance_source = ParseAcceptanceSource("alpha=0.8", "test");
  ExpectError([&] { MakeDecoder(m, dyn); }, {"acceptance_source", "dynamic tree", "trace="});
  DecoderOptions look = SelfSpecTree({}, 8, 8, 8);
  look.draft = ParseDraftSpec("lookup+tree_budget=8", "test");
  look.acceptance_source = ParseAcceptanceSource("alpha=0.8", "test");
  ExpectError([&] { MakeDecoder(m, look); }, {"acceptance_source", "no model"});
  // A chain's trace on a tree, a tree's on a chain.
  DecoderOptions tree = SelfSpecTree({2, 1}, 0, 8, 8);
  tree.acceptance_source = ParseAcceptanceSource("trace=x", "test");
  tree.acceptance_source.traces =
      std::make_shared<const std::vector<AcceptanceTrace>>(std::vector<AcceptanceTrace>{{{4, 1, {}}}});
  ExpectError([&] { MakeDecoder(m, tree); }, {"trace x", "records chains"});
  DecoderOptions chain = SelfSpecTree({}, 0, 8, 8);
  chain.acceptance_source = ParseAcceptanceSource("trace=x", "test");
  chain.acceptance_source.traces = std::make_shared<const std::vector<AcceptanceTrace>>(
      std::vector<AcceptanceTrace>{{{2, 1, TreeStep{{-1, 0}, {0, 0}, {1}, {0}}}}});
  ExpectError([&] { MakeDecoder(m, chain); }, {"trace x", "records token trees"});
  // A dynamic tree's trace on a static shape that cannot grow it.
  DecoderOptions narrow = SelfSpecTree({1, 1}, 0, 8, 8);
  narrow.acceptance_source = ParseAcceptanceSource("trace=x", "test");
  narrow.acceptance_source.traces = std::make_shared<const std::vector<AcceptanceTrace>>(
      std::vector<AcceptanceTrace>{{{2, 0, TreeStep{{-1, -1}, {0, 1}, {}, {}}}}});
  ExpectError([&] { MakeDecoder(m, narrow)->Generate(PromptIds(0, m.model->config.vocab_size)); },
              {"recorded tree", "same draft shape"});
}

}  // namespace
}  // namespace specsweep
