// Token trees: tree attention in the engine (a node's logits are those of its path run as
// a sequence, bit for bit, on every kernel family), KeepPath, tree verification and the
// tree drafters (greedy output equals autoregressive decoding).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "decoders/decoder.h"
#include "decoders/draft_policy.h"
#include "decoders/draft_spec.h"
#include "decoders/draft_tree.h"
#include "decoders/verify.h"
#include "models/forward.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "quant/kernels.h"
#include "quant/matmul.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

// A random tree of n nodes below slot start - 1; half the nodes continue the previous
// one (long chains exercise the query runs), the rest hang anywhere above.
std::vector<int> RandomParents(int n, int start, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> parents(n);
  for (int i = 0; i < n; ++i) {
    const int r = static_cast<int>(rng() % (2 * (i + 1)));
    parents[i] = r > i ? start + i - 1 : start + r - 1;  // start - 1: a root
  }
  return parents;
}

// The slots from the tree's root down to `slot` (ascending).
std::vector<int> PathTo(const std::vector<int>& parents, int start, int slot) {
  std::vector<int> path;
  for (int s = slot; s >= start; s = parents[s - start]) path.insert(path.begin(), s);
  return path;
}

std::vector<float> Copy(std::span<const float> x) { return {x.begin(), x.end()}; }

// Prefill `prefix`, run the tree (in two calls when split > 0), then compare every node's
// logits with its path run as a chain; then keep one leaf's path and continue.
void ExpectTreeEqualsChains(const Runtime& rt, const Model& m, KvType kv, int n, unsigned seed, int split) {
  const int vocab = m.config.vocab_size;
  std::mt19937 rng(seed);
  std::vector<int> prefix(7), tokens(n);
  for (int& t : prefix) t = static_cast<int>(rng() % vocab);
  for (int& t : tokens) t = static_cast<int>(rng() % vocab);
  const int start = static_cast<int>(prefix.size());
  const std::vector<int> parents = RandomParents(n, start, seed);

  KVCache tree(m.config, 0, 0, kv);
  Forward(rt, m, prefix, 0, tree, false);
  std::vector<float> tl;
  if (split > 0) {
    tl = Copy(Forward(rt, m, std::span(tokens).first(split), start, tree, true, std::span(parents).first(split)));
    const std::vector<float> rest = Copy(
        Forward(rt, m, std::span(tokens).subspan(split), start + split, tree, true, std::span(parents).subspan(split)));
    tl.insert(tl.end(), rest.begin(), rest.end());
  } else {
    tl = Copy(Forward(rt, m, tokens, start, tree, true, parents));
  }
  ASSERT_EQ(tl.size(), size_t(n) * vocab);
  for (int i = 0; i < n; ++i) {
    const std::vector<int> path = PathTo(parents, start, start + i);
    std::vector<int> chain_tokens;
    for (int s : path) chain_tokens.push_back(tokens[s - start]);
    KVCache chain(m.config, 0, 0, kv);
    Forward(rt, m, prefix, 0, chain, false);
    std::span<const float> cl = Forward(rt, m, chain_tokens, start, chain, false);  // [1][vocab] the node's row
    ASSERT_EQ(0, std::memcmp(cl.data(), &tl[size_t(i) * vocab], 4 * size_t(vocab)))
        << "node " << i << " (depth " << path.size() - 1 << ") differs from its path run as a chain";
  }
  // Keep the path to the last node, continue with two tokens: as if the path had been
  // decoded as a sequence.
  const std::vector<int> path = PathTo(parents, start, start + n - 1);
  tree.KeepPath(path);
  ASSERT_FALSE(tree.has_tree());
  ASSERT_EQ(tree.length(), start + static_cast<int>(path.size()));
  const int next[2] = {1, 2};
  const std::vector<float> after = Copy(Forward(rt, m, next, tree.length(), tree, true));
  std::vector<int> chain_tokens = prefix;
  for (int s : path) chain_tokens.push_back(tokens[s - start]);
  KVCache chain(m.config, 0, 0, kv);
  Forward(rt, m, chain_tokens, 0, chain, false);
  std::span<const float> cl = Forward(rt, m, next, chain.length(), chain, true);
  ASSERT_EQ(0, std::memcmp(cl.data(), after.data(), 4 * after.size())) << "after KeepPath";
}

