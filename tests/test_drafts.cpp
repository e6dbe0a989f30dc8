// Prompt-lookup and cross-tokenizer drafts: greedy output must equal the target's own
// autoregressive output over every prompt of every prompt set in experiments/prompts
// (both shared models, both directions of the cross-tokenizer pair); the lookup search
// and the text bridge must do what they say; refused combinations must fail cleanly.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoders/decoder.h"
#include "decoders/drafter.h"
#include "decoders/text_bridge.h"
#include "base/error.h"
#include "models/forward.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::SharedModelsDir;

using testing::ErrorOf;

// Every prompt of every prompt set: one prompt per line, except passages.txt whose
// prompts are its blank-line-separated passages (the harness cuts them by tokens).
std::vector<std::pair<std::string, std::string>> AllPrompts() {
  std::vector<std::pair<std::string, std::string>> out;  // (set, text)
  const std::filesystem::path dir = std::filesystem::path(SPECSWEEP_SOURCE_DIR) / "experiments" / "prompts";
  std::vector<std::filesystem::path> files;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".txt") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (auto& f : files) {
    std::ifstream in(f);
    const std::string set = f.filename().string();
    std::string line, cur;
    const bool passages = set == "passages.txt";
    while (std::getline(in, line)) {
      if (!passages) {
        if (!line.empty()) out.emplace_back(set, line);
      } else if (line.empty()) {
        if (!cur.empty()) out.emplace_back(set, cur);
        cur.clear();
      } else {
        cur += (cur.empty() ? "" : "\n") + line;
      }
    }
    if (!cur.empty()) out.emplace_back(set, cur);
  }
  return out;
}

// Prompt ids, cut so that prompt + generation + a full step fit the context.
std::vector<int> PromptIds(const LoadedModel& m, const std::string& text, int room) {
  std::vector<int> ids = m.tokenizer->Encode(text, true);
  if (static_cast<int>(ids.size()) > room) ids.resize(room);
  return ids;
}

constexpr int kGen = 32;

// --- lookup search ---

TEST(Lookup, ProposesWhatFollowedTheMostRecentOccurrence) {
  // ... 5 6 7 | 5 6 9 | 5 6  -> n = 2 matches at the second "5 6" (most recent): 9 5 6
  const std::vector<int> seq{1, 5, 6, 7, 5, 6, 9, 5, 6};
  EXPECT_EQ(LookupProposal(seq, 4, 2, 1), (std::vector<int>{9, 5, 6}));  // capped by the end
  EXPECT_EQ(LookupProposal(seq, 2, 2, 1), (std::vector<int>{9, 5}));     // capped by K
  // Longest n first: "9 5 6" does not recur, "5 6" does.
  EXPECT_EQ(LookupProposal(seq, 1, 3, 2), (std::vector<int>{9}));
  // No n-gram of the allowed lengths recurs: nothing.
  EXPECT_TRUE(LookupProposal(std::vector<int>{1, 2, 3, 4}, 4, 3, 1).empty());
  EXPECT_TRUE(LookupProposal(seq, 4, 3, 3).empty());
  // n = 1: the last token 8 occurred at index 1, followed by 8 8.
  EXPECT_EQ(LookupProposal(std::vector<int>{1, 8, 8}, 3, 1, 1), (std::vector<int>{8}));
  EXPECT_TRUE(LookupProposal(std::vector<int>{8}, 3, 1, 1).empty());
}

LoadedModel Synthetic() {
  return LoadedModel{"synthetic", std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), 1)), nullptr};
}

