// Forward pass: agreement with a naive reference, batching and threading determinism,
// cache rollback, and the real models' known greedy continuations.
#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <random>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "models/forward.h"
#include "models/vec_ops.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

// Naive single-token reference written independently of models/forward.cpp: plain
// loops over dequantized weights, RoPE computed in double.
class NaiveLlama {
 public:
  explicit NaiveLlama(const Model& m) : m_(m), c_(m.config) {
    for (int l = 0; l < c_.n_layers; ++l) {
      keys_.emplace_back();
      values_.emplace_back();
    }
  }
  std::vector<float> Step(int token) {
    const int D = c_.dim, hd = c_.head_dim(), KV = c_.kv_dim();
    const int pos = static_cast<int>(keys_[0].size());
    std::vector<float> x(D);
    DequantizeRow(m_.tok_embeddings, token, x.data());
    for (int l = 0; l < c_.n_layers; ++l) {
      const LayerWeights& L = m_.layers[l];
      auto xb = Norm(x, L.attn_norm);
      auto q = Mul(L.wq, xb), k = Mul(L.wk, xb), v = Mul(L.wv, xb);
      Rotate(q, pos);
      Rotate(k, pos);
      keys_[l].push_back(k);
      values_[l].push_back(v);
      std::vector<float> att(D, 0.0f);
      for (int h = 0; h < c_.n_heads; ++h) {
        const int kvh = h / (c_.n_heads / c_.n_kv_heads);
        std::vector<double> s(pos + 1);
        double mx = -1e300;
        for (int t = 0; t <= pos; ++t) {
          double d = 0;
          for (int e = 0; e < hd; ++e) d += double(q[h * hd + e]) * keys_[l][t][kvh * hd + e];
          s[t] = d / std::sqrt(double(hd));
          mx = std::max(mx, s[t]);
        }
        double sum = 0;
        for (auto& e : s) sum += (e = std::exp(e - mx));
        for (int t = 0; t <= pos; ++t)
          for (int e = 0; e < hd; ++e) att[h * hd + e] += float(s[t] / sum * values_[l][t][kvh * hd + e]);
      }
      (void)KV;
      auto o = Mul(L.wo, att);
      for (int i = 0; i < D; ++i) x[i] += o[i];
      xb = Norm(x, L.ffn_norm);
      auto g = Mul(L.w1, xb), u = Mul(L.w3, xb);
      for (size_t i = 0; i < g.size(); ++i) g[i] = float(g[i] / (1.0 + std::exp(-double(g[i]))) * u[i]);
      auto dn = Mul(L.w2, g);
      for (int i = 0; i < D; ++i) x[i] += dn[i];
    }
    return Mul(m_.output, Norm(x, m_.final_norm));
  }

 private:
  std::vector<float> Norm(const std::vector<float>& x, const std::vector<float>& g) const {
    double ss = 0;
    for (float e : x) ss += double(e) * e;
    const double s = 1.0 / std::sqrt(ss / x.size() + c_.norm_eps);
    std::vector<float> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = float(x[i] * s * g[i]);
    return out;
  }
  std::vector<float> Mul(const QMatrix& W, const std::vector<float>& x) const {
    std::vector<float> row(W.cols), y(W.rows);
    for (int r = 0; r < W.rows; ++r) {
      DequantizeRow(W, r, row.data());
      double acc = 0;
      for (int c = 0; c < W.cols; ++c) acc += double(row[c]) * x[c];
      y[r] = float(acc);
    }
    return y;
  }
  void Rotate(std::vector<float>& v, int pos) const {
    const int hd = c_.head_dim();
    for (size_t h = 0; h < v.size() / hd; ++h)
      for (int j = 0; j < hd / 2; ++j) {
        const double ang = pos / std::pow(double(c_.rope_theta), 2.0 * j / hd);
        const double a = v[h * hd + 2 * j], b = v[h * hd + 2 * j + 1];
        v[h * hd + 2 * j] = float(a * std::cos(ang) - b * std::sin(ang));
        v[h * hd + 2 * j + 1] = float(a * std::sin(ang) + b * std::cos(ang));
      }
  }
  const Model& m_;
  const ModelConfig& c_;
  std::vector<std::vector<std::vector<float>>> keys_, values_;  // [layer][pos][kv_dim]
};

