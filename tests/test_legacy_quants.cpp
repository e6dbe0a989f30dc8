// Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS: block layouts against ggml's dequantization loops,
// quantizers byte-identical to llama-quantize on the fixtures, llama.cpp's fallback rule,
// every kernel family against the scalar reference, the llama.cpp fixtures of
// ../shared/fixtures/gguf-types (dequantization sha256 of every tensor, greedy ids), and
// lossless speculative decoding with drafts in these types.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "decoders/decoder.h"
#include "models/gguf.h"
#include "models/synthetic.h"
#include "quant/blocks_legacy.h"
#include "quant/fp16.h"
#include "quant/legacy_quants.h"
#include "quant/matmul.h"
#include "quant/packed.h"
#include "quant/qmatrix.h"
#include "tests/gguf_fixture.h"
#include "tests/kernel_checks.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

constexpr QType kTypes[] = {QType::Q4_1, QType::Q5_0, QType::Q5_1, QType::IQ4_NL, QType::IQ4_XS};

// ---- layouts: ggml's dequantization loops, transcribed as ggml writes them ----------

std::vector<float> GgmlLoop(QType t, const uint8_t* blk) {
  std::vector<float> y(BlockSize(t));
  auto qh32 = [](const uint8_t* p) {
    uint32_t h;
    std::memcpy(&h, p, 4);
    return h;
  };
  switch (t) {
    case QType::Q4_1: {
      const auto& x = *reinterpret_cast<const BlockQ4_1*>(blk);
      const float d = F16ToF32(x.d), m = F16ToF32(x.m);
      for (int j = 0; j < 16; ++j) {
        y[j] = (x.qs[j] & 0x0F) * d + m;
        y[j + 16] = (x.qs[j] >> 4) * d + m;
      }
      break;
    }
    case QType::Q5_0:
    case QType::Q5_1: {
      const bool one = t == QType::Q5_1;
      const auto& x0 = *reinterpret_cast<const BlockQ5_0*>(blk);
      const auto& x1 = *reinterpret_cast<const BlockQ5_1*>(blk);
      const float d = F16ToF32(one ? x1.d : x0.d), m = one ? F16ToF32(x1.m) : 0.0f;
      const uint32_t qh = qh32(one ? x1.qh : x0.qh);
      const uint8_t* qs = one ? x1.qs : x0.qs;
      for (int j = 0; j < 16; ++j) {
        const uint8_t h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
        const int a = ((qs[j] & 0x0F) | h0) - (one ? 0 : 16), b = ((qs[j] >> 4) | h1) - (one ? 0 : 16);
        y[j] = one ? a * d + m : a * d;
        y[j + 16] = one ? b * d + m : b * d;
      }
      break;
    }
    case QType::IQ4_NL: {
      const auto& x = *reinterpret_cast<const BlockIQ4_NL*>(blk);
      const float d = F16ToF32(x.d);
      for (int j = 0; j < 16; ++j) {
        y[j] = d * kIq4nlValues[x.qs[j] & 0x0F];
        y[j + 16] = d * kIq4nlValues[x.qs[j] >> 4];
      }
      break;
    }
    case QType::IQ4_XS: {
      const auto& x = *reinterpret_cast<const BlockIQ4_XS*>(blk);
      const float d = F16ToF32(x.d);
      for (int ib = 0; ib < 8; ++ib) {
        const int ls = ((x.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((x.scales_h >> 2 * ib) & 3) << 4);
        const float dl = d * (ls - 32);
        for (int j = 0; j < 16; ++j) {
          y[32 * ib + j] = dl * kIq4nlValues[x.qs[16 * ib + j] & 0xf];
          y[32 * ib + j + 16] = dl * kIq4nlValues[x.qs[16 * ib + j] >> 4];
        }
      }
      break;
    }
    default: ADD_FAILURE();
  }
  return y;
}

// Random block bytes with finite, moderate f16 scales (and mins).
std::vector<uint8_t> RandomBlocks(QType t, int nblocks, uint64_t seed) {
  return HasMin(t) ? testing_kernels::RandomBlocks(t, nblocks, seed, -2e-3f, 2e-3f, {0, 2})
                   : testing_kernels::RandomBlocks(t, nblocks, seed, -2e-3f, 2e-3f, {0});
}

QMatrix RandomMatrix(QType t, int rows, int cols, uint64_t seed) {
  QMatrix m = MakeQMatrix(t, rows, cols);
  auto bytes = RandomBlocks(t, int(m.data.size() / BlockBytes(t)), seed);
  std::memcpy(m.data.data(), bytes.data(), bytes.size());
  return m;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(LegacyLayout, DequantizationMatchesGgmlLoops) {
  for (QType t : kTypes) {
    const int nb = 64, per_row = 512 / BlockSize(t);
    auto bytes = RandomBlocks(t, nb, 7 + int(t));
    QMatrix m = MakeQMatrix(t, nb / per_row, 512);
    ASSERT_EQ(m.data.size(), bytes.size());
    std::memcpy(m.data.data(), bytes.data(), bytes.size());
    std::vector<float> want;
    for (int k = 0; k < nb; ++k) {
      auto v = GgmlLoop(t, bytes.data() + k * BlockBytes(t));
      want.insert(want.end(), v.begin(), v.end());
    }
    EXPECT_TRUE(SameBits(Dequantize(m), want)) << QTypeName(t);
  }
}

TEST(LegacyLayout, NamesSizesAndGgmlIds) {
  EXPECT_EQ(ParseQType("IQ4_NL"), QType::IQ4_NL);
  EXPECT_EQ(ParseQType("q5_1"), QType::Q5_1);
  EXPECT_EQ(BlockSize(QType::IQ4_XS), 256);
  EXPECT_EQ(BlockBytes(QType::Q5_0), 22u);
  const std::pair<QType, uint32_t> ids[] = {{QType::Q4_1, 3},
                                            {QType::Q5_0, 6},
                                            {QType::Q5_1, 7},
                                            {QType::IQ4_NL, 20},
                                            {QType::IQ4_XS, 23}};
  for (auto [t, id] : ids) {
    EXPECT_EQ(static_cast<uint32_t>(ToGgmlType(t, "test")), id);
    QType back;
    ASSERT_TRUE(FromGgmlType(id, &back));
    EXPECT_EQ(back, t);
  }
  QType none;
  EXPECT_FALSE(FromGgmlType(16, &none));  // IQ2_XXS
  for (QType t : kTypes) EXPECT_TRUE(CanQuantizeTo(t));
  EXPECT_FALSE(CanQuantizeTo(QType::Q2_K));
}

// ---- llama.cpp's fallback for rows K-quants cannot cover ---------------------------

// A 896-wide model (Qwen2.5-0.5B's width) quantized to K-quants holds llama.cpp's
// fallback types, and MatrixTypeCounts reports them.
TEST(LegacyFallback, KQuantsOnA896WideModelUseLlamaCppsTable) {
  ModelConfig c = TinyTestConfig();
  c.dim = 896, c.hidden_dim = 1152, c.n_heads = 14, c.n_kv_heads = 2, c.n_layers = 1;
  const Model f32 = MakeSyntheticModel(c, 5);
  const std::pair<QType, QType> table[] = {{QType::Q4_K, QType::Q5_0},
                                           {QType::Q5_K, QType::Q5_1},
                                           {QType::Q6_K, QType::Q8_0},
                                           {QType::IQ4_XS, QType::IQ4_NL}};
  for (auto [asked, stored] : table) {
    const Model q = QuantizeModel(f32, asked);
    // 7 layer matrices + output; the gathered embedding is not counted
    EXPECT_EQ(MatrixTypeCounts(q), (std::map<std::string, int>{{std::string(QTypeName(stored)), 8}}))
        << QTypeName(asked);
  }
  EXPECT_EQ(DescribeTypeCounts(QuantizeModel(f32, QType::Q4_K)), "q5_0 x8");
}

// ---- quantizers: byte-identical to llama-quantize ------------------------------------

// ../kquants/synth-F32.gguf quantized here, tensor by tensor, equals the tensors of
// synth-<T>-pure.gguf that llama-quantize --pure made of it.
TEST(LegacyQuantize, ByteIdenticalToLlamaQuantize) {
  const std::string kq = testing_fixture::FixtureDir("kquants"), gt = testing_fixture::FixtureDir("gguf-types");
  if (kq.empty() || gt.empty()) GTEST_SKIP() << "../shared/fixtures not available";
  const std::string src = testing::ReadFile(kq + "/synth-F32.gguf");
  const GgufHeader hs = ParseGgufHeader(reinterpret_cast<const uint8_t*>(src.data()), src.size(), "synth-F32");
  for (const char* name : {"Q4_1", "Q5_0", "Q5_1", "IQ4_NL"}) {
    const std::string path = gt + "/synth-" + name + "-pure.gguf";
    const std::string dst = testing::ReadFile(path);
    const GgufHeader hd = ParseGgufHeader(reinterpret_cast<const uint8_t*>(dst.data()), dst.size(), path);
    const QType t = ParseQType(name);
    int matrices = 0;
    for (const auto& ti : hs.tensors) {
      if (ti.ne.size() != 2) continue;
      auto it = std::find_if(hd.tensors.begin(), hd.tensors.end(), [&](auto& u) { return u.name == ti.name; });
      ASSERT_NE(it, hd.tensors.end()) << ti.name;
      const int cols = int(ti.ne[0]), rows = int(ti.ne[1]);
      const QMatrix q =
          Quantize(reinterpret_cast<const float*>(src.data() + hs.data_offset + ti.offset), rows, cols, t);
      ASSERT_EQ(q.bytes(), it->bytes) << name << " " << ti.name;
      EXPECT_EQ(std::memcmp(q.data.data(), dst.data() + hd.data_offset + it->offset, it->bytes), 0)
          << name << " " << ti.name;
      ++matrices;
    }
    EXPECT_EQ(matrices, std::count_if(hd.tensors.begin(), hd.tensors.end(), [](auto& u) { return u.ne.size() == 2; }))
        << name;  // every matrix of the file compared
  }
}

TEST(LegacyQuantize, ErrorOrderedByBitsAndZeroBlocks) {
  const int rows = 16, cols = 512;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> g(0.0f, 0.02f);
  std::vector<float> w(size_t(rows) * cols);
  for (auto& x : w) x = g(rng);
  for (int c = 0; c < 256; ++c) w[c] = 0.0f;  // a zero super-block
  auto rmse = [&](QType t) {
    auto back = Dequantize(Quantize(w.data(), rows, cols, t));
    double s = 0;
    for (size_t k = 0; k < w.size(); ++k) s += double(back[k] - w[k]) * (back[k] - w[k]);
    for (int c = 0; c < 256; ++c) EXPECT_EQ(back[c], 0.0f) << QTypeName(t);
    return std::sqrt(s / w.size());
  };
  const double q40 = rmse(QType::Q4_0), q41 = rmse(QType::Q4_1), nl = rmse(QType::IQ4_NL), xs = rmse(QType::IQ4_XS);
  const double q50 = rmse(QType::Q5_0), q51 = rmse(QType::Q5_1), q80 = rmse(QType::Q8_0);
  EXPECT_LT(nl, q40);
  EXPECT_LT(xs, 1.2 * nl);
  EXPECT_LT(q50, q41);
  EXPECT_LT(q51, q50);
  EXPECT_LT(q80, q51);
  EXPECT_LT(q41, 0.1 * 0.02);
}

// ---- kernels: every family equals the scalar reference ------------------------------

using testing_kernels::Gaussian;

// kernel(W) on the n rows of X quantized by the scalar family (all of W's rows at once).
std::vector<float> RunKernel(RowsKernelFn kernel, const QMatrix& W, const std::vector<float>& X, int n) {
  QuantActs a;
  a.Reserve(n, ActsCols(W));
  for (int i = 0; i < n; ++i) QuantizeActsRow(ScalarKernels(), X.data() + size_t(i) * W.cols, W.cols, i, a);
  std::vector<float> y(size_t(n) * W.rows);
  kernel(W, 0, W.rows, nullptr, &a, n, y.data());
  return y;
}
std::vector<float> Reference(const QMatrix& W, const std::vector<float>& X, int n) {
  return RunKernel(LegacyRowsScalar(W.type), W, X, n);
}

TEST(LegacyKernels, ScalarReferenceApproximatesFloatProduct) {
  for (QType t : kTypes) {
    const QMatrix W = RandomMatrix(t, 24, 768, 5);
    const auto X = Gaussian(size_t(3) * W.cols, 9, 1.0f);
    testing_kernels::ExpectNearFloatProduct(W, X, 3, Reference(W, X, 3), 0.02);
  }
}

TEST(LegacyKernels, EveryFamilyBitIdenticalForAnyNAndThreads) {
  for (QType t : kTypes)
    for (int cols : {768, 288, 96}) {  // 288, 96: an odd block count (a lone last block)
      if (cols % BlockSize(t)) continue;
      const QMatrix W = RandomMatrix(t, cols == 768 ? 301 : 37, cols, 21 + cols);  // > 64 KB at 768: threads
      const auto X = Gaussian(size_t(9) * cols, 23, 1.0f);
      testing_kernels::ExpectEveryFamilyBitIdentical(W, X, 9, Reference(W, X, 9),
                                                     std::string(QTypeName(t)) + " cols " + std::to_string(cols));
    }
}

// The 16-row interleaved layout: bytes round-trip, values are the row layout's, and every
// family's packed kernel (the scalar one included) gives the row-layout reference's bits;
// 301 and 37 rows end in a partial group (37: fewer than 8 rows in its second half).
TEST(LegacyKernels, PackedLayoutRoundTripsAndEveryFamilyBitIdentical) {
  for (QType t : kTypes)
    for (int cols : {768, 288, 96}) {
      if (cols % BlockSize(t)) continue;
      const std::string label = std::string(QTypeName(t)) + " cols " + std::to_string(cols) + " packed";
      const QMatrix W = RandomMatrix(t, cols == 768 ? 301 : 37, cols, 41 + cols);
      const QMatrix P = packed::Pack(W);
      ASSERT_EQ(P.layout, Layout::kPacked16) << label;
      const QMatrix U = packed::Unpack(P);
      ASSERT_EQ(U.layout, Layout::kRows) << label;
      ASSERT_EQ(U.bytes(), W.bytes()) << label;
      EXPECT_EQ(std::memcmp(U.data.data(), W.data.data(), W.bytes()), 0) << label;
      EXPECT_TRUE(SameBits(Dequantize(P), Dequantize(W))) << label;
      for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"})
        if (const KernelFamily* k = FindKernelFamily(isa)) {
          EXPECT_EQ(PackFor(*k, W).layout, Layout::kPacked16) << isa;
        }
      const auto X = Gaussian(size_t(9) * cols, 43, 1.0f);
      const std::vector<float> want = Reference(W, X, 9);
      testing_kernels::ExpectEveryFamilyBitIdentical(P, X, 9, want, label);
      // avx512 has two instances of the Q5 and IQ4 kernels (the second where the CPU has
      // AVX512-VBMI and GFNI: vpermb, gf2p8affineqb): both.
      __builtin_cpu_init();
      const bool vbmi_gfni = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("gfni");
      if (FindKernelFamily("avx512"))
        for (bool vbmi : {false, true}) {
          if (!vbmi || vbmi_gfni) {
            EXPECT_TRUE(SameBits(RunKernel(LegacyPackedAvx512(t, vbmi), P, X, 9), want)) << label << " vbmi " << vbmi;
          }
        }
    }
}

// ---- llama.cpp fixtures ------------------------------------------------------------

class LegacyFixture : public testing_fixture::GgufFixtureTest {
  std::string Folder() const override { return "gguf-types"; }
};

TEST_P(LegacyFixture, EveryTensorDequantizesBitIdentically) {
  testing_fixture::ExpectDequantizesBitIdentically(gguf_, ref_, GetParam());
}

TEST_P(LegacyFixture, GreedyIdsMatchLlamaCpp) { testing_fixture::ExpectGreedyIdsMatch(gguf_, ref_, GetParam()); }

INSTANTIATE_TEST_SUITE_P(Files, LegacyFixture,
                         ::testing::Values("w896-Q4_K_M", "w896-Q5_K_M", "w896-Q6_K", "w896-Q4_1-pure",
                                           "w896-Q5_0-pure", "w896-Q5_1-pure", "w896-IQ4_NL-pure", "synth-Q4_1-pure",
                                           "synth-Q5_0-pure", "synth-Q5_1-pure", "synth-IQ4_NL-pure"),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// ---- lossless speculative decoding with drafts in these types -----------------------

TEST(LegacySpeculative, GreedyWithQ5AndIq4DraftsEqualsAutoregressive) {
  ModelConfig c = TinyTestConfig();
  c.dim = 256, c.hidden_dim = 512, c.n_layers = 2;
  const LoadedModel target{"synthetic", std::make_shared<const Model>(MakeSyntheticModel(c, 31)), nullptr};
  DecoderOptions ar;
  ar.max_new_tokens = 24;
  ar.stop_at_eos = false;
  auto ar_dec = MakeDecoder(target, ar);
  std::vector<std::vector<int>> prompts, expected;
  for (int p = 0; p < 6; ++p) {
    prompts.push_back({c.bos_id, 5 + p, 17 + 3 * p, 42, 7 * p + 9});
    expected.push_back(ar_dec->Generate(prompts.back()).tokens);
    ASSERT_EQ(expected.back().size(), 24u);
  }
  for (QType t : {QType::Q5_0, QType::Q5_1, QType::IQ4_NL}) {
    int64_t accepted = 0;
    for (int k : {1, 4}) {
      DecoderOptions o = ar;
      o.kind = DecoderKind::Speculative;
      o.k = k;
      o.draft = DraftSpec::Make(TargetDraft{0, t});
      auto dec = MakeDecoder(target, o);
      for (size_t p = 0; p < prompts.size(); ++p) {
        GenerationResult r = dec->Generate(prompts[p]);
        EXPECT_EQ(r.tokens, expected[p]) << QTypeName(t) << " k " << k << " prompt " << p;
        accepted += r.stats.accepted;
      }
    }
    EXPECT_GT(accepted, 0) << QTypeName(t);  // the draft is the target quantized: it agrees often
  }
}

}  // namespace
}  // namespace specsweep