// Head sizes 16/32/64 (query runs of 16/8/4) and 24 (one query at a time), grouped-query
// attention, both cache types, a float and a block-quantized model, one tree call and
// two; on every kernel family and with a full thread team.
TEST(TreeForward, NodeLogitsEqualTheirPathAsAChainOnEveryFamily) {
  testing::KernelIsaGuard guard;
  for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"}) {
    if (!FindKernelFamily(isa)) continue;
    Runtime rt;
    ASSERT_TRUE(testing::ForceIsa(rt, isa));
    for (int hd : {16, 32, 64, 24}) {
      ModelConfig c = TinyTestConfig();
      c.n_heads = 4;
      c.n_kv_heads = 2;
      c.dim = 4 * hd;
      c.hidden_dim = 96;
      c.vocab_size = 64;
      for (QType t : {QType::F32, QType::Q4_0}) {
        const Model m = QuantizeModel(MakeSyntheticModel(c, 3 + hd), t);
        for (KvType kv : {KvType::F32, KvType::F16}) {
          SCOPED_TRACE(std::string(isa) + " hd " + std::to_string(hd) + " " + std::string(QTypeName(t)) + " " +
                       std::string(KvTypeName(kv)));
          ExpectTreeEqualsChains(rt, m, kv, 23, 11 + hd, 0);
          ExpectTreeEqualsChains(rt, m, kv, 23, 17 + hd, 9);
        }
      }
    }
  }
  ExpectTreeEqualsChains(testing::Threads(2, TeamPolicy::kFull), MakeSyntheticModel(TinyTestConfig(), 5), KvType::F32,
                         30, 4, 0);
}

TEST(TreeForward, RejectsBadParentsAndKeepsTheCacheUsable) {
  const Model m = MakeSyntheticModel(TinyTestConfig(), 2);
  KVCache cache(m.config, 0, 0);
  const int prefix[3] = {1, 2, 3};
  Forward(testing::Serial(), m, prefix, 0, cache, false);
  const int toks[2] = {4, 5};
  const int self_parent[2] = {2, 4};  // node 4 as its own parent
  testing::ExpectError([&] { Forward(testing::Serial(), m, toks, 3, cache, true, self_parent); },
                       {"tree node 4", "parent 4"});
  const int before_tree[2] = {2, 1};  // slot 1 is inside the sequence, not the slot before the tree
  testing::ExpectError([&] { Forward(testing::Serial(), m, toks, 3, cache, true, before_tree); }, {"parent 1"});
  EXPECT_EQ(cache.length(), 3);
  EXPECT_FALSE(cache.has_tree());
  const int ok[2] = {2, 2};
  Forward(testing::Serial(), m, toks, 3, cache, true, ok);
  EXPECT_TRUE(cache.has_tree());
  EXPECT_EQ(cache.position(4), 3);
  testing::ExpectError([&] { cache.KeepPath(std::vector<int>{3, 4}); }, {"slot 4 is not a child of 3"});
  cache.Truncate(3);
  EXPECT_FALSE(cache.has_tree());
}

// ---- decoding with trees ------------------------------------------------------------

std::vector<std::string> Prompts() { return testing::TinyStoriesPrompts(); }

std::vector<int> Encode(const LoadedModel& m, const std::string& text) {
  if (m.tokenizer) return m.tokenizer->Encode(text, true);
  const ModelConfig& c = m.model->config;
  std::vector<int> ids{c.bos_id};
  // Repeated bytes give the lookup drafts matches to find.
  for (size_t i = 0; i < text.size() && i < 24; ++i)
    ids.push_back(3 + static_cast<unsigned char>(text[i % 8]) % (c.vocab_size - 3));
  return ids;
}

// Tree drafts of every kind: static and dynamic trees of the q4_0 self-draft and of an
// early exit, lookup tries and token recycling.
const char* const kTreeDrafts[] = {"q4_0+branching=4,2,2,1",
                                   "q4_0+branching=2,2,2,2,2",
                                   "q4_0+tree_budget=16",
                                   "q4_0+tree_budget=5",
                                   "layers=1+branching=3,3",
                                   "layers=1+tree_budget=12",
                                   "lookup+tree_budget=16",
                                   "lookup+max_ngram=2+min_ngram=1+tree_budget=6",
                                   "recycling",
                                   "recycling+branching=2,2,1,1,1"};

