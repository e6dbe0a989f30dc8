// Experiment files with the lookup and cross-tokenizer drafts and prompt categories:
// labels parse back, the n-gram axes expand, refused combinations name file and key,
// and points carry their prompt category into the results parameters.
#include <gtest/gtest.h>

#include <set>

#include "harness/sweep/experiment.h"
#include "base/error.h"
#include "models/gguf.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::TempDir;
using testing::WriteFile;

struct Fixture {
  std::string dir, model, model2, prompts;
};
const Fixture& Files() {
  static Fixture f = [] {
    Fixture x;
    x.dir = TempDir();
    x.model = x.dir + "/tiny.gguf";
    x.model2 = x.dir + "/tiny2.gguf";
    ModelConfig c = TinyTestConfig();
    auto tok = MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size));
    WriteGguf(MakeSyntheticModel(c, 7), *tok, x.model);
    WriteGguf(MakeSyntheticModel(c, 8), *tok, x.model2);
    x.prompts = x.dir + "/prompts.txt";
    WriteFile(x.prompts, "Once upon a time\nThe dog ran\n");
    return x;
  }();
  return f;
}

std::string Head(const std::string& extra_prompts = "") {
  const auto& f = Files();
  return "name: d\nmodels: [\"" + f.model + "\", \"" + f.model2 + "\"]\nprompts: {file: \"" + f.prompts +
         "\", count: 2" + extra_prompts + "}\n";
}

Experiment Load(const std::string& name, const std::string& body) {
  const std::string p = Files().dir + "/" + name;
  WriteFile(p, body);
  return LoadExperiment(p);
}