std::vector<int> SomeTokens(int n, int vocab) {
  std::vector<int> t(n);
  for (int i = 0; i < n; ++i) t[i] = (i * 37 + 11) % vocab;
  return t;
}

// Dot's documented order, written out: 16 lane sums of the products i = j (mod 16) in
// element order, then lanes j and j + w added for w = 8, 4, 2, 1.
float DotInDocumentedOrder(const float* a, const float* b, int n) {
  float acc[16] = {};
  for (int i = 0; i < n; ++i) acc[i % 16] += a[i] * b[i];
  for (int w = 8; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

TEST(VecOps, DotIsBitIdenticalToItsDocumentedOrder) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int n : {0, 1, 5, 15, 16, 17, 31, 64, 65, 100, 768}) {
    std::vector<float> a(n), b(n);
    for (int i = 0; i < n; ++i) {
      a[i] = u(rng) * std::ldexp(1.0f, i % 9);  // mixed magnitudes: the order shows in the bits
      b[i] = u(rng);
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(Dot(a.data(), b.data(), n)),
              std::bit_cast<uint32_t>(DotInDocumentedOrder(a.data(), b.data(), n)))
        << "n " << n;
  }
}

TEST(VecOps, LaneTreeSums16EqualsSixteenLaneTreeSums) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int rep = 0; rep < 100; ++rep) {
    Lanes16 v[16];
    for (int w = 0; w < 16; ++w)
      for (int j = 0; j < 16; ++j) v[w][j] = u(rng) * std::ldexp(1.0f, (w + 3 * j + rep) % 20 - 10);
    const Lanes16 all = LaneTreeSums16(v);
    for (int w = 0; w < 16; ++w)
      ASSERT_EQ(std::bit_cast<uint32_t>(all[w]), std::bit_cast<uint32_t>(LaneTreeSum(v[w]))) << rep << " " << w;
  }
}

TEST(VecOps, DotOverHalvesEqualsDotOverTheirWidenedValues) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (int n : {0, 1, 15, 16, 17, 64, 100}) {
    std::vector<float> a(n), wide(n);
    std::vector<uint16_t> half(n);
    for (int i = 0; i < n; ++i) {
      a[i] = u(rng) * std::ldexp(1.0f, i % 9);
      half[i] = F32ToF16(u(rng));
      wide[i] = F16ToF32(half[i]);
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(Dot(a.data(), half.data(), n)),
              std::bit_cast<uint32_t>(Dot(a.data(), wide.data(), n)))
        << "n " << n;
  }
  // StoreRow rounds as the scalar reference does (ties to even, subnormals, overflow).
  const std::vector<float> x = {1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 0x1p-20f, 70000.0f, -0.0f, 3.14159f};
  std::vector<uint16_t> h(x.size());
  StoreRow(x.data(), static_cast<int>(x.size()), h.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(h[i], F32ToF16(x[i])) << i;
  EXPECT_EQ(h[0], 0x3C00);  // 1 + 2^-11 is a tie: rounds to the even 1.0
  EXPECT_EQ(h[3], 0x7C00);  // overflow: inf
}

TEST(VecOps, ExpFWithinStatedErrorOfLibm) {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.0007f) {
    const double want = std::exp(double(x));
    worst = std::max(worst, std::fabs(ExpF(x) - want) / want);
  }
  EXPECT_LT(worst, 4e-7);
  EXPECT_GT(worst, 0.0);  // not libm itself
  EXPECT_EQ(ExpF(0.0f), 1.0f);
  EXPECT_TRUE(std::isfinite(ExpF(INFINITY)));  // clamped: 2.2e38
  EXPECT_GT(ExpF(-INFINITY), 0.0f);            // clamped: ~1.2e-38
  EXPECT_TRUE(std::isnan(ExpF(NAN)));
  EXPECT_EQ(SwiGlu(0.0f, 3.0f), 0.0f);
  EXPECT_NEAR(SwiGlu(-200.0f, 1.0f), 0.0f, 1e-30f);
  EXPECT_NEAR(SwiGlu(20.0f, 0.5f), 10.0f, 1e-5f);
}

