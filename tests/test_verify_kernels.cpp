// Verification-sized calls (n = 2..17 activation rows) of the packed Q8_0/Q4_0 kernels:
// every family gives the scalar reference's bits whatever the number of columns per pass
// (one or two integer chains, n > 8 split into passes), and the per-call offset terms the
// kernels broadcast from QuantActs are the block sums' multiples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/kernels.h"
#include "quant/matmul.h"
#include "quant/qmatrix.h"

namespace specsweep {
namespace {

std::vector<const KernelFamily*> Families() {
  std::vector<const KernelFamily*> v;
  for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"})
    if (const KernelFamily* k = FindKernelFamily(isa)) v.push_back(k);
  return v;
}

// Values of mixed magnitude per 32-wide block, some blocks all zero (dx = 0) and some
// saturating one sign, so offset terms and scales vary from block to block.
std::vector<float> Values(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) {
    const size_t block = i / 32;
    const float scale = block % 7 == 3 ? 0.0f : block % 5 == 1 ? 1e-3f : block % 3 == 2 ? 40.0f : 1.0f;
    const float x = u(rng);
    v[i] = scale * (block % 11 == 4 ? std::fabs(x) : x);
  }
  return v;
}

struct Shape {
  int rows, cols;
};
// Row counts: one group, partial groups, several; columns: one block, odd block counts,
// a tail inside a block, more than one 32-block scale segment.
constexpr Shape kShapes[] = {{16, 32}, {1, 64}, {17, 96}, {33, 100}, {47, 1100}, {64, 2048}};

TEST(VerifyKernels, PackedQ8Q4BitIdenticalToScalarForEveryN) {
  const KernelFamily& ref = ScalarKernels();
  for (QType t : {QType::Q4_0, QType::Q8_0}) {
    for (Shape s : kShapes) {
      const std::vector<float> wf = Values(size_t(s.rows) * s.cols, 7 + s.rows);
      const QMatrix W = Quantize(wf.data(), s.rows, s.cols, t);
      const QMatrix W_ref = PackFor(ref, W);
      for (int n = 1; n <= 17; ++n) {
        const std::vector<float> x = Values(size_t(n) * s.cols, 100 + n);
        std::vector<float> y0(size_t(n) * s.rows), y1(y0.size());
        MatMulWith(ref, W_ref, x.data(), n, y0.data());
        for (const KernelFamily* k : Families()) {
          const QMatrix Wk = PackFor(*k, W);
          for (int threads : {1, 2}) {
            std::fill(y1.begin(), y1.end(), -1.0f);
            MatMulWith(*k, Wk, x.data(), n, y1.data(), threads);
            ASSERT_EQ(0, std::memcmp(y0.data(), y1.data(), 4 * y0.size()))
                << k->name << " " << QTypeName(t) << " " << s.rows << "x" << s.cols << " n " << n << " threads "
                << threads << (Wk.layout == Layout::kPacked16 ? " packed" : " rows");
          }
        }
      }
    }
  }
}

// The widest family runs these formats packed: the test above covers the packed kernels.
TEST(VerifyKernels, SimdFamiliesPackQ8Q4) {
  for (const KernelFamily* k : Families()) {
    if (std::string(k->name) == "scalar") continue;
    for (QType t : {QType::Q4_0, QType::Q8_0}) {
      const std::vector<float> wf = Values(size_t(16) * 64, 3);
      EXPECT_EQ(Layout::kPacked16, PackFor(*k, Quantize(wf.data(), 16, 64, t)).layout)
          << k->name << " " << QTypeName(t);
    }
  }
}

TEST(VerifyKernels, OffsetTermsAreBlockSumMultiples) {
  const int cols = 300, n = 3;
  const std::vector<float> x = Values(size_t(n) * cols, 5);
  QuantActs a;
  a.Reserve(n, 384);
  for (int i = 0; i < n; ++i) QuantizeActsRow(ScalarKernels(), x.data() + size_t(i) * cols, cols, i, a);
  for (int i = 0; i < n; ++i)
    for (int b = 0; b < a.cols / 32; ++b) {
      int32_t s = 0;
      for (int j = 0; j < 32; ++j) s += a.Q(i)[32 * b + j];
      ASSERT_EQ(-8 * s, a.BOff(i, 8)[b]) << "row " << i << " block " << b;
      ASSERT_EQ(-128 * s, a.BOff(i, 128)[b]) << "row " << i << " block " << b;
    }
}

}  // namespace
}  // namespace specsweep
