// The training-free tree drafters without a model of their own: lookahead decoding (a
// Jacobi window run inside the verification pass, and the n-gram pool it fills) and REST
// retrieval (a suffix-array datastore, continuations merged into a trie pruned by
// frequency). Their trees, their draft specs, and greedy output equal to autoregressive
// decoding on synthetic and shared models. (Sampling: test_sampling.cpp.)
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "base/build_info.h"
#include "decoders/decoder.h"
#include "decoders/draft_policy.h"
#include "decoders/draft_spec.h"
#include "decoders/drafter.h"
#include "decoders/speculative.h"
#include "harness/sweep/experiment.h"
#include "models/forward.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

struct Step {  // what Propose needs besides the sequence
  Rng rng{0};
  GenerationStats st;
  std::unique_ptr<DraftPolicy> policy = MakeDraftPolicy(DecoderOptions{});
  std::unique_ptr<DraftState> state;  // the drafter's, made at its first Propose or Begin
  DraftState& State(const Drafter& d) {
    if (!state) state = d.NewState();
    return *state;
  }
  DraftBlock Propose(const Drafter& d, const std::vector<int>& seq, int k) {
    DraftBlock b;
    d.Propose(State(d), {seq, k, *policy}, rng, b, st);
    return b;
  }
};

TEST(LookaheadDraft, WindowRidesInTheTreeAndFillsThePool) {
  auto d = MakeLookaheadDrafter(3, 3, 2);  // W = 3, N = 3: a window of 2 + 3 nodes
  ASSERT_EQ(LookaheadWindowNodes(3, 3), 5);
  Step s;
  d->Begin(s.State(*d), std::vector<int>{7, 7, 7});  // the window starts as prompt tokens: all 7
  DraftBlock b = s.Propose(*d, {1, 7, 9}, 5);
  // No n-gram yet. Level 0: 7 (below the root 9), 7; level 1 below each column: column
  // 0 below the root, column 1 below level 0's first node, column 2 below its second.
  EXPECT_EQ(b.tokens, (std::vector<int>{7, 7, 7, 7, 7}));
  EXPECT_EQ(b.parents, (std::vector<int>{-1, 0, -1, 0, 1}));
  // The target's argmax at the newest level (block nodes 2, 3, 4: rows 3, 4, 5).
  const int vocab = 32;
  std::vector<float> logits(6 * vocab, 0.0f);
  logits[3 * vocab + 20] = logits[4 * vocab + 21] = logits[5 * vocab + 22] = 1.0f;
  d->Observe(*s.state, std::vector<int>{9, 7, 7, 7, 7, 7}, logits, vocab);
  // Pool: 9 -> (7, 20); 7 -> (7, 22), (7, 21). Window: level 0 = 7 7 7, level 1 = 20 21 22.
  b = s.Propose(*d, {1, 7, 9, 7}, 9);
  EXPECT_EQ(b.tokens, (std::vector<int>{7, 22, 21, /*window*/ 7, 7, 20, 21, 22}));
  EXPECT_EQ(b.parents, (std::vector<int>{-1, 0, 0, -1, 3, -1, 3, 4}));
  d->Observe(*s.state, std::vector<int>(9, 7), std::vector<float>(9 * vocab, 0.0f), vocab);
  // K too small for the window (near max_new_tokens or the context end): its first
  // columns that fit (2 of 3: 3 nodes; #45, it used to wait) and a candidate in what is
  // left. Window now: level 0 = 20 21 22, level 1 = 0 0 0 (the zero logits' argmax).
  b = s.Propose(*d, {1, 7, 9}, 4);
  EXPECT_EQ(b.tokens, (std::vector<int>{7, /*window*/ 21, 0, 0}));
  EXPECT_EQ(b.parents, (std::vector<int>{-1, -1, -1, 1}));
}