TEST(Forward, MatchesNaiveReference) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 7);
  NaiveLlama ref(m);
  KVCache cache(m.config);
  auto toks = SomeTokens(20, m.config.vocab_size);
  auto batch = Forward(testing::Serial(), m, toks, 0, cache);
  const int V = m.config.vocab_size;
  float max_err = 0, max_ref = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = ref.Step(toks[i]);
    for (int j = 0; j < V; ++j) {
      max_err = std::max(max_err, std::abs(r[j] - batch[size_t(i) * V + j]));
      max_ref = std::max(max_ref, std::abs(r[j]));
    }
  }
  EXPECT_GT(max_ref, 0.1f);
  EXPECT_LT(max_err, 1e-4f * std::max(1.0f, max_ref)) << "max |ref| " << max_ref;
}

class ForwardKv : public ::testing::TestWithParam<KvType> {};
INSTANTIATE_TEST_SUITE_P(KvTypes, ForwardKv, ::testing::Values(KvType::F32, KvType::F16),
                         [](const auto& info) { return std::string(KvTypeName(info.param)); });

// Head sizes 16 and 64 run attention in groups of up to 16 and 4 queries (a batch of 5
// is a group and a single query, 3 a group of 3), head size 8 one query at a time.
TEST_P(ForwardKv, BatchOfNBitIdenticalToSingleSteps) {
  for (int heads : {4, 1, 8}) {  // head size 16, 64, 8
    ModelConfig c = TinyTestConfig();
    c.n_heads = heads;
    c.n_kv_heads = heads > 1 ? heads / 2 : 1;
    SCOPED_TRACE("head size " + std::to_string(c.head_dim()));
    Model m = MakeSyntheticModel(c, 3);
    const int V = m.config.vocab_size;
    auto toks = SomeTokens(33, V);
    KVCache single(m.config, 0, 0, GetParam());
    std::vector<float> one_by_one;
    for (int i = 0; i < 33; ++i) {
      auto l = Forward(testing::Serial(), m, std::span(toks).subspan(i, 1), i, single);
      one_by_one.insert(one_by_one.end(), l.begin(), l.end());
    }
    // Mixed batch sizes: prefill 5, then 1, 8, 3, 16.
    KVCache mixed(m.config, 0, 0, GetParam());
    std::vector<float> batched;
    int pos = 0;
    for (int n : {5, 1, 8, 3, 16}) {
      auto l = Forward(testing::Serial(), m, std::span(toks).subspan(pos, n), pos, mixed);
      batched.insert(batched.end(), l.begin(), l.end());
      pos += n;
    }
    ASSERT_EQ(batched.size(), one_by_one.size());
    EXPECT_EQ(0, std::memcmp(batched.data(), one_by_one.data(), batched.size() * sizeof(float)));
  }
}

TEST_P(ForwardKv, ThreadCountDoesNotChangeLogits) {
  ModelConfig c = TinyTestConfig();
  c.dim = 256;
  c.hidden_dim = 512;
  c.n_heads = 8;
  c.n_kv_heads = 4;  // 3 threads split the 4 KV heads unevenly
  const Model f32 = MakeSyntheticModel(c, 5);
  auto toks = SomeTokens(16, c.vocab_size);
  for (const Model& m : {f32, QuantizeModel(f32, QType::Q4_0)}) {  // float and integer kernels
    std::vector<std::vector<float>> runs;
    // Teams of 1, 2 and 3 (forced: this model is below the automatic team threshold),
    // then the automatic choice.
    for (int threads : {1, 2, 3, 0}) {
      const Runtime rt = testing::Threads(threads ? threads : 2, threads ? TeamPolicy::kFull : TeamPolicy::kAuto);
      if (threads) {
        ASSERT_EQ(ForwardTeamSize(rt, m, 1, 12), threads);
      }
      KVCache cache(c, 0, 0, GetParam());
      auto l = Forward(rt, m, std::span(toks).first(12), 0, cache);  // prefill, then decode steps
      std::vector<float> all(l.begin(), l.end());
      for (int pos = 12; pos < 16; ++pos) {
        l = Forward(rt, m, std::span(toks).subspan(pos, 1), pos, cache);
        all.insert(all.end(), l.begin(), l.end());
      }
      runs.push_back(std::move(all));
    }
    EXPECT_EQ(runs[0], runs[1]);
    EXPECT_EQ(runs[0], runs[2]);
    EXPECT_EQ(runs[0], runs[3]);
  }
}