// Greedy decoding with every tree draft gives the autoregressive tokens on every prompt.
void ExpectTreesLossless(const LoadedModel& target, int n_prompts, int max_new_tokens = 24) {
  std::vector<std::string> prompts = Prompts();
  ASSERT_GE(prompts.size(), 20u);
  if (n_prompts < static_cast<int>(prompts.size())) prompts.resize(n_prompts);
  DecoderOptions ar;
  ar.max_new_tokens = max_new_tokens;
  auto ar_dec = MakeDecoder(target, ar);
  std::vector<std::vector<int>> ids, expected;
  for (const auto& p : prompts) {
    ids.push_back(Encode(target, p));
    expected.push_back(ar_dec->Generate(ids.back()).tokens);
  }
  ASSERT_FALSE(expected[0].empty());
  for (const char* draft : kTreeDrafts) {
    if (target.model->config.n_layers < 2 && std::string(draft).starts_with("layers")) continue;
    for (int k : {16, 3}) {  // K caps a static tree's nodes (below a tree_budget it is an error, #45)
      DecoderOptions o = ar;
      o.kind = DecoderKind::Speculative;
      o.k = k;
      o.draft = ParseDraftSpec(draft, "draft");
      if (k < o.draft.tree_budget()) continue;
      auto dec = MakeDecoder(target, o);
      int64_t drafted = 0, accepted = 0, steps = 0;
      for (size_t i = 0; i < ids.size(); ++i) {
        const GenerationResult r = dec->Generate(ids[i]);
        ASSERT_EQ(r.tokens, expected[i]) << target.name << " " << draft << " K=" << k << " prompt: " << prompts[i];
        if (!r.stats.stopped_at_eos) {
          EXPECT_EQ(r.stats.generated_tokens, r.stats.target_calls + r.stats.accepted);
        }
        for (int n : r.stats.k_per_step) EXPECT_LE(n, k);
        drafted += r.stats.drafted, accepted += r.stats.accepted, steps += r.stats.target_calls;
      }
      // Both outcomes must occur, or the comparison proves little.
      EXPECT_GT(accepted, 0) << draft << " K=" << k;
      EXPECT_LT(accepted, drafted) << draft << " K=" << k;
    }
  }
}

LoadedModel Quantized(const LoadedModel& m, QType t) {
  return LoadedModel{m.name + "@" + std::string(QTypeName(t)),
                     std::make_shared<const Model>(QuantizeModel(*m.model, t)), m.tokenizer};
}

TEST(TreeDecoding, GreedyEqualsAutoregressiveSynthetic) {
  const LoadedModel m{"synthetic", std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), 1)), nullptr};
  ExpectTreesLossless(m, 20);
  ExpectTreesLossless(Quantized(m, QType::Q4_K), 8);
}

// Up to the context end: the trees shrink with the room left (the target's K, the
// draft's own cache for the nodes a dynamic tree expands).
TEST(TreeDecoding, RunsToTheContextEnd) {
  const LoadedModel m{"synthetic", std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), 1)), nullptr};
  DecoderOptions ar;
  ar.max_new_tokens = 1000;
  ar.stop_at_eos = false;
  const std::vector<int> prompt{1, 5, 9};
  const std::vector<int> expected = MakeDecoder(m, ar)->Generate(prompt).tokens;
  ASSERT_EQ(expected.size() + prompt.size(), size_t(m.model->config.max_seq_len));
  for (const char* draft : {"q4_0+tree_budget=16", "q4_0+branching=4,2,2,1", "lookup+tree_budget=16", "recycling"}) {
    DecoderOptions o = ar;
    o.kind = DecoderKind::Speculative;
    o.k = 16;
    o.draft = ParseDraftSpec(draft, "draft");
    EXPECT_EQ(MakeDecoder(m, o)->Generate(prompt).tokens, expected) << draft;
  }
}

TEST(TreeDecoding, GreedyEqualsAutoregressiveSharedModels) {
  const std::string dir = testing::SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "no shared models";
  for (const char* name : {"tinystories-656k", "tinystories-260k"}) {
    const LoadedModel m = LoadModel(name, dir);
    ExpectTreesLossless(m, 1000);  // every shared prompt
    // Rows of 64-384 values fit no K-quant block: Q6_K stores llama.cpp's fallback q8_0,
    // whose 24-token continuations give a lookup nothing to draft from: 64 tokens, every prompt.
    ExpectTreesLossless(Quantized(m, QType::Q6_K), 1000, 64);
  }
}

// llama.cpp's Q4_K_M file (K-quant tensors, Q6_K classifier) as the target.
TEST(TreeDecoding, GreedyEqualsAutoregressiveKQuantGguf) {
  const std::string p = testing::SharedFile("fixtures/kquants/synth-Q4_K_M.gguf");
  if (p.empty()) GTEST_SKIP() << "shared fixtures/kquants/synth-Q4_K_M.gguf not available";
  LoadedModel m = LoadModel(p);
  m.name = "synth-Q4_K_M";
  ExpectTreesLossless(m, 10);
}

// ---- tree verification ----------------------------------------------------------------

// Rows whose argmax is chosen: row r's argmax is best[r].
std::vector<float> ArgmaxRows(const std::vector<int>& best, int vocab) {
  std::vector<float> l(best.size() * vocab, 0.0f);
  for (size_t r = 0; r < best.size(); ++r) l[r * vocab + best[r]] = 1.0f;
  return l;
}