TEST(RestDraft, LongestSuffixContinuationsPrunedByFrequency) {
  const std::vector<int> corpus{1, 2, 3, 4, -1, 5, 2, 3, 4, -1, 2, 3, 5, -1, 9, 2, 3, 4, 6};
  auto d = MakeRestDrafter(corpus, 16, "test");
  Step s;
  // "8 2 3": the longest suffix found is "2 3", followed by 4, 4, 5 and 4 6.
  DraftBlock b = s.Propose(*d, {8, 2, 3}, 16);
  EXPECT_EQ(b.tokens, (std::vector<int>{4, 5, 6}));  // 4 (3 times), then 5 and 6 (once; shallower first)
  EXPECT_EQ(b.parents, (std::vector<int>{-1, -1, 0}));
  b = s.Propose(*d, {8, 2, 3}, 2);  // K caps the nodes
  EXPECT_EQ(b.tokens, (std::vector<int>{4, 5}));
  // "5 2 3" occurs: only its continuation (a chain), not the shorter suffix's.
  b = s.Propose(*d, {5, 2, 3}, 16);
  EXPECT_EQ(b.tokens, (std::vector<int>{4}));
  EXPECT_TRUE(b.parents.empty());
  EXPECT_TRUE(s.Propose(*d, {6}, 16).tokens.empty());  // found only at the corpus end
  EXPECT_EQ(s.Propose(*MakeRestDrafter(corpus, 1, "t"), {2, 3}, 16).tokens, (std::vector<int>{4}));
}

TEST(TreeDraftSpec, LookaheadAndRest) {
  EXPECT_EQ(ParseDraftSpec("lookahead", "t").Label(), "lookahead+window=5+ngram=3+candidates=5");
  EXPECT_EQ(ParseDraftSpec("lookahead+window=4+ngram=2", "t").Label(), "lookahead+window=4+ngram=2+candidates=4");
  const DraftSpec r = ParseDraftSpec("rest+corpus=a/b.txt", "t");
  EXPECT_EQ(r.Label(), "rest+corpus=a/b.txt+tree_budget=16");
  EXPECT_TRUE(r.IsTree() && r.ModelFree() && !r.IsSelf());
  EXPECT_EQ(ParseDraftSpec(r.Label(), "t").Label(), r.Label());
  testing::ExpectError([] { ParseDraftSpec("lookahead+q4_0", "t"); }, {"lookahead draft has no model"});
  testing::ExpectError([] { ParseDraftSpec("lookahead+tree_budget=8", "t"); }, {"window, ngram, candidates"});
  testing::ExpectError([] { ParseDraftSpec("lookahead+ngram=1", "t"); }, {"ngram must be an integer in [2, 64]"});
  testing::ExpectError([] { ParseDraftSpec("q4_0+window=3", "t"); }, {"need the lookahead draft"});
  testing::ExpectError([] { ParseDraftSpec("rest", "t"); }, {"rest needs corpus=PATH"});
  testing::ExpectError([] { ParseDraftSpec("rest+corpus=x+branching=2,2", "t"); }, {"rest draft has no model"});
  testing::ExpectError([] { ParseDraftSpec("q4_0+corpus=x", "t"); }, {"corpus needs the rest draft"});
}

// Experiment files: lookahead is shaped by its window, REST by the tree_budget axis (a
// tree axis that does not apply to a draft is an error: tests/test_silent_sweep.cpp); the
// corpus is found beside the file.
TEST(TreeDraftSpec, ExperimentAxesAndCorpusPath) {
  const std::string dir = testing::TempDir();
  testing::WriteTinyGguf(dir + "/tiny.gguf", 3);
  testing::WriteFile(dir + "/prompts.txt", "Once upon a time\n");
  testing::WriteFile(dir + "/c.txt", "The dog ran.\n");
  testing::WriteFile(dir + "/e.yaml",
                     "name: e\nmodels: [\"" + dir +
                         "/tiny.gguf\"]\nprompts: {file: prompts.txt, count: 1}\n"
                         "sweep: {k: [16]}\n"
                         "decoders:\n  - decoder: speculative\n    draft: [lookahead]\n"
                         "  - decoder: speculative\n    draft: [\"rest+corpus=c.txt\"]\n    tree_budget: [8]\n");
  std::set<std::string> labels;
  for (const Point& p : LoadExperiment(dir + "/e.yaml").points)
    if (p.speculative()) labels.insert(p.options.draft.Label());
  EXPECT_EQ(labels, (std::set<std::string>{"lookahead+window=5+ngram=3+candidates=5",
                                           "rest+corpus=" + dir + "/c.txt+tree_budget=8"}));
}

// Greedy decoding with each drafter gives the autoregressive tokens on every prompt, and
// both outcomes (accepted and rejected nodes) occur.
struct Case {
  std::string name;
  int k;
  std::function<std::unique_ptr<Decoder>(const DecoderOptions&)> make;
};

