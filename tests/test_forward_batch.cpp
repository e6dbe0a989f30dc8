// #50, a batch of sequences in one forward pass: each sequence's logits are bit-identical
// to the same sequence run alone through Forward, on every kernel family, with sequences
// of different lengths and positions, trees beside chains, every cache type, quantized
// weights and both team sizes; the checks name the sequence; the batched cost timing.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "decoders/common.h"
#include "models/forward.h"
#include "models/synthetic.h"
#include "quant/kernels.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::ExpectError;

// One sequence of the test batch: a prefix run alone first, then calls of its own.
struct Seq {
  int prefix;         // positions prefilled before the batch
  int n;              // tokens of the batched call
  bool all_logits;    //
  bool tree = false;  // the batched call is a token tree below the prefix
};

// Decode 1, verify K+1, a prefill from position 0, a tree beside the chains, a short
// verify: different start positions and lengths, mixed all_logits.
const Seq kSeqs[] = {{5, 1, false}, {9, 5, true}, {0, 13, false}, {7, 6, true, true}, {3, 2, true}};

std::vector<int> RandomTokens(std::mt19937& rng, int n, int vocab) {
  std::vector<int> t(n);
  for (int& x : t) x = static_cast<int>(rng() % vocab);
  return t;
}

// Parents of a tree of n nodes at slot start: two roots, the rest anywhere above.
std::vector<int> TreeParents(int n, int start) {
  std::vector<int> p(n);
  for (int i = 0; i < n; ++i) p[i] = i < 2 ? start - 1 : start + (i * 5 + 3) % i;
  return p;
}

std::vector<float> Copy(std::span<const float> x) { return {x.begin(), x.end()}; }

// Runs kSeqs as one batch and alone, then three decode steps of every sequence (the
// second after rolling sequence 1 back by two positions), comparing every sequence's
// logits bit for bit with those of its run alone.
void ExpectBatchEqualsAlone(const Runtime& rt, const Model& m, KvType kv, unsigned seed) {
  const int vocab = m.config.vocab_size, B = int(std::size(kSeqs));
  std::mt19937 rng(seed);
  std::vector<KVCache> batch, alone;
  std::vector<std::vector<int>> tokens(B), parents(B);
  for (int s = 0; s < B; ++s) {
    batch.emplace_back(m.config, 0, 64, kv);
    alone.emplace_back(m.config, 0, 64, kv);
    const std::vector<int> prefix = RandomTokens(rng, kSeqs[s].prefix, vocab);
    if (!prefix.empty()) Forward(rt, m, prefix, 0, batch[s], false), Forward(rt, m, prefix, 0, alone[s], false);
    tokens[s] = RandomTokens(rng, kSeqs[s].n, vocab);
    if (kSeqs[s].tree) parents[s] = TreeParents(kSeqs[s].n, kSeqs[s].prefix);
  }
  KVCache::Scratch scratch;
  for (int step = 0; step < 4; ++step) {
    std::vector<SequenceCall> calls;
    for (int s = 0; s < B; ++s) {
      if (step > 0) tokens[s] = RandomTokens(rng, 1, vocab), parents[s].clear();
      calls.push_back({tokens[s], batch[s].length(), &batch[s], step > 0 || kSeqs[s].all_logits, parents[s]});
    }
    std::vector<std::vector<float>> got;
    for (std::span<const float> l : ForwardBatch(rt, m, calls, scratch)) got.push_back(Copy(l));
    ASSERT_EQ(got.size(), size_t(B));
    size_t rows = 0;
    for (const SequenceCall& c : calls) rows += c.tokens.size();
    ASSERT_GE(scratch.q.size(), rows * m.config.q_dim()) << "the products see every sequence's rows at once";
    for (int s = 0; s < B; ++s) {
      const std::span<const float> want =
          Forward(rt, m, tokens[s], alone[s].length(), alone[s], calls[s].all_logits, parents[s]);
      ASSERT_EQ(got[s].size(), want.size()) << "sequence " << s << " step " << step;
      ASSERT_EQ(0, std::memcmp(got[s].data(), want.data(), 4 * want.size()))
          << "sequence " << s << " step " << step << " differs from the sequence run alone";
      ASSERT_EQ(batch[s].length(), alone[s].length());
    }
    if (step == 1)  // roll sequence 1 back, as a rejected draft does
      batch[1].Truncate(batch[1].length() - 2), alone[1].Truncate(alone[1].length() - 2);
  }
}