TEST(ExperimentDrafts, LookupLabelsParseBack) {
  DraftSpec d = ParseDraftSpec("lookup", "t");
  EXPECT_TRUE(d.get<LookupDraft>());
  EXPECT_EQ(d.Label(), "lookup+max_ngram=3+min_ngram=1");
  EXPECT_EQ(d.BaseLabel(), d.Label());  // the n-gram range tells variants apart in tables
  EXPECT_EQ(ParseDraftSpec(d.Label(), "t").Label(), d.Label());
  EXPECT_EQ(ParseDraftSpec("lookup+min_ngram=2", "t").Label(), "lookup+max_ngram=3+min_ngram=2");
  EXPECT_EQ(ParseDraftSpec("lookup+min_ngram=5", "t").Label(), "lookup+max_ngram=5+min_ngram=5");
  for (const char* bad : {"lookup+q4_0", "lookup+layers=1", "lookup+model=x", "max_ngram=2", "lookup+max_ngram=0",
                          "lookup+max_ngram=2+min_ngram=3"}) {
    try {
      ParseDraftSpec(bad, "draft");
      ADD_FAILURE() << bad << ": no error";
    } catch (const Error& e) {
      EXPECT_TRUE(std::string(e.what()).starts_with("draft: '")) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

TEST(ExperimentDrafts, NgramAxesCrossDraftsAndCategory) {
  const auto& f = Files();
  Experiment e = Load("grid.yaml", Head(", category: grounded") + R"(sweep:
  k: [2, 4]
  max_ngram: [2, 4]
  min_ngram: [1, 3]
  draft_quant: [q8_0]
decoders:
  - decoder: speculative
    draft: [lookup, layers=1, {model: ")" +
                                       f.model2 + R"("}]
)");
  EXPECT_EQ(e.prompts.category, "grounded");
  std::set<std::string> lookups;
  int model_drafts = 0;
  for (const Point& p : e.points) {
    EXPECT_EQ(p.prompt_category, "grounded");
    EXPECT_EQ(p.ParamsJson()["prompt_category"], "grounded");
    EXPECT_EQ(PointFromParams(p.ParamsJson(), "t").Key(), p.Key());
    EXPECT_NE(p.Key().find(";cat=grounded"), std::string::npos);
    if (!p.speculative()) continue;
    if (p.options.draft.get<LookupDraft>()) {
      EXPECT_FALSE(p.options.draft.quant());  // draft_quant is for model drafts
      EXPECT_LE(p.options.draft.get<LookupDraft>()->min_ngram, p.options.draft.get<LookupDraft>()->max_ngram);
      EXPECT_EQ(p.ParamsJson()["max_ngram"], p.options.draft.get<LookupDraft>()->max_ngram);
      EXPECT_TRUE(p.Options().draft.get<LookupDraft>());
      EXPECT_EQ(p.Options().draft.get<LookupDraft>()->min_ngram, p.options.draft.get<LookupDraft>()->min_ngram);
      lookups.insert(p.options.draft.Label());
    } else {
      EXPECT_EQ(p.options.draft.quant(), QType::Q8_0);
      EXPECT_EQ(p.ParamsJson()["max_ngram"], 0);
      if (!p.options.draft.model().empty()) {
        ++model_drafts;
        EXPECT_NE(p.model, p.options.draft.model());  // a model never drafts for itself
      }
    }
  }
  // (max, min) in {2, 4} x {1, 3} minus (2, 3).
  EXPECT_EQ(lookups, (std::set<std::string>{"lookup+max_ngram=2+min_ngram=1", "lookup+max_ngram=4+min_ngram=1",
                                            "lookup+max_ngram=4+min_ngram=3"}));
  EXPECT_EQ(model_drafts, 2);  // only the first target gets model2 as draft, at K 2 and 4

  // Free is the default and leaves keys as they were.
  Experiment free = Load("free.yaml", Head() + "decoders: [ar]\n");
  EXPECT_EQ(free.points.at(0).prompt_category, "free");
  EXPECT_EQ(free.points.at(0).Key().find("cat="), std::string::npos);
  nlohmann::json params = free.points.at(0).ParamsJson();
  params.erase("prompt_category");  // results written before categories existed
  EXPECT_EQ(PointFromParams(params, "t").prompt_category, "free");
}

void ExpectBad(const std::string& name, const std::string& body, const std::string& key) {
  const std::string p = Files().dir + "/" + name;
  WriteFile(p, body);
  try {
    LoadExperiment(p);
    ADD_FAILURE() << name << ": no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_NE(msg.find(key), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(ExperimentDrafts, RefusedCombinationsNameFileAndKey) {
  ExpectBad("cat.yaml", Head(", category: fancy") + "decoders: [ar]\n", "prompts.category");
  ExpectBad("selfspec.yaml", Head() + "decoders: [{decoder: self-spec, draft: [lookup]}]\n", "decoders[0].draft");
  ExpectBad("policy.yaml", Head() + "decoders: [{decoder: speculative, draft: [lookup], k_policy: [threshold]}]\n",
            "decoders[0].k_policy");
  ExpectBad("ngram.yaml",
            Head() + "decoders: [{decoder: speculative, draft: [lookup], max_ngram: [1], min_ngram: [2]}]\n",
            "min_ngram");
  ExpectBad("ngram0.yaml", Head() + "sweep: {max_ngram: [0]}\ndecoders: [speculative]\n", "sweep.max_ngram[0]");
  ExpectBad("mix.yaml", Head() + "decoders: [{decoder: speculative, draft: [lookup+q4_0]}]\n", "decoders[0].draft[0]");
  ExpectBad("map.yaml", Head() + "decoders: [{decoder: speculative, draft: [{lookup: yes please}]}]\n",
            "decoders[0].draft[0].lookup");
  ExpectBad("ar.yaml", Head() + "decoders: [{decoder: ar, max_ngram: [2]}]\n", "decoders[0].max_ngram");
}

}  // namespace
}  // namespace specsweep

namespace specsweep {
namespace {

// Token-tree axes: every draft in every shape; the label carries the shape and parses back.
// (A shape that does not apply to a draft is an error: tests/test_silent_sweep.cpp.)
TEST(ExperimentDrafts, TreeAxesShapeEveryDraft) {
  Experiment e = Load("trees.yaml", Head() + R"(sweep:
  k: [16]
  tree_budget: [0, 8]
decoders:
  - decoder: speculative
    draft: [lookup]
  - decoder: speculative
    draft: [q4_0]
    branching: ["4,2,1", chain]
)");
  std::set<std::string> labels;
  for (const Point& p : e.points) {
    if (!p.speculative()) continue;
    labels.insert(p.options.draft.Label());
    EXPECT_EQ(PointFromParams(p.ParamsJson(), "t").Key(), p.Key());
    EXPECT_EQ(ParseDraftSpec(p.options.draft.Label(), "t").Label(), p.options.draft.Label());
  }
  EXPECT_EQ(labels,
            (std::set<std::string>{"lookup+max_ngram=3+min_ngram=1", "lookup+max_ngram=3+min_ngram=1+tree_budget=8",
                                   "q4_0", "q4_0+tree_budget=8", "q4_0+branching=4,2,1"}));
  testing::ExpectError([&] { Load("bad.yaml", Head() + "sweep: {branching: [\"4,x\"]}\ndecoders: [speculative]\n"); },
                       {"bad.yaml", "branching"});
  testing::ExpectError(
      [&] {
        Load("bad2.yaml",
             Head() + "decoders:\n  - decoder: speculative\n    draft: [\"q4_0+branching=2+tree_budget=4\"]\n");
      },
      {"bad2.yaml", "static (branching) or dynamic (tree_budget), not both"});
}

}  // namespace
}  // namespace specsweep