// The automatic team: one thread for work too small to gain from a team (a tiny model's
// decode and verify calls), every thread for a large layer or a long prefill.
TEST(Forward, TeamSizeFollowsTheWork) {
  const Runtime two = testing::Threads(2);
  const Model tiny = MakeSyntheticModel(TinyTestConfig(), 1);
  EXPECT_EQ(ForwardTeamSize(two, tiny, 1, 100), 1);
  EXPECT_EQ(ForwardTeamSize(two, tiny, 16, 100), 1);
  ModelConfig c = TinyTestConfig();
  c.dim = 512;
  c.hidden_dim = 1536;  // 3.4M multiply-adds per layer and position
  c.n_heads = 8;
  c.n_kv_heads = 4;
  const Model mid = MakeSyntheticModel(c, 1);
  EXPECT_EQ(ForwardTeamSize(two, mid, 1, 10), 1);
  EXPECT_EQ(ForwardTeamSize(two, mid, 2, 10), 2);
  EXPECT_EQ(ForwardTeamSize(testing::Threads(2, TeamPolicy::kFull), tiny, 1, 100), 2);
  EXPECT_EQ(ForwardTeamSize(testing::Threads(2, TeamPolicy::kSerial), mid, 8, 10), 1);
  EXPECT_EQ(ForwardTeamSize(testing::Threads(1, TeamPolicy::kFull), mid, 8, 10), 1);  // --threads stays an upper bound
}

// --threads: 0 is every core, the range is checked.
TEST(Runtime, ResolveThreads) {
  EXPECT_EQ(ResolveThreads(3), 3);
  EXPECT_GE(ResolveThreads(0), 1);
  EXPECT_EQ(ResolveThreads(MaxThreads()), MaxThreads());
  testing::ExpectError([] { ResolveThreads(-1); }, {"threads: -1 is out of range"});
  testing::ExpectError([] { ResolveThreads(MaxThreads() + 1); }, {"out of range"});
  const Runtime rt;
  EXPECT_EQ(rt.threads, 1);
  EXPECT_EQ(rt.team, TeamPolicy::kAuto);
  EXPECT_STREQ(rt.kernel_isa(), DefaultKernels().base->name);
}

TEST_P(ForwardKv, TruncateThenRedecodeEqualsFresh) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 11);
  auto a = SomeTokens(20, m.config.vocab_size);
  auto b = a;
  for (int i = 12; i < 20; ++i) b[i] = (b[i] + 5) % m.config.vocab_size;
  KVCache cache(m.config, 0, 0, GetParam());
  Forward(testing::Serial(), m, a, 0, cache);  // decode a, then roll back past position 12 and decode b's tail
  cache.Truncate(12);
  auto l1 = Forward(testing::Serial(), m, std::span(b).subspan(12), 12, cache);
  std::vector<float> rolled(l1.begin(), l1.end());
  KVCache fresh(m.config, 0, 0, GetParam());
  auto l2 = Forward(testing::Serial(), m, b, 0, fresh);
  std::vector<float> tail(l2.begin() + size_t(12) * m.config.vocab_size, l2.end());
  EXPECT_EQ(rolled, tail);
}

// A half cache holds half the bytes and rounds keys and values once: logits stay within
// half precision of the float cache's, and are not the same bits (the path is taken).
TEST(Forward, HalfKvCacheStaysCloseToFloatCache) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 13);
  auto toks = SomeTokens(30, m.config.vocab_size);
  KVCache f32(m.config), f16(m.config, 0, 0, KvType::F16);
  EXPECT_EQ(f16.type(), KvType::F16);
  EXPECT_EQ(2 * f16.bytes_per_position(), f32.bytes_per_position());
  auto a = Forward(testing::Serial(), m, toks, 0, f32);
  std::vector<float> la(a.begin(), a.end());
  auto b = Forward(testing::Serial(), m, toks, 0, f16);
  std::vector<float> lb(b.begin(), b.end());
  float max_err = 0, max_abs = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    max_err = std::max(max_err, std::abs(la[i] - lb[i]));
    max_abs = std::max(max_abs, std::abs(la[i]));
  }
  EXPECT_GT(max_abs, 0.1f);
  EXPECT_GT(max_err, 0.0f);
  EXPECT_LT(max_err, 1e-2f * max_abs) << "max |logit| " << max_abs;
}

