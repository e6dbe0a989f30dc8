// Checks shared by the kernel tests of the quantized types: random weights and
// activations, a reference product against the float product of the dequantized weights,
// and every kernel family against it bit for bit.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "quant/fp16.h"
#include "quant/matmul.h"
#include "quant/qmatrix.h"

namespace specsweep::testing_kernels {

// n normal values (mean 0, standard deviation `scale`).
inline std::vector<float> Gaussian(size_t n, uint64_t seed, float scale = 0.02f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.0f, scale);
  std::vector<float> w(n);
  for (auto& x : w) x = g(rng);
  return w;
}

// Random bytes for `nblocks` blocks of type t whose f16 fields at `f16_offsets` (scales,
// mins) are drawn uniformly from [lo, hi): every value finite and moderate.
inline std::vector<uint8_t> RandomBlocks(QType t, int nblocks, uint64_t seed, float lo, float hi,
                                         std::initializer_list<size_t> f16_offsets) {
  std::mt19937_64 rng(seed);
  const size_t bb = BlockBytes(t);
  std::vector<uint8_t> bytes(bb * nblocks);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> u(lo, hi);
  for (int k = 0; k < nblocks; ++k)
    for (size_t off : f16_offsets) {
      const uint16_t h = F32ToF16(u(rng));
      std::memcpy(bytes.data() + bb * k + off, &h, 2);
    }
  return bytes;
}

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
// the first n rows of `want` ([max_n][W.rows]) bit for bit.
inline void ExpectEveryFamilyBitIdentical(const QMatrix& W, const std::vector<float>& X, int max_n,
                                          const std::vector<float>& want, const std::string& label) {
  for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"}) {
    Runtime rt;
    if (!ForceKernelIsa(rt.kernels, isa)) continue;
    for (int threads : {1, 2}) {
      rt.threads = threads;
      for (int n = 1; n <= max_n; ++n) {
        std::vector<float> y(size_t(n) * W.rows);
        MatMul(rt, W, X.data(), n, y.data());
        EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0)
            << label << " " << isa << " threads " << threads << " n " << n;
      }
    }
  }
}

}  // namespace specsweep::testing_kernels
