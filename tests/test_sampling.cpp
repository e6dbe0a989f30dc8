// Sampler and speculative sampling: the distribution of a token produced through
// draft + verification must be the target's p exactly (chi-square over many seeds), and
// a broken acceptance rule must be detected by the same test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <vector>

#include "decoders/draft_tree.h"
#include "tests/chi_square.h"
#include "tests/test_util.h"
#include "decoders/drafter.h"
#include "decoders/sampler.h"
#include "decoders/speculative.h"
#include "decoders/verify.h"
#include "models/forward.h"
#include "models/synthetic.h"

namespace specsweep {
namespace {

using chi::ChiSquare;
using chi::Critical;

std::vector<double> ToDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// A target p and a draft q over 6 tokens (temperature 1), and p's logits.
struct PQ {
  std::vector<float> p_logits;
  SamplingParams sp;
  std::vector<float> p, q;
};
PQ SmallPQ() {
  PQ r{{1.0f, 2.0f, 0.5f, -1.0f, 0.0f, 1.5f}, {}, {}, {}};
  r.sp.temperature = 1.0f;
  ComputeProbs(r.p_logits, r.sp, r.p);
  ComputeProbs(std::vector<float>{2.0f, 0.0f, 1.5f, 1.0f, -2.0f, 0.0f}, r.sp, r.q);
  return r;
}

TEST(Sampler, ArgmaxTakesLowestIndexOnTies) {
  std::vector<float> x{0.1f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(Argmax(x), 1);
  std::vector<float> p;
  ComputeProbs(x, SamplingParams{}, p);
  EXPECT_EQ(p, (std::vector<float>{0, 1, 0, 0}));
}

TEST(Sampler, TemperatureTopKTopP) {
  const std::vector<float> logits{2.0f, 1.0f, 0.0f, 2.0f, -1.0f};
  SamplingParams sp;
  sp.temperature = 0.5f;
  std::vector<float> p;
  ComputeProbs(logits, sp, p);
  double z = 0;
  for (float l : logits) z += std::exp(l / 0.5);
  for (size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(p[i], std::exp(logits[i] / 0.5) / z, 1e-6);

  sp.temperature = 1.0f;
  sp.top_k = 3;  // ties at 2.0 -> keeps 0, 3, then 1
  ComputeProbs(logits, sp, p);
  EXPECT_EQ(p[2], 0.0f);
  EXPECT_EQ(p[4], 0.0f);
  const double z3 = 2 * std::exp(2.0) + std::exp(1.0);
  EXPECT_NEAR(p[1], std::exp(1.0) / z3, 1e-6);
  EXPECT_NEAR(p[0], std::exp(2.0) / z3, 1e-6);

  sp.top_k = 0;
  sp.top_p = 0.6f;  // softmax: 0.401, 0.401, 0.147, ... -> first two reach 0.6
  ComputeProbs(logits, sp, p);
  EXPECT_NEAR(p[0], 0.5, 1e-6);
  EXPECT_NEAR(p[3], 0.5, 1e-6);
  EXPECT_EQ(p[1], 0.0f);
  sp.top_p = 0.3f;  // one token already exceeds it: keep exactly one (the lower index)
  ComputeProbs(logits, sp, p);
  EXPECT_EQ(p[0], 1.0f);
  EXPECT_EQ(p[3], 0.0f);
}

TEST(Sampler, RngIsPortableAndSamplesMatchProbs) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) {
    const double u = a.Uniform();
    EXPECT_EQ(u, b.Uniform());
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
  // mt19937_64 is fully specified by the standard: its first output for the default seed
  // 5489 is 14514284786278117030, so Uniform() is the same on every platform.
  EXPECT_EQ(Rng(5489).Uniform(), static_cast<double>(14514284786278117030ull >> 11) * 0x1.0p-53);

  const std::vector<float> probs{0.5f, 0.0f, 0.3f, 0.15f, 0.05f};
  std::vector<int> counts(probs.size());
  Rng rng(1);
  for (int i = 0; i < 20000; ++i) ++counts[SampleFromProbs(probs, rng)];
  EXPECT_EQ(counts[1], 0);
  auto [stat, df] = ChiSquare(counts, ToDouble(probs));
  EXPECT_LT(stat, Critical(df));
}

// Direct test of VerifySampling with K=1 on hand-made p and q: the emitted token
// (accepted draft or residual resample) must follow p.
TEST(SpeculativeSampling, VerifyReproducesTargetDistribution) {
  const int vocab = 6;
  const auto [p_logits, sp, p, q] = SmallPQ();
  std::vector<float> target_rows(p_logits);  // [K+1=2][vocab]
  target_rows.insert(target_rows.end(), p_logits.begin(), p_logits.end());
  for (AcceptRule rule : {AcceptRule::Exact, AcceptRule::AlwaysAccept}) {
    std::vector<int> counts(vocab);
    Rng rng(123);
    for (int i = 0; i < 20000; ++i) {
      const int d = SampleFromProbs(q, rng);
      const std::vector<int> draft{d};
      Verdict v = VerifySampling(draft, q, target_rows, vocab, sp, rng, rule);
      ++counts[v.n_accepted == 1 ? d : v.next];
    }
    auto [stat, df] = ChiSquare(counts, ToDouble(p));
    if (rule == AcceptRule::Exact) {
      EXPECT_LT(stat, Critical(df));
    } else
      EXPECT_GT(stat, Critical(df));  // always-accept yields q, not p
  }
}

// End to end: synthetic target, first generated token over many seeds. The first token
// of the speculative loop comes out of verification (the prompt's last token is the
// first verify position), so it tests the loop, draft sampling and the acceptance rule.
class EndToEnd : public ::testing::Test {
 protected:
  static Model Sharpened(uint64_t seed) {
    Model m = MakeSyntheticModel(TinyTestConfig(), seed);
    // Scale the classifier so p is peaked: informative bins at temperature 1.
    float* w = reinterpret_cast<float*>(m.output.data.data());
    for (size_t i = 0; i < m.output.bytes() / sizeof(float); ++i) w[i] *= 6.0f;
    return m;
  }
  void SetUp() override {
    target_ = {"target", std::make_shared<const Model>(Sharpened(1)), nullptr};
    KVCache cache(target_.model->config);
    auto logits = Forward(testing::Serial(), *target_.model, prompt_, 0, cache, false);
    SamplingParams sp;
    sp.temperature = 1.0f;
    std::vector<float> p;
    ComputeProbs(logits, sp, p);
    p_ = ToDouble(p);
  }
  // Returns {chi-square, df} of the first token over `runs` seeds. A tree shape makes
  // the draft propose token trees (of at most 16 nodes).
  std::pair<double, int> Run(const ModelDraft& draft, AcceptRule rule, int runs, const TreeShape& tree = {}) {
    std::vector<int> counts(p_.size());
    DecoderOptions o;
    o.kind = DecoderKind::Speculative;
    o.k = tree.is_tree() ? 16 : 4;
    o.draft = DraftSpec::Make(TargetDraft{}, DraftTree::Of(tree.branching, tree.budget));
    o.max_new_tokens = 5;  // the first step drafts K = 4 tokens
    o.stop_at_eos = false;
    o.sampling.temperature = 1.0f;
    for (int s = 0; s < runs; ++s) {
      o.sampling.seed = 1000 + s;
      auto dec = MakeSpeculativeDecoder(target_, draft, o, rule);
      GenerationResult r = dec->Generate(prompt_);
      if (!tree.is_tree()) {
        EXPECT_EQ(r.stats.k_per_step.at(0), 4);
      }
      ++counts[r.tokens.at(0)];
    }
    auto res = ChiSquare(counts, p_);
    std::printf("  draft %s, rule %s: chi2 %.1f, df %d, critical(0.1%%) %.1f\n", draft.name.c_str(),
                rule == AcceptRule::Exact ? "exact" : "always-accept", res.first, res.second, Critical(res.second));
    return res;
  }
  LoadedModel target_;
  std::vector<int> prompt_{1, 17, 42, 99};
  std::vector<double> p_;
};

TEST_F(EndToEnd, SpeculativeSamplingMatchesTargetDistribution) {
  // The target must not be nearly deterministic, or the test would prove nothing.
  EXPECT_LT(*std::max_element(p_.begin(), p_.end()), 0.9);
  const ModelDraft other{std::make_shared<const Model>(Sharpened(2)), 0, "seed-2"};
  auto [stat, df] = Run(other, AcceptRule::Exact, 4000);
  EXPECT_GE(df, 5);
  EXPECT_LT(stat, Critical(df)) << "df " << df;
  const ModelDraft early{target_.model, 1, "early-exit-1"};
  auto [stat2, df2] = Run(early, AcceptRule::Exact, 4000);
  EXPECT_LT(stat2, Critical(df2)) << "df " << df2;
}

TEST_F(EndToEnd, QuantizedDraftMatchesTargetDistribution) {
  const ModelDraft q4{std::make_shared<const Model>(QuantizeModel(*target_.model, QType::Q4_0)), 0, "q4_0"};
  auto [stat, df] = Run(q4, AcceptRule::Exact, 4000);
  EXPECT_LT(stat, Critical(df)) << "df " << df;
}

// Token trees: SpecInfer's multi-step speculative sampling over siblings drawn i.i.d.
// from the draft (static tree in sampling mode), and the one-hot recursive rule for a
// dynamic tree (deterministic top-k candidates).
TEST_F(EndToEnd, TreeSamplingMatchesTargetDistribution) {
  const ModelDraft other{std::make_shared<const Model>(Sharpened(2)), 0, "seed-2"};
  const ModelDraft q4{std::make_shared<const Model>(QuantizeModel(*target_.model, QType::Q4_0)), 0, "q4_0"};
  for (const ModelDraft* d : {&other, &q4})
    for (const TreeShape& t : {TreeShape{{3, 2}, 0}, TreeShape{{}, 8}}) {
      auto [stat, df] = Run(*d, AcceptRule::Exact, 4000, t);
      EXPECT_GE(df, 5);
      EXPECT_LT(stat, Critical(df)) << d->name << " df " << df;
    }
  auto [stat, df] = Run(other, AcceptRule::AlwaysAccept, 4000, TreeShape{{3, 2}, 0});
  EXPECT_GT(stat, Critical(df)) << "df " << df;
}

// The tree rule at one node, for i.i.d. siblings with q and for distinct one-hot
// siblings: the emitted token follows p; always-accept does not.
TEST(TreeSampling, SiblingRuleReproducesTargetDistribution) {
  const int vocab = 6, m = 3;
  const auto [p_logits, sp, p, q] = SmallPQ();
  std::vector<float> rows;  // [m+1][vocab]
  for (int i = 0; i <= m; ++i) rows.insert(rows.end(), p_logits.begin(), p_logits.end());
  const std::vector<int> parents(m, -1);
  std::vector<float> qs;  // [m][vocab]
  for (int i = 0; i < m; ++i) qs.insert(qs.end(), q.begin(), q.end());
  for (bool one_hot : {false, true})
    for (AcceptRule rule : {AcceptRule::Exact, AcceptRule::AlwaysAccept}) {
      std::vector<int> counts(vocab);
      Rng rng(7);
      for (int i = 0; i < 30000; ++i) {
        std::vector<int> draft(m);
        // One-hot: the draft's three most likely tokens, as a top-k tree proposes them.
        for (int j = 0; j < m; ++j) draft[j] = one_hot ? std::vector<int>{0, 2, 3}[j] : SampleFromProbs(q, rng);
        const Verdict v = VerifySampling(DraftView{draft, parents, one_hot ? std::span<const float>() : qs}, rows,
                                         vocab, sp, rng, rule);
        ++counts[v.n_accepted ? draft[v.path[0]] : v.next];
      }
      auto [stat, df] = ChiSquare(counts, ToDouble(p));
      if (rule == AcceptRule::Exact) {
        EXPECT_LT(stat, Critical(df)) << (one_hot ? "one-hot" : "iid");
      } else
        EXPECT_GT(stat, Critical(df)) << (one_hot ? "one-hot" : "iid");
    }
}

TEST_F(EndToEnd, BrokenAcceptanceRuleIsDetected) {
  const ModelDraft other{std::make_shared<const Model>(Sharpened(2)), 0, "seed-2"};
  auto [stat, df] = Run(other, AcceptRule::AlwaysAccept, 4000);
  EXPECT_GT(stat, Critical(df)) << "df " << df;
}

}  // namespace
}  // namespace specsweep

namespace specsweep {
namespace {

// VerifySamplingOneHot is VerifySampling with q one-hot at each draft token: same
// verdict and same random draws, for every draft token including the target's argmax.
TEST(LookupSampling, OneHotRuleEqualsGeneralRuleWithOneHotQ) {
  const int vocab = 6, k = 3;
  const std::vector<float> row{1.0f, 2.0f, 0.5f, -1.0f, 0.0f, 1.5f};
  std::vector<float> logits;  // [K+1][vocab]
  for (int i = 0; i <= k; ++i) logits.insert(logits.end(), row.begin(), row.end());
  SamplingParams sp;
  sp.temperature = 0.8f;
  for (int d = 0; d < vocab; ++d) {
    const std::vector<int> draft{d, (d + 1) % vocab, 1};
    std::vector<float> q(static_cast<size_t>(k) * vocab, 0.0f);  // [K][vocab] one-hot
    for (int i = 0; i < k; ++i) q[static_cast<size_t>(i) * vocab + draft[i]] = 1.0f;
    for (uint64_t seed = 0; seed < 200; ++seed) {
      Rng a(seed), b(seed);
      const Verdict x = VerifySamplingOneHot(draft, logits, vocab, sp, a);
      const Verdict y = VerifySampling(draft, q, logits, vocab, sp, b);
      ASSERT_EQ(x.n_accepted, y.n_accepted) << "d " << d << " seed " << seed;
      ASSERT_EQ(x.next, y.next) << "d " << d << " seed " << seed;
      ASSERT_EQ(a.Uniform(), b.Uniform());  // same number of draws consumed
    }
  }
}

// End to end with the prompt-lookup draft: a prompt whose last bigram recurs, so the
// first step proposes [x, c, ...] deterministically. The first two emitted tokens must
// follow the target's joint p(t1) p(t2 | t1); always-accept must be detected.
class LookupEndToEnd : public EndToEnd {
 protected:
  // Joint of (t1, t2) as a flat [vocab * vocab] vector, from target forwards.
  std::vector<double> Joint(const std::vector<int>& prompt) {
    const Model& m = *target_.model;
    const int vocab = m.config.vocab_size;
    SamplingParams sp;
    sp.temperature = 1.0f;
    std::vector<float> p1, p2;
    KVCache c1(m.config);
    ComputeProbs(Forward(testing::Serial(), m, prompt, 0, c1, false), sp, p1);
    std::vector<double> joint(static_cast<size_t>(vocab) * vocab, 0.0);
    for (int t1 = 0; t1 < vocab; ++t1) {
      std::vector<int> ext = prompt;
      ext.push_back(t1);
      KVCache c2(m.config);
      ComputeProbs(Forward(testing::Serial(), m, ext, 0, c2, false), sp, p2);
      for (int t2 = 0; t2 < vocab; ++t2) joint[static_cast<size_t>(t1) * vocab + t2] = double(p1[t1]) * p2[t2];
    }
    return joint;
  }
  // tree_budget > 0: the lookup tree (every continuation) of that many nodes, K = 4.
  std::pair<double, int> RunLookup(const std::vector<int>& prompt, const std::vector<double>& joint, AcceptRule rule,
                                   int runs, int64_t* accepted_at_2, int tree_budget = 0) {
    const int k = tree_budget ? 4 : 2;
    std::vector<int64_t> accepted;
    auto res =
        RunDraftFree(prompt, joint, rule, runs, accepted, k, k, [&] { return MakeLookupDrafter(2, 2, tree_budget); });
    if (accepted.size() > 1) *accepted_at_2 += accepted[1];
    return res;
  }
  // The first two tokens of `runs` seeded generations through a drafter without a model
  // (K = k; the first step drafts first_k, unchecked when -1): {chi-square, df} against
  // `joint`; `accepted` sums the runs' accepted_at_pos.
  std::pair<double, int> RunDraftFree(const std::vector<int>& prompt, const std::vector<double>& joint, AcceptRule rule,
                                      int runs, std::vector<int64_t>& accepted, int k, int first_k,
                                      const std::function<std::unique_ptr<Drafter>()>& make) {
    const int vocab = target_.model->config.vocab_size;
    std::vector<int> counts(joint.size());
    DecoderOptions o;
    o.kind = DecoderKind::Speculative;
    o.k = k;
    o.max_new_tokens = k + 1;  // the first step may draft K tokens
    o.stop_at_eos = false;
    o.sampling.temperature = 1.0f;
    std::unique_ptr<Drafter> probe = make();
    for (int s = 0; s < runs; ++s) {
      o.sampling.seed = 5000 + s;
      auto dec = MakeSpeculativeDecoder(target_, make(), o, rule);
      GenerationResult r = dec->Generate(prompt);
      if (first_k >= 0) {
        EXPECT_EQ(r.stats.k_per_step.at(0), first_k);
      }
      accepted.resize(std::max(accepted.size(), r.stats.accepted_at_pos.size()));
      for (size_t i = 0; i < r.stats.accepted_at_pos.size(); ++i) accepted[i] += r.stats.accepted_at_pos[i];
      ++counts[static_cast<size_t>(r.tokens.at(0)) * vocab + r.tokens.at(1)];
    }
    auto res = ChiSquare(counts, joint);
    std::printf("  %s, rule %s: chi2 %.1f, df %d, critical(0.1%%) %.1f\n", probe->name().c_str(),
                rule == AcceptRule::Exact ? "exact" : "always-accept", res.first, res.second, Critical(res.second));
    return res;
  }
  // [1, a, b, x, c, a, b]: lookup (n = 2) proposes x, c. x is the token the target
  // likes most there, so acceptance and rejection both happen often.
  std::vector<int> LookupPrompt() {
    const Model& m = *target_.model;
    const int a = 17, b = 42, c = 99;
    int best = 3;
    float best_p = -1.0f;
    SamplingParams sp;
    sp.temperature = 1.0f;
    std::vector<float> p;
    for (int x = 3; x < m.config.vocab_size; ++x) {
      const std::vector<int> prompt{1, a, b, x, c, a, b};
      KVCache cache(m.config);
      ComputeProbs(Forward(testing::Serial(), m, prompt, 0, cache, false), sp, p);
      if (p[x] > best_p) best_p = p[x], best = x;
    }
    return {1, a, b, best, c, a, b};
  }
};

TEST_F(LookupEndToEnd, LookupSamplingMatchesTargetDistribution) {
  const std::vector<int> prompt = LookupPrompt();
  ASSERT_EQ(LookupProposal(prompt, 2, 2, 2), (std::vector<int>{prompt[3], prompt[4]}));
  const std::vector<double> joint = Joint(prompt);
  const int vocab = target_.model->config.vocab_size;
  const double p_x = std::accumulate(joint.begin() + prompt[3] * vocab, joint.begin() + (prompt[3] + 1) * vocab, 0.0);
  EXPECT_GT(p_x, 0.1);  // the draft token is accepted often...
  EXPECT_LT(p_x, 0.9);  // ...and rejected often
  int64_t acc2 = 0;
  auto [stat, df] = RunLookup(prompt, joint, AcceptRule::Exact, 12000, &acc2);
  EXPECT_GE(df, 5);
  EXPECT_LT(stat, Critical(df)) << "df " << df;
  EXPECT_GT(acc2, 0);  // the second position was verified too
}

TEST_F(LookupEndToEnd, BrokenLookupAcceptanceIsDetected) {
  const std::vector<int> prompt = LookupPrompt();
  int64_t acc2 = 0;
  auto [stat, df] = RunLookup(prompt, Joint(prompt), AcceptRule::AlwaysAccept, 6000, &acc2);
  EXPECT_GT(stat, Critical(df)) << "df " << df;
}

// The lookup tree: "a b" was followed by x then by y, so the first step proposes the
// siblings y and x, each followed by c; the first two tokens follow the target.
TEST_F(LookupEndToEnd, LookupTreeSamplingMatchesTargetDistribution) {
  const std::vector<int> chain = LookupPrompt();
  const int x = chain[3], y = x == 50 ? 51 : 50, c = chain[4], a = chain[1], b = chain[2];
  const std::vector<int> prompt{1, a, b, x, c, a, b, y, c, a, b};
  DraftBlock tree;
  LookupTree(prompt, 4, 2, 2, tree);
  ASSERT_EQ(tree.tokens, (std::vector<int>{y, x, c, c}));
  ASSERT_EQ(tree.parents, (std::vector<int>{-1, -1, 0, 1}));
  int64_t acc2 = 0;
  auto [stat, df] = RunLookup(prompt, Joint(prompt), AcceptRule::Exact, 12000, &acc2, 4);
  EXPECT_GE(df, 5);
  EXPECT_LT(stat, Critical(df)) << "df " << df;  // (c rarely follows here: depth 2 is seldom accepted)
  auto [bad, bad_df] = RunLookup(prompt, Joint(prompt), AcceptRule::AlwaysAccept, 6000, &acc2, 4);
  EXPECT_GT(bad, Critical(bad_df)) << "df " << bad_df;
}

// Token recycling: its table is empty before the first verification, which fills it
// with the target's ranking after the prompt's last token L; when t1 = L the second
// step verifies a tree of those candidates (one-hot siblings, deeper where a candidate
// is L again). L is the token the target most likely repeats, so that happens often.
TEST_F(LookupEndToEnd, RecyclingTreeSamplingMatchesTargetDistribution) {
  const Model& m = *target_.model;
  SamplingParams sp;
  sp.temperature = 1.0f;
  std::vector<float> p;
  std::vector<int> prompt;
  float best = -1.0f;
  for (int l = 3; l < m.config.vocab_size; ++l) {
    const std::vector<int> cand{1, 17, 42, l};
    KVCache cache(m.config);
    ComputeProbs(Forward(testing::Serial(), m, cand, 0, cache, false), sp, p);
    if (p[l] > best) best = p[l], prompt = cand;
  }
  EXPECT_GT(best, 0.2);  // the tree is verified in a good share of the runs
  const std::vector<double> joint = Joint(prompt);
  auto make = [] { return MakeRecyclingDrafter({4, 2, 2, 1}); };
  std::vector<int64_t> accepted;
  auto [stat, df] = RunDraftFree(prompt, joint, AcceptRule::Exact, 12000, accepted, 8, 0, make);
  EXPECT_GE(df, 5);
  EXPECT_LT(stat, Critical(df)) << "df " << df;
  ASSERT_FALSE(accepted.empty());  // the second step's trees had nodes accepted
  std::printf("  P(t1 = L) %.2f; runs whose tree accepted a node: %lld of 12000\n", best,
              static_cast<long long>(accepted[0]));
  EXPECT_GT(accepted[0], 0);
  std::vector<int64_t> bad_accepted;
  auto [bad, bad_df] = RunDraftFree(prompt, joint, AcceptRule::AlwaysAccept, 6000, bad_accepted, 8, 0, make);
  EXPECT_GT(bad, Critical(bad_df)) << "df " << bad_df;
}

}  // namespace
}  // namespace specsweep

namespace specsweep {
namespace {

// Lookahead and REST trees in sampling mode (one-hot candidates): the first two tokens
// follow the target's joint, and always-accept is detected. Lookahead's first step
// verifies its Jacobi window (prompt tokens), the second also the pool's n-grams; REST
// retrieves two continuations of "a b" (x c and y c) as sibling branches.
TEST_F(LookupEndToEnd, LookaheadAndRestSamplingMatchTargetDistribution) {
  const std::vector<int> chain = LookupPrompt();
  const int x = chain[3], y = x == 50 ? 51 : 50, c = chain[4], a = chain[1], b = chain[2];
  const std::vector<int> prompt{1, a, b, x, x, c, a, b};
  const std::vector<double> joint = Joint(prompt);
  auto lookahead = [] { return MakeLookaheadDrafter(4, 3, 4); };
  const std::vector<int> corpus{a, b, y, c, -1, a, b, x, c, -1};
  auto rest = [&] { return MakeRestDrafter(corpus, 6, "test"); };
  for (auto& [name, make, k] : {std::tuple{"lookahead", std::function<std::unique_ptr<Drafter>()>(lookahead), 11},
                                std::tuple{"rest", std::function<std::unique_ptr<Drafter>()>(rest), 6}}) {
    std::vector<int64_t> at_pos, bad_at_pos;
    auto [stat, df] = RunDraftFree(prompt, joint, AcceptRule::Exact, 12000, at_pos, k, -1, make);
    const int64_t accepted = std::accumulate(at_pos.begin(), at_pos.end(), int64_t{0});
    std::printf("  %s: %lld draft tokens accepted in the runs\n", name, static_cast<long long>(accepted));
    EXPECT_GT(accepted, 0) << name;  // the draft took part
    EXPECT_GE(df, 5) << name;
    EXPECT_LT(stat, Critical(df)) << name << " df " << df;
    auto [bad, bad_df] = RunDraftFree(prompt, joint, AcceptRule::AlwaysAccept, 6000, bad_at_pos, k, -1, make);
    EXPECT_GT(bad, Critical(bad_df)) << name << " df " << bad_df;
  }
}

}  // namespace
}  // namespace specsweep