TEST(Forward, LastLogitsOnlyEqualsAllLogitsRow) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 2);
  auto toks = SomeTokens(9, m.config.vocab_size);
  KVCache c1(m.config), c2(m.config);
  auto all = Forward(testing::Serial(), m, toks, 0, c1, true);
  std::vector<float> last_row(all.end() - m.config.vocab_size, all.end());
  auto last = Forward(testing::Serial(), m, toks, 0, c2, false);
  EXPECT_EQ(std::vector<float>(last.begin(), last.end()), last_row);
}

TEST(Forward, EarlyExitCacheRunsFirstLayersOnly) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 4);
  Model cut = m;
  cut.layers.resize(1);
  cut.config.n_layers = 1;
  auto toks = SomeTokens(6, m.config.vocab_size);
  KVCache partial(m.config, 1), ref(cut.config);
  auto a = Forward(testing::Serial(), m, toks, 0, partial);
  std::vector<float> va(a.begin(), a.end());
  auto b = Forward(testing::Serial(), cut, toks, 0, ref);
  EXPECT_EQ(va, std::vector<float>(b.begin(), b.end()));
}

TEST(Forward, RejectsBadCalls) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 1);
  KVCache cache(m.config);
  std::vector<int> bad = {1, 999};
  EXPECT_THROW(Forward(testing::Serial(), m, bad, 0, cache), Error);
  std::vector<int> ok = {1, 2};
  EXPECT_THROW(Forward(testing::Serial(), m, ok, 3, cache), Error);  // start_pos != cache length
  std::vector<int> too_long(m.config.max_seq_len + 1, 3);
  try {
    Forward(testing::Serial(), m, too_long, 0, cache);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cache.Truncate(5), Error);
}

// Greedy decoding straight on Forward (independent of the decoders module).
std::string GreedyContinuation(const LoadedModel& lm, const std::string& prompt, int n_new) {
  auto ids = lm.tokenizer->Encode(prompt, true);
  KVCache cache(lm.model->config);
  const int V = lm.model->config.vocab_size;
  auto logits = Forward(testing::Serial(), *lm.model, ids, 0, cache, false);
  std::vector<int> all = ids;
  for (int i = 0; i < n_new; ++i) {
    int best = 0;
    for (int j = 1; j < V; ++j)
      if (logits[j] > logits[best]) best = j;
    if (best == lm.model->config.eos_id) break;
    all.push_back(best);
    int pos = static_cast<int>(all.size()) - 1;
    logits = Forward(testing::Serial(), *lm.model, std::span(all).subspan(pos, 1), pos, cache);
  }
  return lm.tokenizer->Decode(all);
}

TEST(RealModels, Stories260kGreedyContinuation) {
  const std::string dir = testing::SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "shared models not present";
  auto lm = LoadModel("tinystories-260k", dir);
  std::string text = GreedyContinuation(lm, "Once upon a time", 40);
  EXPECT_EQ(text.rfind("Once upon a time, there was a little girl named Lily. She loved to play outside in the park.",
                       0),
            0u)
      << text;
}

TEST(RealModels, Stories656kGreedyIsFluentEnglish) {
  const std::string dir = testing::SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "shared models not present";
  auto lm = LoadModel("tinystories-656k", dir);
  std::string text = GreedyContinuation(lm, "Once upon a time", 60);
  // Fluency proxy: the continuation is made of dictionary-like lowercase words with
  // TinyStories' everyday vocabulary, and sentences end.
  EXPECT_EQ(text.rfind("Once upon a time", 0), 0u) << text;
  int common = 0;
  for (const char* w : {" the ", " was ", " a ", " and ", " to ", " he ", " she ", " they ", " named "})
    if (text.find(w) != std::string::npos) ++common;
  EXPECT_GE(common, 4) << text;
  EXPECT_NE(text.find('.'), std::string::npos) << text;
  size_t letters = 0;
  for (unsigned char ch : text)
    letters += std::isalpha(ch) || ch == ' ' || ch == '.' || ch == ',' || ch == '\'' || ch == '!' || ch == '"' ||
               ch == '\n' || ch == '?';
  EXPECT_EQ(letters, text.size()) << text;
}

}  // namespace
}  // namespace specsweep