TEST(TreeVerify, GreedyFollowsTheTargetsArgmaxThroughTheTree) {
  // Root children 0 (tok 5) and 1 (tok 7); node 2 (tok 9) below 1, node 3 (tok 4) below 0,
  // node 4 (tok 3) below 2.
  const std::vector<int> tokens{5, 7, 9, 4, 3}, parents{-1, -1, 1, 0, 2};
  const int vocab = 12;
  // Target: after the root 7, after 7 then 9, after 9 then 3, after 3 then 11.
  const std::vector<float> l = ArgmaxRows({7, 0, 9, 3, 0, 11}, vocab);
  Verdict v = VerifyGreedy(DraftView{tokens, parents, {}}, l, vocab);
  EXPECT_EQ(v.path, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(v.n_accepted, 3);
  EXPECT_EQ(v.next, 11);  // the bonus at node 4's row
  // A chain: the same walk, path 0..a-1.
  const std::vector<int> chain{7, 9, 2};
  v = VerifyGreedy(chain, ArgmaxRows({7, 9, 3, 1}, vocab), vocab);
  EXPECT_EQ(v.path, (std::vector<int>{0, 1}));
  EXPECT_EQ(v.next, 3);
  testing::ExpectError(
      [&] {
        VerifyGreedy(DraftView{tokens, std::vector<int>{-1, 1, 0, 0, 0}, {}}, l, vocab);
      },
      {"parents", "node 1 has parent 1"});
}

TEST(TreeDraft, RecyclingReadsTheTargetsRankingsBreadthFirst) {
  auto d = MakeRecyclingDrafter({2, 1});
  auto state = d->NewState();
  d->Begin(*state, std::vector<int>{1});
  const int vocab = 8;
  std::vector<float> logits(3 * vocab, 0.0f);  // rows after tokens 5, 6, 7
  auto rank = [&](int row, std::vector<int> order) {
    for (size_t j = 0; j < order.size(); ++j) logits[row * vocab + order[j]] = 10.0f - j;
  };
  rank(0, {6, 3});
  rank(1, {7, 2});
  rank(2, {4, 1});
  d->Observe(*state, std::vector<int>{5, 6, 7}, logits, vocab);
  DraftBlock b;
  Rng rng(0);
  GenerationStats st;
  auto policy = MakeDraftPolicy(DecoderOptions{});
  const std::vector<int> seq{1, 5};
  d->Propose(*state, {seq, 16, *policy}, rng, b, st);
  // Root 5 -> {6, 3}; 6 -> 7 (its top 1); 3 was never verified: no children.
  EXPECT_EQ(b.tokens, (std::vector<int>{6, 3, 7}));
  EXPECT_EQ(b.parents, (std::vector<int>{-1, -1, 0}));
  EXPECT_EQ(ParseDraftSpec("recycling", "t").Label(), "recycling+branching=4,2,2,1");
  testing::ExpectError([] { ParseDraftSpec("recycling+q4_0", "t"); }, {"recycling draft has no model"});
}

TEST(TreeDraft, LookupTreeMergesEveryContinuation) {
  // "1 2" occurs three times before the end, followed by 3 4 9.., 5 0 1.., and 3 6 0...
  const std::vector<int> seq{1, 2, 3, 6, 0, 1, 2, 5, 0, 1, 2, 3, 4, 9, 1, 2};
  DraftBlock b;
  LookupTree(seq, 16, 2, 2, b);
  // Breadth first, most recent first: depth 1 {3, 5}, depth 2 {4 (3), 0 (5), 6 (3)}, ...
  EXPECT_EQ(b.tokens, (std::vector<int>{3, 5, 4, 0, 6, 9, 1, 0, 1, 2, 1, 2, 3, 2, 4, 5}));
  EXPECT_EQ(b.parents, (std::vector<int>{-1, -1, 0, 1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13}));
  b.Clear();
  LookupTree(seq, 4, 2, 2, b);  // the budget
  EXPECT_EQ(b.tokens, (std::vector<int>{3, 5, 4, 0}));
  EXPECT_EQ(b.parents, (std::vector<int>{-1, -1, 0, 1}));
  b.Clear();
  LookupTree(std::vector<int>{1, 2, 3, 4, 1, 2}, 3, 3, 1, b);  // one occurrence: a chain
  EXPECT_EQ(b.tokens, (std::vector<int>{3, 4, 1}));
  EXPECT_TRUE(b.parents.empty());
  b.Clear();
  LookupTree(std::vector<int>{1, 2, 3}, 3, 3, 1, b);  // nothing recurs
  EXPECT_TRUE(b.tokens.empty());
}

}  // namespace
}  // namespace specsweep