TEST(Lookup, GreedyEqualsAutoregressiveSynthetic) {
  const LoadedModel t = Synthetic();
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < 12; ++i) {  // repeated patterns, so the lookup finds matches
    std::vector<int> p{1};
    for (int r = 0; r < 1 + i % 3; ++r)
      for (int j = 0; j < 3 + i % 4; ++j) p.push_back(3 + (i * 7 + j * 5) % 120);
    prompts.push_back(p);
  }
  DecoderOptions ar;
  ar.max_new_tokens = 40;
  ar.stop_at_eos = false;
  std::vector<std::vector<int>> expected;
  for (auto& p : prompts) expected.push_back(MakeDecoder(t, ar)->Generate(p).tokens);
  int64_t drafted = 0, accepted = 0;
  for (int k : {1, 2, 4, 8})
    for (auto [hi, lo] : std::vector<std::pair<int, int>>{{1, 1}, {3, 1}, {4, 2}})
      for (KPolicy pol : {KPolicy::Constant, KPolicy::Heuristic}) {
        DecoderOptions o = ar;
        o.kind = DecoderKind::Speculative;
        o.draft = DraftSpec::Make(LookupDraft{hi, lo});
        o.k = k;
        o.k_policy = pol;
        auto dec = MakeDecoder(t, o);
        for (size_t i = 0; i < prompts.size(); ++i) {
          GenerationResult r = dec->Generate(prompts[i]);
          ASSERT_EQ(r.tokens, expected[i]) << "K " << k << " n " << hi << ".." << lo << " prompt " << i;
          EXPECT_EQ(r.stats.draft_calls, 0);
          EXPECT_EQ(r.stats.generated_tokens, r.stats.target_calls + r.stats.accepted);
          drafted += r.stats.drafted;
          accepted += r.stats.accepted;
        }
      }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
}

TEST(Lookup, RefusedCombinations) {
  const LoadedModel t = Synthetic();
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.draft = DraftSpec::Make(LookupDraft{});
  auto err = [&](auto f) {
    DecoderOptions x = o;
    f(x);
    return ErrorOf([&] { MakeDecoder(t, x); });
  };
  EXPECT_EQ(err([](auto&) {}), "");
  EXPECT_NE(err([](auto& x) { x.k_policy = KPolicy::Threshold; }).find("k_policy: threshold"), std::string::npos);
  EXPECT_NE(err([](auto& x) { x.k_policy = KPolicy::Adaptive; }).find("k_policy: adaptive"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { MakeDecoder(t, o, t); }).find("a lookup draft has no model"), std::string::npos);
}

// A lookup draft with a model, layers or a quant type, or n-gram lengths out of order or
// range, cannot be built: the draft type refuses it, one line, before any decoder.
TEST(Lookup, InvalidDraftsCannotBeBuilt) {
  auto err = [](DraftParts p) { return ErrorOf([&] { DraftSpec::FromParts(p, "t", "lookup"); }); };
  DraftParts lookup;
  lookup.lookup = true;
  EXPECT_EQ(err(lookup), "");
  for (auto f : std::vector<std::function<void(DraftParts&)>>{[](auto& p) { p.layers = 1; },
                                                              [](auto& p) { p.quant = QType::Q4_0; },
                                                              [](auto& p) { p.model = "m"; }}) {
    DraftParts p = lookup;
    f(p);
    EXPECT_EQ(err(p), "t: 'lookup': a lookup draft has no model, layers or quant type");
  }
  EXPECT_EQ(ErrorOf([] {
              DraftSpec::Make(LookupDraft{2, 3});
            }),
            "draft: 'lookup+max_ngram=2+min_ngram=3': min_ngram 3 is larger than max_ngram 2");
  EXPECT_NE(ErrorOf([] { DraftSpec::Make(LookupDraft{65, 1}); }).find("out of range"), std::string::npos);
  EXPECT_NE(ErrorOf([] { DraftSpec::Make(RecyclingDraft{}, DraftTree::Dynamic(8)); }).find("recycling draft has no"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { DraftSpec::Make(LookaheadDraft{}, DraftTree::Dynamic(8)); }).find("lookahead draft has no"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { DraftSpec::Make(RestDraft{}); }).find("rest needs corpus=PATH"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseDraftSpec("lookup", "t").WithQuant(QType::Q4_0); }).find("no quant type"),
            std::string::npos);
  EXPECT_EQ(ParseDraftSpec("lookup", "t").WithNgrams(4, 2).Label(), "lookup+max_ngram=4+min_ngram=2");
  EXPECT_EQ(DraftSpec::Make(RecyclingDraft{}).Label(), "recycling+branching=4,2,2,1");
}