// hd 64 (grouped kernel, runs of 4), dim and FFN 256 so that K-quant blocks fit.
ModelConfig Hd64Config() {
  ModelConfig c = TinyTestConfig();
  c.dim = 256;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.hidden_dim = 256;
  c.vocab_size = 64;
  return c;
}

TEST(ForwardBatch, EachSequenceEqualsItAloneOnEveryFamily) {
  testing::KernelIsaGuard guard;
  int families = 0;
  for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"}) {
    if (!FindKernelFamily(isa)) continue;
    ++families;
    Runtime rt;
    ASSERT_TRUE(testing::ForceIsa(rt, isa));
    for (QType t : {QType::F32, QType::Q4_0, QType::Q8_0, QType::Q4_K}) {
      const Model m = QuantizeModel(MakeSyntheticModel(Hd64Config(), 7), t);
      ASSERT_EQ(m.layers[0].w2.type, t);  // the blocks fit (no float fallback)
      for (KvType kv : {KvType::F32, KvType::F16})
        for (int threads : {1, 2}) {
          rt.threads = threads;
          rt.team = TeamPolicy::kFull;
          SCOPED_TRACE(std::string(isa) + " " + std::string(QTypeName(t)) + " " + std::string(KvTypeName(kv)) + " " +
                       std::to_string(threads) + " threads");
          ExpectBatchEqualsAlone(rt, m, kv, 3);
        }
    }
  }
  EXPECT_GE(families, 2);
}

// The architecture variants: llama3/linear RoPE, qwen2 biases, qwen3 q/k norms at head
// 24 (one query per run) and 32; TinyTestConfig's GQA at head 16.
TEST(ForwardBatch, EachSequenceEqualsItAloneOnEveryArchitecture) {
  for (const testing::ArchVariant& v : testing::ArchVariants(TinyTestConfig())) {
    SCOPED_TRACE(v.name);
    const Model m = MakeSyntheticModel(v.config, 11);
    ExpectBatchEqualsAlone(testing::Serial(), m, KvType::F32, 5);
    ExpectBatchEqualsAlone(testing::Threads(2, TeamPolicy::kFull), m, KvType::F16, 6);
  }
}

TEST(ForwardBatch, ForwardIsABatchOfOne) {
  const Model m = MakeSyntheticModel(TinyTestConfig(), 2);
  const int toks[3] = {4, 5, 6};
  KVCache a(m.config), b(m.config);
  const std::vector<float> one = Copy(Forward(testing::Serial(), m, toks, 0, a, true));
  const SequenceCall call{toks, 0, &b, true};
  KVCache::Scratch scratch;
  const std::vector<std::span<const float>> got = ForwardBatch(testing::Serial(), m, {&call, 1}, scratch);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].size(), one.size());
  EXPECT_EQ(0, std::memcmp(got[0].data(), one.data(), 4 * one.size()));
  EXPECT_EQ(got[0].data(), scratch.logits.data());  // in the caller's scratch
  EXPECT_EQ(b.length(), 3);
}

