// K-quants: block layouts against ggml's dequantization loops, quantization quality, every
// kernel family against the scalar reference, and the llama.cpp fixtures in
// ../shared/fixtures/kquants (dequantization sha256 of every tensor, greedy ids).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "harness/store/results.h"
#include "harness/store/sha256.h"
#include "models/forward.h"
#include "models/gguf.h"
#include "models/kv_cache.h"
#include "base/error.h"
#include "models/loader.h"
#include "models/model.h"
#include "models/synthetic.h"
#include "models/tokenizer.h"
#include "quant/blocks_k.h"
#include "quant/fp16.h"
#include "quant/kquants.h"
#include "quant/matmul.h"
#include "quant/qmatrix.h"
#include "models/quant_error.h"
#include "tests/gguf_fixture.h"
#include "tests/kernel_checks.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

constexpr QType kKTypes[] = {QType::Q2_K, QType::Q3_K, QType::Q4_K, QType::Q5_K, QType::Q6_K};

// ---- layouts: ggml's dequantization loops, transcribed as ggml writes them ----------

// The 6-bit scale/min pair j of Q4_K/Q5_K, as ggml's get_scale_min_k4.
void ScaleMin(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

std::vector<float> GgmlLoop(QType t, const uint8_t* blk) {
  std::vector<float> out(256);
  float* y = out.data();
  switch (t) {
    case QType::Q2_K: {
      const auto& x = *reinterpret_cast<const BlockQ2_K*>(blk);
      const float d = F16ToF32(x.d), mn = F16ToF32(x.dmin);
      const uint8_t* q = x.qs;
      int is = 0;
      for (int n = 0; n < 256; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
          for (int half = 0; half < 2; ++half) {
            const uint8_t sc = x.scales[is++];
            const float dl = d * (sc & 0xF), ml = mn * (sc >> 4);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l + 16 * half] >> shift) & 3)) - ml;
          }
          shift += 2;
        }
        q += 32;
      }
      break;
    }
    case QType::Q3_K: {
      const auto& x = *reinterpret_cast<const BlockQ3_K*>(blk);
      uint32_t aux[4];
      std::memcpy(aux, x.scales, 12);
      const uint32_t tmp = aux[2], k1 = 0x03030303, k2 = 0x0f0f0f0f;
      aux[2] = ((aux[0] >> 4) & k2) | (((tmp >> 4) & k1) << 4);
      aux[3] = ((aux[1] >> 4) & k2) | (((tmp >> 6) & k1) << 4);
      aux[0] = (aux[0] & k2) | (((tmp >> 0) & k1) << 4);
      aux[1] = (aux[1] & k2) | (((tmp >> 2) & k1) << 4);
      const auto* scales = reinterpret_cast<const int8_t*>(aux);
      const float d_all = F16ToF32(x.d);
      const uint8_t* q = x.qs;
      uint8_t m = 1;
      int is = 0;
      for (int n = 0; n < 256; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
          for (int half = 0; half < 2; ++half) {
            const float dl = d_all * (scales[is++] - 32);
            for (int l = 16 * half; l < 16 * half + 16; ++l)
              *y++ = dl * ((int8_t)((q[l] >> shift) & 3) - ((x.hmask[l] & m) ? 0 : 4));
          }
          shift += 2;
          m <<= 1;
        }
        q += 32;
      }
      break;
    }
    case QType::Q4_K:
    case QType::Q5_K: {
      const auto& x4 = *reinterpret_cast<const BlockQ4_K*>(blk);
      const auto& x5 = *reinterpret_cast<const BlockQ5_K*>(blk);
      const bool five = t == QType::Q5_K;
      const uint8_t* q = five ? x5.qs : x4.qs;
      const float d = F16ToF32(x4.d), mn = F16ToF32(x4.dmin);
      uint8_t u1 = 1, u2 = 2;
      for (int j = 0, is = 0; j < 256; j += 64, is += 2) {
        uint8_t sc, m;
        ScaleMin(is, x4.scales, &sc, &m);
        const float d1 = d * sc, m1 = mn * m;
        ScaleMin(is + 1, x4.scales, &sc, &m);
        const float d2 = d * sc, m2 = mn * m;
        for (int l = 0; l < 32; ++l) *y++ = d1 * ((q[l] & 0xF) + (five && (x5.qh[l] & u1) ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * ((q[l] >> 4) + (five && (x5.qh[l] & u2) ? 16 : 0)) - m2;
        q += 32;
        u1 <<= 2;
        u2 <<= 2;
      }
      break;
    }
    case QType::Q6_K: {
      const auto& x = *reinterpret_cast<const BlockQ6_K*>(blk);
      const float d = F16ToF32(x.d);
      const uint8_t *ql = x.ql, *qh = x.qh;
      const int8_t* sc = x.scales;
      for (int n = 0; n < 256; n += 128) {
        for (int l = 0; l < 32; ++l) {
          const int is = l / 16;
          const int8_t q1 = (int8_t)((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
          const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
          const int8_t q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
          y[l + 0] = d * sc[is + 0] * q1;
          y[l + 32] = d * sc[is + 2] * q2;
          y[l + 64] = d * sc[is + 4] * q3;
          y[l + 96] = d * sc[is + 6] * q4;
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
      }
      break;
    }
    default: ADD_FAILURE();
  }
  return out;
}

// Random block bytes with finite, moderate f16 scales (at the type's d/dmin offsets).
std::vector<uint8_t> RandomBlocks(QType t, int nblocks, uint64_t seed) {
  auto with = [&](std::initializer_list<size_t> offsets) {
    return testing_kernels::RandomBlocks(t, nblocks, seed, 1e-4f, 2e-3f, offsets);
  };
  switch (t) {
    case QType::Q2_K: return with({offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)});
    case QType::Q3_K: return with({offsetof(BlockQ3_K, d)});
    case QType::Q4_K:
    case QType::Q5_K: return with({0, 2});
    case QType::Q6_K: return with({offsetof(BlockQ6_K, d)});
    default: return with({});
  }
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(KQuantLayout, DequantizationMatchesGgmlLoops) {
  for (QType t : kKTypes) {
    const int nb = 64;
    auto bytes = RandomBlocks(t, nb, 11 + int(t));
    QMatrix m = MakeQMatrix(t, 2, nb / 2 * 256);
    std::memcpy(m.data.data(), bytes.data(), bytes.size());
    std::vector<float> want;
    for (int k = 0; k < nb; ++k) {
      auto v = GgmlLoop(t, bytes.data() + k * BlockBytes(t));
      want.insert(want.end(), v.begin(), v.end());
    }
    EXPECT_TRUE(SameBits(Dequantize(m), want)) << QTypeName(t);
  }
}

TEST(KQuantLayout, NamesAndSizes) {
  EXPECT_EQ(ParseQType("Q4_K"), QType::Q4_K);
  EXPECT_EQ(ParseQType("q6_k"), QType::Q6_K);
  EXPECT_EQ(QTypeName(QType::Q2_K), "q2_k");
  for (QType t : kKTypes) EXPECT_EQ(BlockSize(t), 256);
  EXPECT_THROW(Quantize(std::vector<float>(256).data(), 1, 256, QType::Q2_K), Error);
}

// ---- quantization ---------------------------------------------------------------

using testing_kernels::Gaussian;

double Rmse(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) s += double(a[k] - b[k]) * (a[k] - b[k]);
  return std::sqrt(s / a.size());
}

TEST(KQuantQuantize, ErrorOrderedByBits) {
  const int rows = 64, cols = 512;
  auto w = Gaussian(size_t(rows) * cols, 3);
  w[5] = 0.3f;  // an outlier in one sub-block
  auto err = [&](QType t) { return Rmse(w, Dequantize(Quantize(w.data(), rows, cols, t))); };
  const double q40 = err(QType::Q4_0), q4k = err(QType::Q4_K), q5k = err(QType::Q5_K), q6k = err(QType::Q6_K);
  const double q80 = err(QType::Q8_0);
  EXPECT_LT(q4k, q40);
  EXPECT_LT(q5k, 0.6 * q4k);
  EXPECT_LT(q6k, 0.6 * q5k);
  EXPECT_LT(q80, q6k);
  EXPECT_LT(q4k, 0.1 * 0.02);  // well under the weights' spread
}

TEST(KQuantQuantize, PaddedColumnsAndConstantRows) {
  const int rows = 3, cols = 300;  // padded to 512
  std::vector<float> w(size_t(rows) * cols, 0.0f);
  for (int c = 0; c < cols; ++c) {
    w[c] = 0.01f;          // constant positive
    w[cols + c] = -0.02f;  // constant negative
    w[2 * cols + c] = 0.001f * (c % 17) - 0.008f;
  }
  for (QType t : {QType::Q4_K, QType::Q5_K, QType::Q6_K}) {
    auto back = Dequantize(Quantize(w.data(), rows, cols, t));
    EXPECT_LT(Rmse(w, back), 2e-4) << QTypeName(t);
  }
}

// ---- kernels: every family equals the scalar reference ------------------------------

QMatrix KMatrix(QType t, int rows, int cols, uint64_t seed) {
  if (CanQuantizeK(t)) {
    auto w = Gaussian(size_t(rows) * cols, seed);
    return Quantize(w.data(), rows, cols, t);
  }
  QMatrix m = MakeQMatrix(t, rows, cols);
  auto bytes = RandomBlocks(t, int(m.data.size() / BlockBytes(t)), seed);
  std::memcpy(m.data.data(), bytes.data(), bytes.size());
  return m;
}

std::vector<float> Reference(const QMatrix& W, const std::vector<float>& X, int n) {
  QuantActs a;
  a.ReserveK(n, W.cols_padded);
  for (int i = 0; i < n; ++i)
    QuantizeActsK(X.data() + size_t(i) * W.cols, W.cols, W.cols_padded, const_cast<int8_t*>(a.KQ(i)),
                  const_cast<float*>(a.KD(i)), const_cast<int16_t*>(a.KBSum(i)));
  std::vector<float> y(size_t(n) * W.rows);
  KQuantRowsScalar(W.type)(W, 0, W.rows, nullptr, &a, n, y.data());
  return y;
}

TEST(KQuantKernels, ScalarReferenceApproximatesFloatProduct) {
  for (QType t : kKTypes) {
    const QMatrix W = KMatrix(t, 40, 768, 5);
    const auto X = Gaussian(size_t(3) * W.cols, 9, 1.0f);
    testing_kernels::ExpectNearFloatProduct(W, X, 3, Reference(W, X, 3), 0.02);
  }
}

TEST(KQuantKernels, EveryFamilyBitIdenticalForAnyNAndThreads) {
  for (QType t : kKTypes)
    for (int cols : {768, 300}) {
      // > 64 KB: split over threads; an odd row count leaves the pairing kernels
      // (avx512: two rows per pass) a single last row.
      const QMatrix W = KMatrix(t, cols == 768 ? 300 : 301, cols, 21 + cols);
      const auto X = Gaussian(size_t(17) * cols, 23, 1.0f);  // 17: a second pass of 16 activation rows
      testing_kernels::ExpectEveryFamilyBitIdentical(W, X, 17, Reference(W, X, 17),
                                                     std::string(QTypeName(t)) + " cols " + std::to_string(cols));
    }
}

// ---- in-memory quantization and our own GGUF files ---------------------------------

// A synthetic model quantized to q4_k / q6_k in memory, written as GGUF and read back:
// the same bytes, the same logits, and batch logits equal to one-token steps.
TEST(KQuantModel, QuantizeWriteLoadGivesIdenticalLogits) {
  ModelConfig c = TinyTestConfig();
  c.dim = 256;
  c.hidden_dim = 512;
  const Model f32 = MakeSyntheticModel(c, 13);
  for (QType t : {QType::Q4_K, QType::Q6_K}) {
    const Model m = QuantizeModel(f32, t);
    ASSERT_EQ(m.layers[0].w1.type, t);
    auto tok = MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size));
    const std::string path = testing::TempDir() + "/k-" + std::string(QTypeName(t)) + ".gguf";
    for (const auto& w : WriteGguf(m, *tok, path)) EXPECT_EQ(w.note, "") << w.name;
    LoadedModel lm = LoadGguf(path);
    EXPECT_EQ(lm.model->layers[1].w2.type, t);
    const std::vector<int> tokens = {1, 17, 42, 99, 5};
    KVCache ca(c), cb(c), cc(c);
    auto a = Forward(testing::Serial(), m, tokens, 0, ca, true);
    const std::vector<float> la(a.begin(), a.end());
    auto b = Forward(testing::Serial(), *lm.model, tokens, 0, cb, true);
    EXPECT_EQ(std::memcmp(la.data(), b.data(), la.size() * sizeof(float)), 0) << QTypeName(t);
    for (size_t k = 0; k < tokens.size(); ++k) {  // one token at a time
      auto one = Forward(testing::Serial(), m, std::span<const int>(&tokens[k], 1), int(k), cc, true);
      EXPECT_EQ(std::memcmp(one.data(), la.data() + k * c.vocab_size, c.vocab_size * sizeof(float)), 0)
          << QTypeName(t) << " position " << k;
    }
  }
}

// ---- llama.cpp fixtures ------------------------------------------------------------

class KQuantFixture : public testing_fixture::GgufFixtureTest {
  std::string Folder() const override { return "kquants"; }
};

TEST_P(KQuantFixture, EveryTensorDequantizesBitIdentically) {
  testing_fixture::ExpectDequantizesBitIdentically(gguf_, ref_, GetParam());
}

TEST_P(KQuantFixture, GreedyIdsMatchLlamaCpp) {
  if (!ref_.contains("greedy")) GTEST_SKIP() << "no greedy ids in the ref";
  testing_fixture::ExpectGreedyIdsMatch(gguf_, ref_, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Files, KQuantFixture, ::testing::Values("F32", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace specsweep
