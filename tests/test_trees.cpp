// Token trees: tree attention in the engine (a node's logits are those of its path run as
// a sequence, bit for bit, on every kernel family), KeepPath, tree verification and the
// tree drafters (greedy output equals autoregressive decoding).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

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
void ExpectTreeEqualsChains(const Model& m, KvType kv, int n, unsigned seed, int split) {
  const int vocab = m.config.vocab_size;
  std::mt19937 rng(seed);
  std::vector<int> prefix(7), tokens(n);
  for (int& t : prefix) t = static_cast<int>(rng() % vocab);
  for (int& t : tokens) t = static_cast<int>(rng() % vocab);
  const int start = static_cast<int>(prefix.size());
  const std::vector<int> parents = RandomParents(n, start, seed);

  KVCache tree(m.config, 0, 0, kv);
  Forward(m, prefix, 0, tree, false);
  std::vector<float> tl;
  if (split > 0) {
    tl = Copy(Forward(m, std::span(tokens).first(split), start, tree, true, std::span(parents).first(split)));
    const std::vector<float> rest =
        Copy(Forward(m, std::span(tokens).subspan(split), start + split, tree, true, std::span(parents).subspan(split)));
    tl.insert(tl.end(), rest.begin(), rest.end());
  } else {
    tl = Copy(Forward(m, tokens, start, tree, true, parents));
  }
  ASSERT_EQ(tl.size(), size_t(n) * vocab);
  for (int i = 0; i < n; ++i) {
    const std::vector<int> path = PathTo(parents, start, start + i);
    std::vector<int> chain_tokens;
    for (int s : path) chain_tokens.push_back(tokens[s - start]);
    KVCache chain(m.config, 0, 0, kv);
    Forward(m, prefix, 0, chain, false);
    std::span<const float> cl = Forward(m, chain_tokens, start, chain, false);  // [1][vocab] the node's row
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
  const std::vector<float> after = Copy(Forward(m, next, tree.length(), tree, true));
  std::vector<int> chain_tokens = prefix;
  for (int s : path) chain_tokens.push_back(tokens[s - start]);
  KVCache chain(m.config, 0, 0, kv);
  Forward(m, chain_tokens, 0, chain, false);
  std::span<const float> cl = Forward(m, next, chain.length(), chain, true);
  ASSERT_EQ(0, std::memcmp(cl.data(), after.data(), 4 * after.size())) << "after KeepPath";
}

class IsaGuard {
 public:
  ~IsaGuard() { ForceKernelIsa(saved_.c_str()); }

 private:
  std::string saved_ = ActiveKernelIsa();
};

// Head sizes 16/32/64 (query runs of 16/8/4) and 24 (one query at a time), grouped-query
// attention, both cache types, a float and a block-quantized model, one tree call and
// two; on every kernel family and with a full thread team.
TEST(TreeForward, NodeLogitsEqualTheirPathAsAChainOnEveryFamily) {
  IsaGuard guard;
  for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"}) {
    if (!FindKernelFamily(isa)) continue;
    ASSERT_TRUE(ForceKernelIsa(isa));
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
          ExpectTreeEqualsChains(m, kv, 23, 11 + hd, 0);
          ExpectTreeEqualsChains(m, kv, 23, 17 + hd, 9);
        }
      }
    }
  }
  SetTeamPolicy(TeamPolicy::kFull);
  ExpectTreeEqualsChains(MakeSyntheticModel(TinyTestConfig(), 5), KvType::F32, 30, 4, 0);
  SetTeamPolicy(TeamPolicy::kAuto);
}

TEST(TreeForward, RejectsBadParentsAndKeepsTheCacheUsable) {
  const Model m = MakeSyntheticModel(TinyTestConfig(), 2);
  KVCache cache(m.config, 0, 0);
  const int prefix[3] = {1, 2, 3};
  Forward(m, prefix, 0, cache, false);
  const int toks[2] = {4, 5};
  const int self_parent[2] = {2, 4};  // node 4 as its own parent
  testing::ExpectError([&] { Forward(m, toks, 3, cache, true, self_parent); }, {"tree node 4", "parent 4"});
  const int before_tree[2] = {2, 1};  // slot 1 is inside the sequence, not the slot before the tree
  testing::ExpectError([&] { Forward(m, toks, 3, cache, true, before_tree); }, {"parent 1"});
  EXPECT_EQ(cache.length(), 3);
  EXPECT_FALSE(cache.has_tree());
  const int ok[2] = {2, 2};
  Forward(m, toks, 3, cache, true, ok);
  EXPECT_TRUE(cache.has_tree());
  EXPECT_EQ(cache.position(4), 3);
  testing::ExpectError([&] { cache.KeepPath(std::vector<int>{3, 4}); }, {"slot 4 is not a child of 3"});
  cache.Truncate(3);
  EXPECT_FALSE(cache.has_tree());
}

}  // namespace
}  // namespace specsweep