TEST(ForwardBatch, ChecksNameTheSequenceAndChangeNoCache) {
  const Model m = MakeSyntheticModel(TinyTestConfig(), 2);
  const Runtime& rt = testing::Serial();
  KVCache a(m.config), b(m.config), shallow(m.config, 1);
  const int toks[2] = {4, 5}, bad_tok[1] = {100000};
  KVCache::Scratch scratch;
  auto run = [&](std::vector<SequenceCall> calls) { ForwardBatch(rt, m, calls, scratch); };
  ExpectError([&] { run({}); }, {"forward: batch: no sequences"});
  ExpectError([&] { run({{toks, 0, &a}, {toks, 0, nullptr}}); }, {"forward: sequence 1: cache: null"});
  ExpectError([&] { run({{toks, 0, &a}, {toks, 0, &a}}); }, {"forward: sequence 1: cache: the same as sequence 0"});
  ExpectError([&] { run({{toks, 0, &a}, {{}, 0, &b}}); }, {"forward: sequence 1: tokens: empty"});
  ExpectError([&] { run({{toks, 0, &a}, {toks, 3, &b}}); }, {"forward: sequence 1: start_pos: 3"});
  ExpectError([&] { run({{toks, 0, &a}, {bad_tok, 0, &b}}); }, {"forward: sequence 1: token: id 100000"});
  ExpectError([&] { run({{toks, 0, &a}, {toks, 0, &shallow}}); }, {"forward: sequence 1: cache: 1 layers"});
  KVCache small(m.config, 0, 2);
  ExpectError(
      [&] {
        run({{toks, 0, &a}, {toks, 0, &b}, {std::vector<int>(3, 1), 0, &small}});
      },
      {"forward: sequence 2: context: 3 positions exceed the context length 2"});
  // A bad tree in sequence 1 after a good tree in sequence 0: neither cache changes.
  Forward(rt, m, toks, 0, a), Forward(rt, m, toks, 0, b);
  const int good[2] = {1, 1}, self_parent[2] = {1, 3};
  ExpectError(
      [&] {
        run({{toks, 2, &a, true, good}, {toks, 2, &b, true, self_parent}});
      },
      {"forward: sequence 1: kv cache: tree node 3: parent 3"});
  EXPECT_FALSE(a.has_tree());
  EXPECT_FALSE(b.has_tree());
  EXPECT_EQ(a.length(), 2);
  EXPECT_EQ(b.length(), 2);
  run({{toks, 2, &a, true, good}, {toks, 2, &b}});  // both usable
  EXPECT_TRUE(a.has_tree());
  EXPECT_EQ(b.length(), 4);
  // One sequence alone keeps Forward's messages.
  ExpectError([&] { run({{toks, 0, &b}}); }, {"forward: start_pos: 0 but the cache holds 4"});
}

// An overflow in a batch names the sequence and its position.
TEST(ForwardBatch, OverflowNamesSequenceAndPosition) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 1);
  float* row = reinterpret_cast<float*>(m.tok_embeddings.Row(7));
  for (int c = 0; c < m.config.dim; ++c) row[c] *= 1e21f;
  for (const Runtime& rt : {testing::Serial(), testing::Threads(2, TeamPolicy::kFull)}) {
    KVCache a(m.config), b(m.config);
    const int ok[2] = {1, 5}, poisoned[3] = {1, 5, 7};
    KVCache::Scratch scratch;
    ExpectError(
        [&] {
          ForwardBatch(rt, m, std::vector<SequenceCall>{{ok, 0, &a}, {poisoned, 0, &b}}, scratch);
        },
        {"forward: layer 0, sequence 1, position 2: attn_norm"});
  }
}

// Batched cost timing: batch 3 gives n_max positive medians, and `work` sees each
// sequence's rows of every call (3 per call, n rows of logits each).
TEST(ForwardBatch, TimeForwardCallsRunsTheBatch) {
  const Model m = MakeSyntheticModel(TinyTestConfig(), 2);
  const int vocab = m.config.vocab_size;
  const std::vector<int> prompt = {1, 2, 3, 4};
  for (bool tree : {false, true}) {
    int calls = 0;
    size_t rows = 0;
    auto work = [&](std::span<const float> l) { return ++calls, rows += l.size() / vocab, 0.0; };
    const std::vector<double> med =
        TimeForwardCalls(testing::Serial(), m, 0, KvType::F32, prompt, 4, 2, true, tree, work, 3);
    ASSERT_EQ(med.size(), 4u);
    for (double t : med) EXPECT_GT(t, 0.0);
    EXPECT_EQ(calls, 3 * 4 * 2);                // 3 sequences x n_max x reps
    EXPECT_EQ(rows, 3u * (1 + 2 + 3 + 4) * 2);  // each sequence's n rows
  }
  ExpectError([&] { TimeForwardCalls(testing::Serial(), m, 0, KvType::F32, prompt, 4, 2, true, false, {}, 0); },
              {"cost model: batch: 0"});
}

}  // namespace
}  // namespace specsweep