void ExpectLossless(const LoadedModel& target, const std::vector<std::vector<int>>& prompts,
                    const std::vector<Case>& cases, int max_new_tokens) {
  DecoderOptions ar;
  ar.max_new_tokens = max_new_tokens;
  auto ar_dec = MakeDecoder(target, ar);
  std::vector<std::vector<int>> expected;
  for (const auto& p : prompts) expected.push_back(ar_dec->Generate(p).tokens);
  for (const Case& c : cases) {
    DecoderOptions o = ar;
    o.kind = DecoderKind::Speculative;
    o.k = c.k;
    auto dec = c.make(o);
    int64_t drafted = 0, accepted = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const GenerationResult r = dec->Generate(prompts[i]);
      ASSERT_EQ(r.tokens, expected[i]) << target.name << " " << c.name << " K=" << c.k << " prompt " << i;
      for (int n : r.stats.k_per_step) EXPECT_LE(n, c.k);
      drafted += r.stats.drafted, accepted += r.stats.accepted;
    }
    EXPECT_GT(accepted, 0) << target.name << " " << c.name;
    EXPECT_LT(accepted, drafted) << target.name << " " << c.name;
  }
}

// Lookahead drafts by spec (MakeDecoder), K = its window plus room for candidates.
std::vector<Case> LookaheadCases(const LoadedModel& target) {
  std::vector<Case> cases;
  for (const char* spec :
       {"lookahead", "lookahead+window=3+ngram=2+candidates=2", "lookahead+window=4+ngram=4+candidates=3"}) {
    const DraftSpec d = ParseDraftSpec(spec, "draft");
    for (int extra : {0, 8})
      cases.push_back({spec,
                       LookaheadWindowNodes(d.get<LookaheadDraft>()->window, d.get<LookaheadDraft>()->ngram) + extra,
                       [&target, d](DecoderOptions o) {
                         o.draft = d;
                         return MakeDecoder(target, o);
                       }});
  }
  return cases;
}

Case RestCase(const LoadedModel& target, const std::string& spec, int k) {
  return {spec, k, [&target, spec](DecoderOptions o) {
            o.draft = ParseDraftSpec(spec, "draft");
            return MakeDecoder(target, o);
          }};
}

std::vector<std::vector<int>> SyntheticPrompts(const ModelConfig& c, int n) {
  std::vector<std::vector<int>> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int> p{c.bos_id};
    for (int j = 0; j < 12; ++j) p.push_back(3 + (i * 7 + (j % (3 + i % 4)) * 11) % (c.vocab_size - 3));
    out.push_back(p);
  }
  return out;
}

TEST(TreeDecoding, LookaheadAndRestEqualAutoregressiveSynthetic) {
  const LoadedModel m{"synthetic", std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), 1)), nullptr};
  const std::vector<std::vector<int>> prompts = SyntheticPrompts(m.model->config, 12);
  std::vector<Case> cases = LookaheadCases(m);
  // REST's corpus: what a q4_0 copy of the target writes after the prompts (no tokenizer
  // here: the datastore is given in tokens), so its retrievals agree often, not always.
  const LoadedModel q4{"q4_0", std::make_shared<const Model>(QuantizeModel(*m.model, QType::Q4_0)), nullptr};
  DecoderOptions ar;
  ar.max_new_tokens = 40;
  std::vector<int> corpus;
  for (const auto& p : prompts) {
    const std::vector<int> out = MakeDecoder(q4, ar)->Generate(p).tokens;
    corpus.insert(corpus.end(), p.begin() + 1, p.end());
    corpus.insert(corpus.end(), out.begin(), out.end());
    corpus.push_back(-1);
  }
  for (int budget : {16, 4})
    cases.push_back({"rest", 16, [&m, corpus, budget](const DecoderOptions& o) {
                       return MakeSpeculativeDecoder(m, MakeRestDrafter(corpus, budget, "q4_0 outputs"), o);
                     }});
  ExpectLossless(m, prompts, cases, 32);
  // REST needs the target's tokenizer for a corpus file; lookahead a K that holds its window.
  DecoderOptions o = ar;
  o.kind = DecoderKind::Speculative;
  o.k = 16;
  o.draft = ParseDraftSpec("rest+corpus=x.txt", "draft");
  testing::ExpectError([&] { MakeDecoder(m, o); }, {"rest+corpus=x.txt", "tokenizer"});
  o.k = 8;
  o.draft = ParseDraftSpec("lookahead", "draft");
  testing::ExpectError([&] { MakeDecoder(m, o); }, {"k: lookahead+window=5", "at least 9, got 8"});
}

