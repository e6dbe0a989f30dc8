// Verification-sized products (n = 1..17 activation rows: decode, speculative verification,
// and a second pass of the 16-row kernels) of the K-quants on every kernel family this CPU
// has, against the scalar family bit for bit (MatMulWith, one thread). The weight rows
// include the extremes the integer paths must hold without saturating (Q6_K quants 0 and
// 63, Q4_K/Q5_K 15 and 31 against activations of +-127) and an odd row count, which
// leaves the row-pairing kernels a single last row.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "quant/kernels.h"
#include "quant/qmatrix.h"
#include "tests/kernel_checks.h"

namespace specsweep {
namespace {

using testing_kernels::Gaussian;

constexpr int kMaxN = 17;

// rows x cols weights: row 0 constant, row 1 alternating +-1 (every quant at an end of its
// range), row 2 a ramp, the rest normal.
std::vector<float> Weights(int rows, int cols, uint64_t seed) {
  std::vector<float> w = Gaussian(size_t(rows) * cols, seed);
  for (int c = 0; c < cols; ++c) {
    w[c] = 1.0f;
    if (rows > 1) w[size_t(cols) + c] = c % 2 ? 1.0f : -1.0f;
    if (rows > 2) w[size_t(2) * cols + c] = -1.0f + 2.0f * float(c) / float(cols);
  }
  return w;
}

// kMaxN activation rows: row 0 all -1 (every activation -127), row 1 alternating +-1, row 5
// zero (its blocks' scale is 0), the rest normal with per-row magnitudes from 1e-3 to 30.
std::vector<float> Activations(int cols, uint64_t seed) {
  std::vector<float> x = Gaussian(size_t(kMaxN) * cols, seed, 1.0f);
  for (int i = 2; i < kMaxN; ++i)
    for (int c = 0; c < cols; ++c) x[size_t(i) * cols + c] *= i % 3 == 0 ? 30.0f : i % 3 == 1 ? 1e-3f : 1.0f;
  for (int c = 0; c < cols; ++c) {
    x[c] = -1.0f;
    x[size_t(cols) + c] = c % 2 ? 1.0f : -1.0f;
    x[size_t(5) * cols + c] = 0.0f;
  }
  return x;
}

std::vector<float> Product(const KernelFamily& k, const QMatrix& W, const std::vector<float>& X, int n) {
  const QMatrix P = PackFor(k, W);
  std::vector<float> y(size_t(n) * W.rows);  // [n][rows]
  MatMulWith(k, P, X.data(), n, y.data());
  return y;
}

void ExpectFamiliesMatchScalar(QType t, int rows, int cols) {
  const QMatrix W = Quantize(Weights(rows, cols, 7 + rows).data(), rows, cols, t);
  const auto X = Activations(cols, 11 + cols);
  for (const char* isa : {"avx2", "avx2vnni", "avx512"}) {
    const KernelFamily* k = FindKernelFamily(isa);
    if (!k) continue;
    for (int n = 1; n <= kMaxN; ++n) {
      const auto want = Product(ScalarKernels(), W, X, n);
      const auto got = Product(*k, W, X, n);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << QTypeName(t) << " " << isa << " rows " << rows << " cols " << cols << " n " << n;
    }
  }
}

TEST(VerifyKQuants, EveryFamilyMatchesScalarForVerificationSizes) {
  ASSERT_NE(FindKernelFamily("scalar"), nullptr);
  for (QType t : {QType::Q4_K, QType::Q5_K, QType::Q6_K})
    for (int rows : {1, 3, 37}) ExpectFamiliesMatchScalar(t, rows, 768);
}

TEST(VerifyKQuants, PaddedColumnsAndOddRows) {
  for (QType t : {QType::Q4_K, QType::Q5_K, QType::Q6_K}) ExpectFamiliesMatchScalar(t, 5, 300);
}

}  // namespace
}  // namespace specsweep