// --- real models ---

struct Pair {
  std::string target, draft;
};

class RealDrafts : public ::testing::TestWithParam<Pair> {};

// Greedy lookup and cross-tokenizer drafts reproduce AR over every prompt of every set.
TEST_P(RealDrafts, GreedyEqualsAutoregressiveOnEveryPrompt) {
  if (SharedModelsDir().empty()) GTEST_SKIP() << "no shared models (../shared/models)";
  const Pair pr = GetParam();
  LoadedModel target = LoadModel(pr.target, SharedModelsDir());
  LoadedModel draft = LoadModel(pr.draft, SharedModelsDir());
  target.name = pr.target;
  draft.name = pr.draft;
  const auto prompts = AllPrompts();
  ASSERT_GE(prompts.size(), 40u);
  const int room = target.model->config.max_seq_len - kGen - 10;
  DecoderOptions ar;
  ar.max_new_tokens = kGen;
  ar.stop_at_eos = false;  // as the harness runs: fixed token counts, EOS handled mid-text
  auto ar_dec = MakeDecoder(target, ar);
  std::vector<std::vector<int>> ids, expected;
  for (auto& [set, text] : prompts) {
    ids.push_back(PromptIds(target, text, room));
    expected.push_back(ar_dec->Generate(ids.back()).tokens);
  }
  struct Case {
    bool lookup;
    int k, max_ngram, min_ngram;
    KPolicy policy;
  };
  const std::vector<Case> cases{{true, 2, 3, 1, KPolicy::Constant},  {true, 8, 3, 1, KPolicy::Constant},
                                {true, 4, 1, 1, KPolicy::Heuristic}, {false, 1, 0, 0, KPolicy::Constant},
                                {false, 4, 0, 0, KPolicy::Constant}, {false, 8, 0, 0, KPolicy::Constant},
                                {false, 3, 0, 0, KPolicy::Threshold}};
  for (const Case& c : cases) {
    DecoderOptions o = ar;
    o.kind = DecoderKind::Speculative;
    o.k = c.k;
    o.k_policy = c.policy;
    o.draft_p_min = 0.3f;
    if (c.lookup) o.draft = DraftSpec::Make(LookupDraft{c.max_ngram, c.min_ngram});
    auto dec = c.lookup ? MakeDecoder(target, o) : MakeDecoder(target, o, draft);
    int64_t drafted = 0, accepted = 0;
    double retok = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenerationResult r = dec->Generate(ids[i]);
      ASSERT_EQ(r.tokens, expected[i]) << (c.lookup ? "lookup" : "cross-tokenizer " + pr.draft) << " K " << c.k
                                       << " policy " << KPolicyName(c.policy) << " set " << prompts[i].first
                                       << " prompt: " << prompts[i].second;
      drafted += r.stats.drafted;
      accepted += r.stats.accepted;
      retok += r.stats.retokenize_s;
      EXPECT_LE(r.stats.retokenize_s, r.stats.draft_s);
    }
    // Both verification outcomes happened, or the comparison proves little.
    EXPECT_GT(accepted, 0) << (c.lookup ? "lookup" : "cross") << " K " << c.k;
    EXPECT_LT(accepted, drafted) << (c.lookup ? "lookup" : "cross") << " K " << c.k;
    if (c.lookup) {
      EXPECT_EQ(retok, 0.0);
    } else
      EXPECT_GT(retok, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(BothPairs, RealDrafts,
                         ::testing::Values(Pair{"tinystories-656k", "tinystories-260k"},
                                           Pair{"tinystories-260k", "tinystories-656k"}),
                         [](const auto& info) {
                           return info.param.target == "tinystories-656k" ? std::string("T656k_D260k")
                                                                          : std::string("T260k_D656k");
                         });

TEST(CrossTokenizer, SamplingIsRefused) {
  if (SharedModelsDir().empty()) GTEST_SKIP() << "no shared models (../shared/models)";
  LoadedModel target = LoadModel("tinystories-656k", SharedModelsDir());
  LoadedModel draft = LoadModel("tinystories-260k", SharedModelsDir());
  target.name = "tinystories-656k";
  draft.name = "tinystories-260k";
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.sampling.temperature = 0.8f;
  const std::string e = ErrorOf([&] { MakeDecoder(target, o, draft); });
  EXPECT_NE(e.find("another tokenizer"), std::string::npos) << e;
  EXPECT_NE(e.find("greedy"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
}

// Continue() spells exactly the appended text after tokens it leaves untouched, for
// both tokenizer styles (260k: words carry a leading "▁"; 656k: BPE across spaces).
TEST(TextBridge, ContinueSpellsTheTextExactly) {
  if (SharedModelsDir().empty()) GTEST_SKIP() << "no shared models (../shared/models)";
  for (const char* name : {"tinystories-260k", "tinystories-656k"}) {
    const LoadedModel m = LoadModel(name, SharedModelsDir());
    const TextBridge bridge(m.tokenizer);
    int straddles = 0;
    for (auto& [set, text] : AllPrompts()) {
      const std::string t = text.substr(0, 300);
      for (size_t cut = 7; cut < t.size(); cut += 23) {
        std::vector<int> ids = m.tokenizer->Encode(t.substr(0, cut), true);
        const std::string head = m.tokenizer->Decode(ids);
        ASSERT_EQ(head, t.substr(0, cut));
        auto more = bridge.Continue(ids, t.substr(cut));
        ASSERT_TRUE(more.has_value()) << name << " cut " << cut << ": " << t;
        std::vector<int> all = ids;
        all.insert(all.end(), more->begin(), more->end());
        ASSERT_EQ(m.tokenizer->Decode(all), t) << name << " cut " << cut;
        // Where the canonical encoding differs from "prefix + continuation", a token straddled the cut.
        straddles += m.tokenizer->Encode(t, true) != all;
      }
    }
    EXPECT_GT(straddles, 0) << name;  // the interesting case was exercised
  }
}

// --- CLI ---

TEST(DraftsCli, LookupAndCrossTokenizer) {
  if (SharedModelsDir().empty()) GTEST_SKIP() << "no shared models (../shared/models)";
  const std::string m = SharedModelsDir();
  const std::string prompt = "Tom had a boat. Tom had a boat. Tom had";
  auto ar = testing::RunCli(
      {"generate", "--models", m, "--model", "tinystories-656k", "--prompt", prompt, "-n", "24", "--no-eos", "--json"});
  ASSERT_EQ(ar.exit_code, 0) << ar.err;
  for (std::vector<std::string> extra : {std::vector<std::string>{"--draft-lookup", "--max-ngram", "4"},
                                         std::vector<std::string>{"--draft-model", "tinystories-260k"}}) {
    std::vector<std::string> args{"generate",   "--models", m,    "--model",  "tinystories-656k", "--prompt",
                                  prompt,       "-n",       "24", "--no-eos", "--json",           "--decoder",
                                  "speculative"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = testing::RunCli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto a = nlohmann::json::parse(ar.out), b = nlohmann::json::parse(r.out);
    EXPECT_EQ(a["tokens"], b["tokens"]) << extra[0];
    EXPECT_GT(b["stats"]["drafted"].get<int>(), 0) << extra[0];
  }
  auto r = testing::RunCli({"generate", "--models", m, "--model", "tinystories-656k", "--prompt", prompt, "--decoder",
                            "assisted", "--draft-model", "tinystories-260k", "--temp", "0.7"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("greedy"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = testing::RunCli({"generate", "--models", m, "--model", "tinystories-656k", "--prompt", prompt, "--decoder",
                       "speculative", "--draft-lookup", "--min-ngram", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--min-ngram: 0 is out of range"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace specsweep