// A model file with a tokenizer: REST by spec from a corpus file; a bad path is a
// one-line error naming it.
TEST(TreeDecoding, RestFromACorpusFile) {
  const std::string dir = testing::TempDir();
  testing::WriteTinyGguf(dir + "/tiny.gguf", 3);
  LoadedModel m = LoadModel(dir + "/tiny.gguf");
  m.name = "tiny";
  std::vector<std::vector<int>> prompts;
  for (const std::string& p : testing::TinyStoriesPrompts()) prompts.push_back(m.tokenizer->Encode(p, true));
  prompts.resize(8);
  DecoderOptions ar;
  ar.max_new_tokens = 24;
  std::string text;  // the target's own continuations of other prompts, as text
  for (const std::string& p : testing::TinyStoriesPrompts())
    text += p + m.tokenizer->Decode(MakeDecoder(m, ar)->Generate(m.tokenizer->Encode(p, true)).tokens) + "\n\n";
  testing::WriteFile(dir + "/corpus.txt", text);
  ExpectLossless(m, prompts, {RestCase(m, "rest+corpus=" + dir + "/corpus.txt+tree_budget=12", 12)}, 24);
  DecoderOptions o = ar;
  o.kind = DecoderKind::Speculative;
  o.k = 16;  // the default budget's (#45: a K below it is an error of its own)
  o.draft = ParseDraftSpec("rest+corpus=" + dir + "/no-such.txt", "draft");
  testing::ExpectError([&] { MakeDecoder(m, o); }, {dir + "/no-such.txt: cannot open the rest corpus"});
  testing::WriteFile(dir + "/blank.txt", "\n  \n");
  o.draft = DraftSpec::Make(RestDraft{dir + "/blank.txt"}, DraftTree::Dynamic(16));
  testing::ExpectError([&] { MakeDecoder(m, o); }, {"blank.txt: the rest corpus has no text"});
}

// Both shared models on every shared prompt; REST retrieves from the passages file.
TEST(TreeDecoding, LookaheadAndRestEqualAutoregressiveSharedModels) {
  const std::string dir = testing::SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "no shared models";
  const std::string corpus = std::string(SourceDir()) + "/experiments/prompts/passages.txt";
  for (const char* name : {"tinystories-656k", "tinystories-260k"}) {
    const LoadedModel m = LoadModel(name, dir);
    std::vector<std::vector<int>> prompts;
    for (const std::string& p : testing::TinyStoriesPrompts()) prompts.push_back(m.tokenizer->Encode(p, true));
    std::vector<Case> cases = LookaheadCases(m);
    cases.push_back(RestCase(m, "rest+corpus=" + corpus, 16));
    cases.push_back(RestCase(m, "rest+corpus=" + corpus + "+tree_budget=4", 16));
    ExpectLossless(m, prompts, cases, 48);
  }
}

// llama.cpp's Q4_K_M file (K-quant tensors, Q6_K classifier) as the target, as the other
// tree drafters are checked (test_trees: GreedyEqualsAutoregressiveKQuantGguf); REST
// retrieves from the target's own continuations of other prompts.
TEST(TreeDecoding, LookaheadAndRestEqualAutoregressiveKQuantGguf) {
  const std::string p = testing::SharedFile("fixtures/kquants/synth-Q4_K_M.gguf");
  if (p.empty()) GTEST_SKIP() << "shared fixtures/kquants/synth-Q4_K_M.gguf not available";
  LoadedModel m = LoadModel(p);
  m.name = "synth-Q4_K_M";
  ASSERT_TRUE(m.tokenizer);
  std::vector<std::vector<int>> prompts;
  for (const std::string& s : testing::TinyStoriesPrompts()) prompts.push_back(m.tokenizer->Encode(s, true));
  prompts.resize(10);
  DecoderOptions ar;
  ar.max_new_tokens = 24;
  std::string text;
  const std::vector<std::string> all = testing::TinyStoriesPrompts();
  for (size_t i = 10; i < all.size(); ++i)
    text +=
        all[i] + m.tokenizer->Decode(MakeDecoder(m, ar)->Generate(m.tokenizer->Encode(all[i], true)).tokens) + "\n\n";
  const std::string dir = testing::TempDir();
  testing::WriteFile(dir + "/kq_corpus.txt", text);
  std::vector<Case> cases = LookaheadCases(m);
  cases.push_back(RestCase(m, "rest+corpus=" + dir + "/kq_corpus.txt+tree_budget=12", 12));
  ExpectLossless(m, prompts, cases, 24);
}

}  // namespace
}  // namespace specsweep
