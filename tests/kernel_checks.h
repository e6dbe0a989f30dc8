// Checks shared by the kernel tests of the quantized types: a reference product against
// the float product of the dequantized weights, and every kernel family against it bit for bit.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "quant/matmul.h"
#include "quant/qmatrix.h"

namespace specsweep::testing_kernels {

// y[n][W.rows] within rel * sum |w x| (+ 1e-6) of the float product of Dequantize(W) and X[n][W.cols].
inline void ExpectNearFloatProduct(const QMatrix& W, const std::vector<float>& X, int n, const std::vector<float>& y,
                                   double rel) {
  const auto wf = Dequantize(W);
  for (int i = 0; i < n; ++i)
    for (int r = 0; r < W.rows; ++r) {
      double exact = 0, mag = 0;
      for (int c = 0; c < W.cols; ++c) {
        exact += double(wf[size_t(r) * W.cols + c]) * X[size_t(i) * W.cols + c];
        mag += std::fabs(double(wf[size_t(r) * W.cols + c]) * X[size_t(i) * W.cols + c]);
      }
      EXPECT_NEAR(y[size_t(i) * W.rows + r], exact, rel * mag + 1e-6) << QTypeName(W.type) << " r " << r;
    }
}

// MatMul under every kernel family this CPU has (forced), 1 and 2 threads, n = 1..max_n:
// the first n rows of `want` ([max_n][W.rows]) bit for bit. Restores the family and threads.
inline void ExpectEveryFamilyBitIdentical(const QMatrix& W, const std::vector<float>& X, int max_n,
                                          const std::vector<float>& want, const std::string& label) {
  const char* before = ActiveKernelIsa();
  for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"}) {
    if (!ForceKernelIsa(isa)) continue;
    for (int threads : {1, 2}) {
      SetNumThreads(threads);
      for (int n = 1; n <= max_n; ++n) {
        std::vector<float> y(size_t(n) * W.rows);
        MatMul(W, X.data(), n, y.data());
        EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0)
            << label << " " << isa << " threads " << threads << " n " << n;
      }
    }
  }
  ForceKernelIsa(before);
  SetNumThreads(0);
}

}  // namespace specsweep::testing_kernels
