// Quantization formats and matrix kernels: formats against ggml's definitions, every
// SIMD family against the scalar oracle, and MatMul's determinism contract.
#include <gtest/gtest.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "quant/bandwidth.h"
#include "quant/blocks.h"
#include "quant/chunk_queue.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/matmul.h"
#include "quant/packed.h"
#include "quant/prefetch.h"
#include "models/quant_error.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

constexpr QType kAllTypes[] = {QType::F32,  QType::F16,    QType::BF16,   QType::Q8_0,
                               QType::Q4_0, QType::Q4_G64, QType::Q4_G128};
constexpr QType kQuantTypes[] = {QType::Q8_0, QType::Q4_0, QType::Q4_G64, QType::Q4_G128};
constexpr double kU = 1.0 / (1 << 24);  // f32 unit roundoff

// Value distributions used for weights and activations.
enum class Kind { kUniform, kTiny, kHuge, kNegative, kZeroBlocks, kMixedScales };

std::vector<float> Values(size_t count, Kind kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(count);  // [count]
  for (size_t i = 0; i < count; ++i) {
    float x = u(rng);
    switch (kind) {
      case Kind::kUniform: break;
      case Kind::kTiny: x *= 1e-30f; break;
      case Kind::kHuge: x *= 1e4f; break;  // Q4 scales stay below the f16 limit
      case Kind::kNegative: x = -std::fabs(x) - 0.01f; break;
      case Kind::kZeroBlocks: x = (i / 32) % 3 == 1 ? 0.0f : x; break;
      case Kind::kMixedScales: x *= std::pow(10.0f, static_cast<float>(static_cast<int>(i / 32 % 9) - 4)); break;
    }
    v[i] = x;
  }
  return v;
}

// ---- 16-bit floats ---------------------------------------------------------------

// F16C instructions as the hardware reference (compiled for F16C whatever the flags).
__attribute__((target("f16c"))) float HwF16ToF32(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t HwF32ToF16(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
bool HasF16c() { return __builtin_cpu_supports("f16c"); }

TEST(Fp16, AllHalvesMatchF16cAndRoundTrip) {
  if (!HasF16c()) GTEST_SKIP() << "no F16C";
  for (uint32_t h = 0; h < 65536; ++h) {
    const float ref = HwF16ToF32(static_cast<uint16_t>(h));
    const float got = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(got)) << h;
      continue;
    }
    ASSERT_EQ(F32Bits(got), F32Bits(ref)) << "half " << h;
    ASSERT_EQ(F32ToF16(got), h) << "round trip of half " << h;
  }
}

TEST(Fp16, RoundingMatchesF16c) {
  if (!HasF16c()) GTEST_SKIP() << "no F16C";
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns over the whole f32 range, plus ties between halves.
    float f = F32FromBits(rng());
    if (std::isnan(f)) continue;
    if (i % 4 == 0) f = F16ToF32(static_cast<uint16_t>(rng() & 0x7BFF)) * (1.0f + 0x1.0p-11f);
    const uint16_t ref = HwF32ToF16(f);
    ASSERT_EQ(F32ToF16(f), ref) << "f=" << f;
  }
  EXPECT_EQ(F32ToF16(65520.0f), 0x7C00);  // rounds up to inf
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
}

TEST(Bf16, RoundTripAndNearestEven) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = BF16ToF32(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToBF16(f), b);
  }
  EXPECT_EQ(F32ToBF16(F32FromBits(0x3F808000)), 0x3F80);  // tie, even stays
  EXPECT_EQ(F32ToBF16(F32FromBits(0x3F818000)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(F32ToBF16(F32FromBits(0x3F808001)), 0x3F81);
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(NAN))));
}

// ---- formats ---------------------------------------------------------------------

TEST(Formats, GeometryMatchesGgml) {
  EXPECT_EQ(BlockBytes(QType::Q8_0), sizeof(BlockQ8_0));
  EXPECT_EQ(BlockBytes(QType::Q4_0), sizeof(BlockQ4_0));
  EXPECT_EQ(BlockBytes(QType::Q4_G64), sizeof(BlockQ4_G64));
  EXPECT_EQ(BlockBytes(QType::Q4_G128), sizeof(BlockQ4_G128));
  QMatrix m = MakeQMatrix(QType::Q4_0, 3, 172);
  EXPECT_EQ(m.cols_padded, 192);
  EXPECT_EQ(m.row_bytes, 6u * 18);
  EXPECT_TRUE(m.padded());
  EXPECT_EQ(MakeQMatrix(QType::Q4_G128, 1, 172).cols_padded, 256);
  EXPECT_EQ(ParseQType("Q4_0"), QType::Q4_0);
  EXPECT_EQ(ParseQType("q5_k"), QType::Q5_K);  // K-quants: tests/test_kquants.cpp
  EXPECT_THROW(ParseQType("q3_1", "--quant"), Error);
}

// The traits table (quant/qtype.h) gives every format the shape, group and capabilities it
// had as literals and enum ranges before the table.
TEST(Formats, TraitsTableKeepsEveryFormatsShapeAndGroup) {
  struct Want {
    QType t;
    const char* name;
    int block;
    size_t bytes;
    QGroup group;
    bool quantizable, packable;
  };
  const Want want[] = {
      {QType::F32, "f32", 1, 4, QGroup::kFloat, true, false},
      {QType::F16, "f16", 1, 2, QGroup::kFloat, true, false},
      {QType::BF16, "bf16", 1, 2, QGroup::kFloat, true, false},
      {QType::Q8_0, "q8_0", 32, 34, QGroup::kQ8, true, true},
      {QType::Q4_0, "q4_0", 32, 18, QGroup::kQ8, true, true},
      {QType::Q4_G64, "q4_g64", 64, 34, QGroup::kQ8, true, false},
      {QType::Q4_G128, "q4_g128", 128, 66, QGroup::kQ8, true, false},
      {QType::Q2_K, "q2_k", 256, 84, QGroup::kKQuant, false, false},
      {QType::Q3_K, "q3_k", 256, 110, QGroup::kKQuant, false, false},
      {QType::Q4_K, "q4_k", 256, 144, QGroup::kKQuant, true, false},
      {QType::Q5_K, "q5_k", 256, 176, QGroup::kKQuant, true, false},
      {QType::Q6_K, "q6_k", 256, 210, QGroup::kKQuant, true, false},
      {QType::Q4_1, "q4_1", 32, 20, QGroup::kLegacy, true, true},
      {QType::Q5_0, "q5_0", 32, 22, QGroup::kLegacy, true, true},
      {QType::Q5_1, "q5_1", 32, 24, QGroup::kLegacy, true, true},
      {QType::IQ4_NL, "iq4_nl", 32, 18, QGroup::kLegacy, true, true},
      {QType::IQ4_XS, "iq4_xs", 256, 136, QGroup::kLegacy, true, true},
  };
  ASSERT_EQ(std::size(want), size_t(kQTypeCount));
  for (const Want& w : want) {
    EXPECT_EQ(QTypeName(w.t), w.name);
    EXPECT_EQ(ParseQType(w.name), w.t);
    EXPECT_EQ(BlockSize(w.t), w.block) << w.name;
    EXPECT_EQ(BlockBytes(w.t), w.bytes) << w.name;
    EXPECT_EQ(GroupOf(w.t), w.group) << w.name;
    EXPECT_EQ(IsQuantized(w.t), w.group != QGroup::kFloat) << w.name;
    EXPECT_EQ(CanQuantizeTo(w.t), w.quantizable) << w.name;
    EXPECT_EQ(packed::Packable(w.t), w.packable) << w.name;
  }
  EXPECT_TRUE(HasMin(QType::Q4_1) && HasMin(QType::Q5_1) && !HasMin(QType::Q5_0) && !HasMin(QType::IQ4_NL));
}

// One dispatch: every family has a row-layout kernel for every format, and a packed one
// for every legacy format (the scalar reference where it has no SIMD one).
TEST(Formats, EveryFamilyHasAKernelForEveryFormat) {
  for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"}) {
    const KernelFamily* k = FindKernelFamily(isa);
    if (!k) continue;
    for (const QTypeTraits& f : kQTypes) {
      EXPECT_NE(k->rows[int(f.type)], nullptr) << isa << " " << f.name;
      if (f.group == QGroup::kLegacy) {
        EXPECT_NE(k->packed[int(f.type)], nullptr) << isa << " " << f.name;
      }
      if (f.group == QGroup::kKQuant) {
        EXPECT_EQ(k->packed[int(f.type)], nullptr) << isa << " " << f.name;
      }
    }
  }
}

// Hand-checked block: element j = j - 16 (max |x| = -16 at j = 0).
TEST(Formats, Q4_0BlockLayoutAndRounding) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  QMatrix q = Quantize(x, 1, 32, QType::Q4_0);
  const auto& b = *reinterpret_cast<const BlockQ4_0*>(q.Row(0));
  EXPECT_EQ(F16ToF32(b.d), 2.0f);  // d = max / -8 = -16 / -8
  // id = 0.5; q = min(15, trunc(x/2 + 8.5)). Element j in the low nibble of qs[j],
  // element j + 16 in the high nibble.
  for (int j = 0; j < 16; ++j) {
    const int lo = std::min(15, static_cast<int>(x[j] * 0.5f + 8.5f));
    const int hi = std::min(15, static_cast<int>(x[j + 16] * 0.5f + 8.5f));
    EXPECT_EQ(b.qs[j], lo | (hi << 4)) << j;
  }
  std::vector<float> back = Dequantize(q);
  EXPECT_EQ(back[0], -16.0f);
  EXPECT_EQ(back[31], 14.0f);  // 15 clamps to nibble 15 -> (15 - 8) * 2
}

TEST(Formats, Q8_0BlockRounding) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>(j) - 3.25f;  // amax 12.25
  QMatrix q = Quantize(x, 1, 32, QType::Q8_0);
  const auto& b = *reinterpret_cast<const BlockQ8_0*>(q.Row(0));
  const float d = 12.25f / 127.0f;
  EXPECT_EQ(b.d, F32ToF16(d));
  for (int j = 0; j < 32; ++j) EXPECT_EQ(b.qs[j], static_cast<int8_t>(std::roundf(x[j] * (1.0f / d))));
}

// |dequant - x| <= d/2 per element plus the f16 rounding of the scale (|q| * |d - d16|).
TEST(Formats, QuantizeDequantizeErrorBounds) {
  for (Kind kind : {Kind::kUniform, Kind::kTiny, Kind::kHuge, Kind::kNegative, Kind::kZeroBlocks, Kind::kMixedScales}) {
    for (int cols : {1, 31, 64, 172, 256}) {
      const int rows = 3;
      std::vector<float> w = Values(size_t(rows) * cols, kind, 11 + cols);
      for (QType t : kAllTypes) {
        QMatrix q = Quantize(w.data(), rows, cols, t);
        std::vector<float> back = Dequantize(q);
        const int bs = BlockSize(t);
        for (int r = 0; r < rows; ++r) {
          for (int g = 0; g * bs < cols; ++g) {
            float amax = 0.0f;
            for (int c = g * bs; c < std::min(cols, (g + 1) * bs); ++c)
              amax = std::max(amax, std::fabs(w[size_t(r) * cols + c]));
            for (int c = g * bs; c < std::min(cols, (g + 1) * bs); ++c) {
              const float x = w[size_t(r) * cols + c];
              const double err = std::fabs(double(back[size_t(r) * cols + c]) - x);
              double bound;
              switch (t) {
                case QType::F32: bound = 0.0; break;
                case QType::F16: bound = std::max(std::fabs(x) * 0x1.0p-11, 0x1.0p-25); break;
                case QType::BF16: bound = std::fabs(x) * 0x1.0p-8; break;
                case QType::Q8_0: {
                  const double d = amax / 127.0, d16 = F16ToF32(F32ToF16(amax / 127.0f));
                  bound = d / 2 + 127 * std::fabs(d - d16) + 1e-6 * d;
                  break;
                }
                default: {
                  // ggml's clamp to nibble 15: an element of the sign opposite to
                  // `max` beyond 7.5 d is stored as 7 d (error up to d), else d/2.
                  const double d = amax / 8.0, d16 = std::fabs(F16ToF32(F32ToF16(amax / 8.0f)));
                  bound = std::max(d / 2, std::fabs(x) - 7 * d) + 8 * std::fabs(d - d16) + 1e-6 * d;
                }
              }
              ASSERT_LE(err, bound) << QTypeName(t) << " kind " << int(kind) << " cols " << cols << " r " << r << " c "
                                    << c << " x " << x;
            }
          }
        }
      }
    }
  }
}

TEST(Formats, BadInputsThrow) {
  std::vector<float> w(64, 1.0f);
  w[5] = NAN;
  EXPECT_THROW(Quantize(w.data(), 2, 32, QType::Q4_0), Error);
  w[5] = 1e9f;  // Q4 scale 1.25e8 > f16 max
  EXPECT_THROW(Quantize(w.data(), 2, 32, QType::Q4_0), Error);
  EXPECT_THROW(Quantize(w.data(), 2, 32, QType::F16), Error);
  EXPECT_NO_THROW(Quantize(w.data(), 2, 32, QType::BF16));
  EXPECT_THROW(MakeQMatrix(QType::F32, -1, 4), Error);
}

// ---- kernel families vs the scalar oracle -----------------------------------------

std::vector<const KernelFamily*> SimdFamilies() {
  std::vector<const KernelFamily*> f;
  for (const char* isa : {"avx2", "avx2vnni", "avx512"})
    if (const KernelFamily* k = FindKernelFamily(isa)) f.push_back(k);
  return f;
}

// Quantizes [n][cols] activations for matrix W with family k.
QuantActs QuantizeWith(const KernelFamily& k, const QMatrix& W, const std::vector<float>& x, int n) {
  QuantActs a;
  a.Reserve(n, ActsCols(W));
  for (int i = 0; i < n; ++i) QuantizeActsRow(k, x.data() + size_t(i) * W.cols, W.cols, i, a);
  return a;
}

TEST(Kernels, ActivationQuantizationBitExact) {
  const auto& ref = ScalarKernels();
  for (const KernelFamily* k : SimdFamilies()) {
    for (Kind kind :
         {Kind::kUniform, Kind::kTiny, Kind::kHuge, Kind::kNegative, Kind::kZeroBlocks, Kind::kMixedScales}) {
      for (int cols : {1, 17, 31, 33, 172, 768}) {
        std::vector<float> x = Values(cols, kind, 3 + cols);
        if (kind == Kind::kUniform) {  // exact .5 ties after scaling: amax 127 -> d = 1
          x[0] = 127.0f;
          for (int j = 1; j < std::min(cols, 32); ++j) x[j] = 0.5f * j - 7.5f;
        }
        if (kind == Kind::kTiny && cols > 40) x[40] = 1e-37f;  // subnormal scale -> zero block
        const int cp = (cols + 127) / 128 * 128;
        std::vector<int8_t> q0(cp), q1(cp);
        std::vector<float> d0(cp / 32), d1(cp / 32);
        std::vector<int32_t> c0(cp / 4), c1(cp / 4);
        ref.quantize_acts(x.data(), cols, cp, q0.data(), d0.data(), c0.data());
        k->quantize_acts(x.data(), cols, cp, q1.data(), d1.data(), c1.data());
        ASSERT_EQ(q0, q1) << k->name << " cols " << cols << " kind " << int(kind);
        ASSERT_EQ(c0, c1) << k->name;
        for (int b = 0; b < cp / 32; ++b) ASSERT_EQ(F32Bits(d0[b]), F32Bits(d1[b])) << k->name << " b " << b;
        for (int j = cols; j < cp; ++j) ASSERT_EQ(q0[j], 0);
      }
    }
  }
}

// Raw random blocks (every byte pattern, int8 -128 included) with finite scales.
QMatrix RandomRawMatrix(QType t, int rows, int cols, uint64_t seed) {
  QMatrix m = MakeQMatrix(t, rows, cols);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < m.bytes(); ++i) m.data.data()[i] = static_cast<uint8_t>(rng());
  const size_t bb = BlockBytes(t);
  std::uniform_real_distribution<float> u(0.001f, 2.0f);
  for (int r = 0; r < rows; ++r)
    for (size_t b = 0; b < m.row_bytes / bb; ++b) {
      const Half d = F32ToF16(u(rng));
      std::memcpy(m.Row(r) + b * bb, &d, 2);
    }
  return m;
}

TEST(Kernels, IntegerBlockDotsBitExact) {
  const auto& ref = ScalarKernels();
  for (const KernelFamily* k : SimdFamilies()) {
    for (QType t : kQuantTypes) {
      for (int cols : {32, 96, 172, 256, 768}) {
        QMatrix W = RandomRawMatrix(t, 4, cols, 5 + cols);
        for (Kind kind : {Kind::kUniform, Kind::kNegative, Kind::kZeroBlocks}) {
          std::vector<float> x = Values(cols, kind, 9);
          QuantActs a = QuantizeWith(ref, W, x, 1);
          const int nb = W.cols_padded / 32;
          for (int r = 0; r < W.rows; ++r) {
            std::vector<int32_t> s0(nb), s1(nb);
            ref.block_dots(t, W.Row(r), a.Q(0), a.Corr(0), nb, s0.data());
            k->block_dots(t, W.Row(r), a.Q(0), a.Corr(0), nb, s1.data());
            ASSERT_EQ(s0, s1) << k->name << " " << QTypeName(t) << " cols " << cols;
          }
        }
      }
    }
  }
}

// Runs family k's row kernel over all rows.
std::vector<float> RunRows(const KernelFamily& k, const QMatrix& W, const std::vector<float>& x, int n) {
  std::vector<float> y(size_t(n) * W.rows, NAN);  // [n][rows]
  QuantActs a;
  if (IsQuantized(W.type)) a = QuantizeWith(ScalarKernels(), W, x, n);
  const RowsKernelFn fn = W.layout == Layout::kRows ? k.rows[int(W.type)] : k.packed[int(W.type)];
  fn(W, 0, W.rows, x.data(), &a, n, y.data());
  return y;
}

// The documented bound between two evaluation orders (quant/kernels.h), from
// sum |w_j x_j| over the values the kernels actually multiply.
std::vector<double> Bounds(const QMatrix& W, const std::vector<float>& x, int n) {
  std::vector<double> bound(size_t(n) * W.rows);  // [n][rows]
  std::vector<float> w(W.cols);                   // [cols] dequantized row
  std::vector<float> xd(W.cols);                  // [cols] dequantized activations
  QuantActs a;
  if (IsQuantized(W.type)) a = QuantizeWith(ScalarKernels(), W, x, n);
  for (int r = 0; r < W.rows; ++r) {
    DequantizeRow(W, r, w.data());
    for (int i = 0; i < n; ++i) {
      for (int c = 0; c < W.cols; ++c)
        xd[c] = IsQuantized(W.type) ? a.D(i)[c / 32] * a.Q(i)[c] : x[size_t(i) * W.cols + c];
      double s = 0;
      for (int c = 0; c < W.cols; ++c) s += std::fabs(double(w[c]) * xd[c]);
      const double terms = IsQuantized(W.type) ? W.cols_padded / 32 + 24 : W.cols + 16;
      bound[size_t(i) * W.rows + r] = 2 * terms * kU * s * (1 + 1e-6) + 1e-35;
    }
  }
  return bound;
}

struct Shape {
  int rows, cols;
};
constexpr Shape kShapes[] =
    {{1, 1},    {1, 32},   {5, 172}, {7, 64},  {9, 96},
     {13, 256}, {33, 200}, {4, 768}, {3, 1100}};  // 35 blocks: past one 32-block scale segment, odd

TEST(Kernels, RowKernelsMatchScalarWithinBound) {
  const auto& ref = ScalarKernels();
  for (const KernelFamily* k : SimdFamilies()) {
    for (QType t : kAllTypes) {
      for (Shape s : kShapes) {
        for (Kind kind : {Kind::kUniform, Kind::kMixedScales, Kind::kNegative, Kind::kTiny}) {
          std::vector<float> wf = Values(size_t(s.rows) * s.cols, kind == Kind::kTiny ? Kind::kUniform : kind, s.cols);
          QMatrix W = Quantize(wf.data(), s.rows, s.cols, t);
          for (int n : {1, 2, 3, 5, 8}) {
            std::vector<float> x = Values(size_t(n) * s.cols, kind, 100 + n);
            std::vector<float> y0 = RunRows(ref, W, x, n), y1 = RunRows(*k, W, x, n);
            std::vector<double> bound = Bounds(W, x, n);
            for (size_t e = 0; e < y0.size(); ++e)
              ASSERT_LE(std::fabs(double(y0[e]) - y1[e]), bound[e])
                  << k->name << " " << QTypeName(t) << " " << s.rows << "x" << s.cols << " n " << n << " kind "
                  << int(kind) << " e " << e << " ref " << y0[e] << " got " << y1[e];
          }
        }
      }
    }
  }
}

// Float weights: one reduction order for every family (quant/float_order.h), so the SIMD
// kernels give the scalar reference's bits, in the row layout and in column chunks, for
// every tile shape (n past two tiles plus a tail) and zero-padded tail; at 4100
// columns n = 30 takes two passes over the rows (28 + 2 activation rows in L2,
// kernel_driver.h).
TEST(Kernels, FloatKernelsBitIdenticalToScalar) {
  const auto& ref = ScalarKernels();
  for (const KernelFamily* k : SimdFamilies()) {
    for (QType t : {QType::F32, QType::F16, QType::BF16}) {
      for (Shape s : {Shape{1, 1}, Shape{5, 172}, Shape{7, 64}, Shape{9, 96}, Shape{33, 200}, Shape{4, 768},
                      Shape{3, 1100}, Shape{17, 1541}, Shape{21, 4100}}) {
        for (Kind kind : {Kind::kUniform, Kind::kMixedScales, Kind::kNegative, Kind::kTiny}) {
          std::vector<float> wf = Values(size_t(s.rows) * s.cols, kind == Kind::kTiny ? Kind::kUniform : kind, s.cols);
          const QMatrix W = Quantize(wf.data(), s.rows, s.cols, t);
          const QMatrix C = packed::Pack(W);  // column chunks when wider than one chunk
          for (int n : {1, 2, 3, 5, 8, 13, 17, 30}) {
            std::vector<float> x = Values(size_t(n) * s.cols, kind, 200 + n);
            const std::vector<float> y0 = RunRows(ref, W, x, n);
            for (const QMatrix* m : {&W, &C}) {
              // (a family without column-chunk kernels never runs them)
              if (m == &C && (C.layout == Layout::kRows || !k->packed[int(t)])) continue;
              const std::vector<float> y1 = RunRows(*k, *m, x, n);
              ASSERT_EQ(0, std::memcmp(y0.data(), y1.data(), 4 * y0.size()))
                  << k->name << " " << QTypeName(t) << " " << s.rows << "x" << s.cols << " n " << n << " kind "
                  << int(kind) << (m == &C ? " column chunks" : " rows");
            }
          }
        }
      }
    }
  }
}

// ---- the 16-row interleaved layout (quant/packed.h) ----------------------------------

// Every row of a matrix re-laid out (P) dequantizes bit for bit as in the row layout (W).
void ExpectRowsDequantizeAlike(const QMatrix& W, const QMatrix& P) {
  std::vector<float> a(W.cols), b(W.cols);
  for (int r = 0; r < W.rows; ++r) {
    DequantizeRow(W, r, a.data());
    DequantizeRow(P, r, b.data());
    ASSERT_EQ(0, std::memcmp(a.data(), b.data(), 4 * a.size())) << QTypeName(W.type) << " row " << r;
  }
}

constexpr QType kPackableTypes[] = {QType::Q8_0, QType::Q4_0};
// {20, 4200}: 132 blocks, past two of the AVX2 kernels' 64-block offset segments.
constexpr Shape kPackShapes[] = {{1, 32}, {5, 172}, {16, 64}, {17, 96}, {33, 1100}, {48, 768}, {20, 4200}};

TEST(Packed, RoundTripsAndDequantizesAsRows) {
  for (QType t : kPackableTypes) {
    for (Shape s : kPackShapes) {
      const QMatrix W = RandomRawMatrix(t, s.rows, s.cols, 7 + s.cols);  // every byte pattern
      const QMatrix P = packed::Pack(W);
      ASSERT_EQ(P.layout, Layout::kPacked16);
      const size_t groups = (s.rows + 15) / 16;
      EXPECT_EQ(P.bytes(), groups * P.group_bytes);
      EXPECT_EQ(P.group_bytes % 64, 0u);
      EXPECT_LT(P.group_bytes, 16 * W.row_bytes + 64);  // the same weight bytes, padded to 64
      const QMatrix U = packed::Unpack(P);
      ASSERT_EQ(U.layout, Layout::kRows);
      ASSERT_EQ(U.bytes(), W.bytes());
      ASSERT_EQ(0, std::memcmp(U.data.data(), W.data.data(), W.bytes())) << QTypeName(t) << " " << s.rows;
      ASSERT_NO_FATAL_FAILURE(ExpectRowsDequantizeAlike(W, P));
    }
  }
  const QMatrix f = Quantize(Values(64, Kind::kUniform, 1).data(), 2, 32, QType::Q4_G64);
  EXPECT_EQ(packed::Pack(f).layout, Layout::kRows);  // not a packable type: unchanged
}

// The packed kernels compute exactly what the scalar reference computes on the row
// layout: bit-identical, for random raw blocks (every nibble/byte, extreme scales),
// row counts off the 16-row groups, padded columns and every column-tile shape (the
// AVX2 kernels take up to 8 activation rows per pass in tiles of 4: n = 1..9, 13, 16).
TEST(Kernels, PackedKernelsBitIdenticalToRowReference) {
  const auto& ref = ScalarKernels();
  std::vector<const KernelFamily*> fams = {&ref};
  for (const KernelFamily* k : SimdFamilies())
    if (k->packed[int(QType::Q4_0)]) fams.push_back(k);
  for (const KernelFamily* k : fams) {
    for (QType t : kPackableTypes) {
      for (Shape s : kPackShapes) {
        for (bool raw : {true, false}) {
          const std::vector<float> wf = Values(size_t(s.rows) * s.cols, Kind::kMixedScales, s.cols);
          const QMatrix W =
              raw ? RandomRawMatrix(t, s.rows, s.cols, 3 + s.rows) : Quantize(wf.data(), s.rows, s.cols, t);
          const QMatrix P = packed::Pack(W);
          for (Kind kind : {Kind::kUniform, Kind::kZeroBlocks, Kind::kHuge, Kind::kTiny}) {
            for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16}) {
              const std::vector<float> x = Values(size_t(n) * s.cols, kind, 50 + n);
              const std::vector<float> y0 = RunRows(ref, W, x, n), y1 = RunRows(*k, P, x, n);
              ASSERT_EQ(0, std::memcmp(y0.data(), y1.data(), 4 * y0.size()))
                  << k->name << " " << QTypeName(t) << " " << s.rows << "x" << s.cols << " n " << n << " kind "
                  << int(kind) << " raw " << raw;
            }
          }
        }
      }
    }
  }
}

// The integer range edges of the 256-bit packed kernels: Q4_0 nibbles all 15 or all 0
// against activations of +-127 put +-30480 in every int16 lane of the plain AVX2 block
// sum (the most it can hold before widening), Q8_0 -128 against -127 the largest
// vpmaddubsw pair; over 64 blocks (2048 columns, the 1.1B shape's width) and 33 rows.
TEST(Kernels, PackedKernelsExactAtIntegerRangeEdges) {
  const auto& ref = ScalarKernels();
  for (const KernelFamily* k : SimdFamilies()) {
    if (!k->packed[int(QType::Q4_0)]) continue;
    for (QType t : kPackableTypes) {
      for (uint8_t fill : {uint8_t{0xFF}, uint8_t{0x00}, uint8_t{0x80}, uint8_t{0x7F}}) {
        QMatrix W = RandomRawMatrix(t, 33, 2048, 11);
        const size_t bb = BlockBytes(t);
        for (int r = 0; r < W.rows; ++r)  // keep the random scales, fill the quants
          for (size_t b = 0; b < W.row_bytes / bb; ++b) std::memset(W.Row(r) + b * bb + 2, fill, bb - 2);
        const QMatrix P = packed::Pack(W);
        for (float sign : {1.0f, -1.0f}) {
          for (int n : {1, 4, 5}) {
            std::vector<float> x(size_t(n) * W.cols, sign);  // every block quantizes to +-127
            const std::vector<float> y0 = RunRows(ref, W, x, n), y1 = RunRows(*k, P, x, n);
            ASSERT_EQ(0, std::memcmp(y0.data(), y1.data(), 4 * y0.size()))
                << k->name << " " << QTypeName(t) << " fill " << int(fill) << " sign " << sign << " n " << n;
          }
        }
      }
    }
  }
}

// Every family with packed kernels packs Q8_0/Q4_0 for itself (PackForKernels), and its
// MatMul on them equals the scalar reference on rows bit for bit at 1 and 2 threads.
TEST(MatMul, PackedFamiliesMatchRowReference) {
  for (const KernelFamily* k : SimdFamilies()) {
    if (!k->packed[int(QType::Q4_0)]) continue;
    for (QType t : kPackableTypes) {
      // 300 x 1100: above the size MatMul splits over threads, rows off the 16-row groups.
      const QMatrix W = Quantize(Values(size_t(300) * 1100, Kind::kMixedScales, 5).data(), 300, 1100, t);
      const int n = 7;
      const std::vector<float> x = Values(size_t(n) * W.cols, Kind::kUniform, 6);
      const std::vector<float> y0 = RunRows(ScalarKernels(), W, x, n);
      Runtime rt;
      ASSERT_TRUE(ForceKernelIsa(rt.kernels, k->name));
      const QMatrix P = PackForKernels(rt.kernels, W);
      EXPECT_EQ(P.layout, Layout::kPacked16) << k->name;
      for (int threads : {1, 2}) {
        std::vector<float> y(y0.size());
        rt.threads = threads;
        MatMul(rt, P, x.data(), n, y.data());
        EXPECT_EQ(0, std::memcmp(y0.data(), y.data(), 4 * y.size())) << k->name << " threads " << threads;
      }
    }
  }
}

// Float matrices wider than one column chunk (Layout::kColChunks): the layout holds the
// same bytes, round-trips and dequantizes as rows, and each family's kernel on it
// computes bit for bit what it computes on rows (the same column order per lane, the
// accumulators parked between chunks), for rows off the 16-row blocks and chunks and
// vectors cut short.
TEST(Packed, ColumnChunksRoundTripAndMatchRowKernels) {
  std::vector<const KernelFamily*> fams = {&ScalarKernels()};
  for (const KernelFamily* k : SimdFamilies())
    if (k->packed[int(QType::F32)]) fams.push_back(k);
  for (QType t : {QType::F32, QType::F16, QType::BF16}) {
    for (Shape s : {Shape{3, 1100}, Shape{20, 769}, Shape{33, 1700}, Shape{17, 800}, Shape{48, 2048}}) {
      const std::vector<float> wf = Values(size_t(s.rows) * s.cols, Kind::kMixedScales, s.cols);
      const QMatrix W = Quantize(wf.data(), s.rows, s.cols, t);
      const QMatrix P = packed::Pack(W);
      ASSERT_EQ(P.layout, Layout::kColChunks);
      ASSERT_EQ(P.bytes(), W.bytes());
      EXPECT_NE(0, std::memcmp(P.data.data(), W.data.data(), W.bytes()));  // really re-laid out
      const QMatrix U = packed::Unpack(P);
      ASSERT_EQ(U.layout, Layout::kRows);
      ASSERT_EQ(0, std::memcmp(U.data.data(), W.data.data(), W.bytes())) << QTypeName(t) << " " << s.cols;
      ASSERT_NO_FATAL_FAILURE(ExpectRowsDequantizeAlike(W, P));
      for (const KernelFamily* k : fams) {
        for (int n : {1, 2, 3, 5, 8, 13}) {
          const std::vector<float> x = Values(size_t(n) * s.cols, Kind::kMixedScales, 60 + n);
          const std::vector<float> y0 = RunRows(*k, W, x, n), y1 = RunRows(*k, P, x, n);
          ASSERT_EQ(0, std::memcmp(y0.data(), y1.data(), 4 * y0.size()))
              << k->name << " " << QTypeName(t) << " " << s.rows << "x" << s.cols << " n " << n;
        }
      }
    }
  }
  const QMatrix one_chunk = Quantize(Values(4 * 768, Kind::kUniform, 5).data(), 4, 768, QType::F32);
  EXPECT_EQ(packed::Pack(one_chunk).layout, Layout::kRows);  // nothing to chunk: unchanged
}

// The scalar oracle itself against an independent double evaluation of the dequantized
// weights times the dequantized activations.
TEST(Kernels, ScalarOracleMatchesDequantizedMath) {
  for (QType t : kAllTypes) {
    for (Shape s : kShapes) {
      std::vector<float> wf = Values(size_t(s.rows) * s.cols, Kind::kMixedScales, 1 + s.cols);
      QMatrix W = Quantize(wf.data(), s.rows, s.cols, t);
      const int n = 3;
      std::vector<float> x = Values(size_t(n) * s.cols, Kind::kUniform, 2);
      std::vector<float> y = RunRows(ScalarKernels(), W, x, n);
      std::vector<double> bound = Bounds(W, x, n);
      QuantActs a;
      if (IsQuantized(t)) a = QuantizeWith(ScalarKernels(), W, x, n);
      std::vector<float> w(s.cols);
      for (int r = 0; r < s.rows; ++r) {
        DequantizeRow(W, r, w.data());
        for (int i = 0; i < n; ++i) {
          double exact = 0;
          for (int c = 0; c < s.cols; ++c)
            exact += double(w[c]) * (IsQuantized(t) ? double(a.D(i)[c / 32]) * a.Q(i)[c] : x[size_t(i) * s.cols + c]);
          ASSERT_LE(std::fabs(exact - y[size_t(i) * s.rows + r]), bound[size_t(i) * s.rows + r])
              << QTypeName(t) << " " << s.rows << "x" << s.cols;
        }
      }
    }
  }
}

// ---- MatMul contract ----------------------------------------------------------------

std::vector<std::string> AvailableIsas() {
  std::vector<std::string> v = {"scalar"};
  for (const KernelFamily* k : SimdFamilies()) v.push_back(k->name);
  return v;
}

TEST(MatMul, BatchEqualsSingleCallsBitwise) {
  for (const std::string& isa : AvailableIsas()) {
    Runtime rt;
    ASSERT_TRUE(ForceKernelIsa(rt.kernels, isa.c_str()));
    for (QType t : kAllTypes) {
      // 1100 columns: two scale segments of the AVX-512 integer kernels, odd block count.
      for (Shape s : {Shape{37, 172}, Shape{300, 96}, Shape{21, 1100}}) {
        std::vector<float> wf = Values(size_t(s.rows) * s.cols, Kind::kUniform, 21);
        QMatrix W = PackForKernels(rt.kernels, Quantize(wf.data(), s.rows, s.cols, t));
        const int n = 13;  // one full 8-column tile plus a 5-column tail
        std::vector<float> x = Values(size_t(n) * s.cols, Kind::kMixedScales, 22);
        std::vector<float> yb(size_t(n) * s.rows);
        MatMul(rt, W, x.data(), n, yb.data());
        for (int i = 0; i < n; ++i) {
          std::vector<float> y1(s.rows);
          MatMul(rt, W, x.data() + size_t(i) * s.cols, 1, y1.data());
          ASSERT_EQ(0, std::memcmp(y1.data(), yb.data() + size_t(i) * s.rows, sizeof(float) * s.rows))
              << isa << " " << QTypeName(t) << " column " << i;
        }
      }
    }
  }
}

TEST(MatMul, IndependentOfThreadCount) {
  for (const std::string& isa : AvailableIsas()) {
    Runtime rt;
    ASSERT_TRUE(ForceKernelIsa(rt.kernels, isa.c_str()));
    for (QType t : kAllTypes) {
      // 1000 x 256 is above the serial threshold in every type (Q4_G128: 132 KB).
      std::vector<float> wf = Values(1000 * 256, Kind::kUniform, 31);
      QMatrix W = PackForKernels(rt.kernels, Quantize(wf.data(), 1000, 256, t));
      const int n = 4;
      std::vector<float> x = Values(size_t(n) * 256, Kind::kUniform, 32);
      std::vector<float> y1(size_t(n) * 1000), y2(size_t(n) * 1000);
      rt.threads = 1;
      MatMul(rt, W, x.data(), n, y1.data());
      for (int threads : {2, 3, 5}) {  // 3 and 5 oversubscribe a 2-core machine: chunks get stolen
        rt.threads = threads;
        std::fill(y2.begin(), y2.end(), -1.0f);
        MatMul(rt, W, x.data(), n, y2.data());
        ASSERT_EQ(0, std::memcmp(y1.data(), y2.data(), sizeof(float) * y1.size()))
            << isa << " " << QTypeName(t) << " threads " << threads;
      }
    }
  }
}

// Every chunk is handed out exactly once, each thread starts on its own static range in
// order, and ranges of threads that never ask (a smaller team than planned) are stolen.
TEST(ChunkQueue, EveryChunkExactlyOnce) {
  for (int threads : {1, 2, 3, 8, 17, 40}) {  // 17 and 40 exceed the inline ranges
    for (int chunks : {0, 1, 5, 64, 1000}) {
      for (int active : {threads, (threads + 1) / 2}) {
        ChunkQueue q(chunks, threads);
        std::vector<std::vector<int>> got(active);
        std::vector<std::thread> pool;
        for (int t = 0; t < active; ++t)
          pool.emplace_back([&, t] {
            std::mt19937 rng(t);
            for (int ch; (ch = q.Next(t)) >= 0;) {
              got[t].push_back(ch);
              if (rng() % 4 == 0) std::this_thread::yield();  // uneven speeds: stealing
            }
          });
        for (auto& th : pool) th.join();
        std::vector<int> count(chunks, 0);
        for (int t = 0; t < active; ++t)
          for (int ch : got[t]) ++count[ch];
        for (int ch = 0; ch < chunks; ++ch)
          ASSERT_EQ(1, count[ch]) << "chunk " << ch << " of " << chunks << ", " << threads << " threads, " << active
                                  << " active";
      }
    }
  }
}

// Reset reuses a queue for another split (the forward pass keeps one per product):
// every chunk once again, whether the team grows past the inline ranges or shrinks.
TEST(ChunkQueue, ResetHandsOutAfresh) {
  ChunkQueue q;
  for (auto [chunks, threads] : {std::pair{10, 2}, {100, 40}, {7, 3}, {0, 2}, {64, 17}}) {
    q.Reset(chunks, threads);
    std::vector<int> count(chunks, 0);
    for (int t = threads - 1; t >= 0; --t)  // one thread at a time: own range, then steals
      for (int ch; (ch = q.Next(t)) >= 0;) ++count[ch];
    EXPECT_EQ(std::vector<int>(chunks, 1), count) << chunks << " chunks, " << threads << " threads";
  }
}

// Alone, a thread walks its own range front to back, then steals the back half of the
// largest remaining range, and so on: ascending runs, each chunk once.
TEST(ChunkQueue, OwnRangeFirstThenBackHalves) {
  ChunkQueue q(100, 4);  // ranges [0,25) [25,50) [50,75) [75,100)
  std::vector<int> got;
  for (int ch; (ch = q.Next(0)) >= 0;) got.push_back(ch);
  ASSERT_EQ(100u, got.size());
  for (int i = 0; i < 25; ++i) EXPECT_EQ(i, got[i]);
  EXPECT_EQ(37, got[25]);  // back half of [25, 50): 13 chunks
  std::vector<int> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(i, sorted[i]);
}

// PrefetchTarget maps the lines of each 32 KB window one-to-one onto the next window,
// line 8 j + p to line j of page p; WindowPrefetcher's burst for a slot covers exactly
// the targets of the slot's 8 lines.
TEST(Prefetch, WindowTargetsArePageInterleavedAndBurstsMatch) {
  const uintptr_t base = uintptr_t(1) << 30;  // 32 KB aligned; never dereferenced
  std::vector<int> hits(512, 0);
  for (uintptr_t k = 0; k < 512; ++k) {
    const auto t = reinterpret_cast<uintptr_t>(PrefetchTarget(reinterpret_cast<const void*>(base + 64 * k + 5)));
    ASSERT_GE(t, base + 32768);
    ASSERT_LT(t, base + 65536);
    ASSERT_EQ(0u, t % 64);
    const uintptr_t line = (t - base - 32768) / 64;
    EXPECT_EQ(k % 8, line / 64) << "page of line " << k;
    EXPECT_EQ(k / 8, line % 64) << "line in page of line " << k;
    ++hits[line];
  }
  for (int h : hits) ASSERT_EQ(1, h);
  for (uintptr_t slot = base; slot < base + 65536; slot += 512)
    for (uintptr_t p = 0; p < 8; ++p)
      ASSERT_EQ(PrefetchTarget(reinterpret_cast<const void*>(slot + 64 * p)),
                WindowPrefetcher::BurstBase(slot) + 4096 * p);
}

// The process-wide formula (kActive) gives the compile-time patterns' bursts: the window's
// page-interleaved lines, or the slot's own 8 lines kLeadBytes ahead.
TEST(Prefetch, ActiveFormulaMatchesEachPattern) {
  const PrefetchPattern saved = ActivePrefetchPattern();
  const uintptr_t base = uintptr_t(1) << 30;
  for (PrefetchPattern pattern : {PrefetchPattern::kWindow, PrefetchPattern::kLead}) {
    SetPrefetchPattern(pattern);
    for (uintptr_t slot = base; slot < base + 65536; slot += 512) {
      const PrefetchBurst got = WindowPrefetcher::BurstOf(slot);
      const PrefetchBurst want = pattern == PrefetchPattern::kLead
                                     ? BasicPrefetcher<PrefetchBinding::kLead>::BurstOf(slot)
                                     : BasicPrefetcher<PrefetchBinding::kWindow>::BurstOf(slot);
      ASSERT_EQ(got.base, want.base) << PrefetchPatternName(pattern) << " slot " << slot - base;
      ASSERT_EQ(got.stride, want.stride);
      if (pattern == PrefetchPattern::kLead) {
        ASSERT_EQ(reinterpret_cast<uintptr_t>(got.base), slot + kLeadBytes);
        ASSERT_EQ(got.stride, 64u);
      } else {
        ASSERT_EQ(got.base, WindowPrefetcher::BurstBase(slot));
        ASSERT_EQ(got.stride, 4096u);
      }
    }
  }
  SetPrefetchPattern(saved);
}

// A 172-column matrix gives exactly the results of its zero-padded 256-column twin
// (256: a whole number of blocks for every quantized type).
TEST(MatMul, PaddedRowsEqualUnpaddedMath) {
  const int rows = 20, cols = 172, padded = 256, n = 3;
  std::vector<float> w = Values(size_t(rows) * cols, Kind::kUniform, 41);
  std::vector<float> wp(size_t(rows) * padded, 0.0f);
  for (int r = 0; r < rows; ++r) std::memcpy(&wp[size_t(r) * padded], &w[size_t(r) * cols], 4 * cols);
  std::vector<float> x = Values(size_t(n) * cols, Kind::kUniform, 42);
  std::vector<float> xp(size_t(n) * padded, 0.0f);
  for (int i = 0; i < n; ++i) std::memcpy(&xp[size_t(i) * padded], &x[size_t(i) * cols], 4 * cols);
  for (const std::string& isa : AvailableIsas()) {
    Runtime rt;
    ASSERT_TRUE(ForceKernelIsa(rt.kernels, isa.c_str()));
    for (QType t : kQuantTypes) {
      QMatrix W = Quantize(w.data(), rows, cols, t), Wp = Quantize(wp.data(), rows, padded, t);
      for (int r = 0; r < rows; ++r)  // the stored blocks agree where both exist
        ASSERT_EQ(0, std::memcmp(W.Row(r), Wp.Row(r), W.row_bytes)) << QTypeName(t);
      std::vector<float> y(size_t(n) * rows), yp(size_t(n) * rows);
      MatMul(rt, W, x.data(), n, y.data());
      MatMul(rt, Wp, xp.data(), n, yp.data());
      ASSERT_EQ(0, std::memcmp(y.data(), yp.data(), sizeof(float) * y.size())) << isa << " " << QTypeName(t);
    }
  }
}

TEST(MatMul, SharedInputCallEqualsSeparateCalls) {
  const int cols = 200, n = 5;
  const std::vector<float> x = Values(size_t(n) * cols, Kind::kUniform, 61);
  for (const std::string& isa : AvailableIsas()) {
    Runtime rt;
    ASSERT_TRUE(ForceKernelIsa(rt.kernels, isa.c_str()));
    std::vector<QMatrix> ws;
    int rows = 7;
    for (QType t : {QType::F32, QType::Q4_0, QType::Q8_0, QType::F16}) {
      const std::vector<float> wf = Values(size_t(rows) * cols, Kind::kMixedScales, rows);
      ws.push_back(PackForKernels(rt.kernels, Quantize(wf.data(), rows, cols, t)));
      rows = rows * 3 + 50;  // 7, 71, 263, 839: chunk counts off the 16-row grid
    }
    std::vector<std::vector<float>> ys, want;
    std::vector<MatMulTarget> targets;
    for (const QMatrix& w : ws) {
      ys.emplace_back(size_t(n) * w.rows, NAN);
      want.emplace_back(size_t(n) * w.rows);
      MatMul(rt, w, x.data(), n, want.back().data());
    }
    for (size_t j = 0; j < ws.size(); ++j) targets.push_back({&ws[j], ys[j].data()});
    MatMuls(rt, targets, x.data(), n);
    for (size_t j = 0; j < ws.size(); ++j)
      ASSERT_EQ(0, std::memcmp(ys[j].data(), want[j].data(), 4 * ys[j].size())) << isa << " target " << j;
  }
  const QMatrix a = MakeQMatrix(QType::F32, 4, 32), b = MakeQMatrix(QType::F32, 4, 64);
  std::vector<float> y(8), xx(64);
  const MatMulTarget mixed[] = {{&a, y.data()}, {&b, y.data()}};
  EXPECT_THROW(MatMuls(Runtime{}, mixed, xx.data(), 1), Error);
}

// The compute ceiling counts what it runs: 12 chains x the family's lanes per step, and
// its time grows with the steps (a probe the compiler folded away would take no time).
TEST(Kernels, FmaProbeCountsTheMultiplyAddsItRuns) {
  std::vector<const KernelFamily*> families = SimdFamilies();
  families.push_back(&ScalarKernels());
  for (const KernelFamily* k : families) {
    const int lanes = std::string(k->name) == "avx512" ? 16 : std::string(k->name).starts_with("avx2") ? 8 : 1;
    EXPECT_EQ(k->fma_probe(1000), 1000.0 * 12 * lanes) << k->name;
    auto secs = [&](long steps) {
      const auto t0 = std::chrono::steady_clock::now();
      k->fma_probe(steps);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    // Best of three against scheduling noise: 4M dependent steps take milliseconds.
    double t_small = 1e9, t_large = 1e9;
    for (int r = 0; r < 3; ++r) {
      t_small = std::min(t_small, secs(1 << 16));
      t_large = std::min(t_large, secs(1 << 22));
    }
    EXPECT_GT(t_large, 8 * t_small) << k->name;
  }
  EXPECT_GT(MeasureFmaPeakGmacs(*DefaultKernels().base), 0.0);
}

TEST(MatMul, ForceKernelIsa) {
  Runtime rt;
  rt.kernels.prefetch = PrefetchPattern::kLead;
  EXPECT_TRUE(ForceKernelIsa(rt.kernels, "scalar"));
  EXPECT_STREQ(rt.kernel_isa(), "scalar");
  EXPECT_EQ(rt.kernels.source, "forced");
  EXPECT_EQ(rt.kernels.prefetch, PrefetchPattern::kLead) << "the family alone changes";
  for (const KernelFamily* k : rt.kernels.per_type) EXPECT_STREQ(k->name, "scalar");
  EXPECT_FALSE(ForceKernelIsa(rt.kernels, "neon"));
  EXPECT_STREQ(rt.kernel_isa(), "scalar");
}

// ---- model level ------------------------------------------------------------------

TEST(QuantizeModel, ConvertsMatricesKeepsEmbeddingAndNorms) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 5);
  Model q = QuantizeModel(m, QType::Q4_G64);
  EXPECT_EQ(q.tok_embeddings.type, QType::F32);
  EXPECT_EQ(q.output.type, QType::Q4_G64);
  for (const LayerWeights& L : q.layers) {
    for (const QMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w3}) EXPECT_EQ(w->type, QType::Q4_G64);
    EXPECT_EQ(L.w2.type, QType::F16);  // FFN 96: no whole number of 64-blocks (StoredQType)
  }
  EXPECT_EQ(q.ParameterCount(), m.ParameterCount());
  EXPECT_LT(q.WeightBytes(), m.WeightBytes());
  std::vector<std::string> lines = DescribeWeights(q);
  ASSERT_EQ(lines.size(), 2u + 7u * q.layers.size());
  EXPECT_NE(lines[6].find("layers.0.w2"), std::string::npos);
  EXPECT_NE(lines[6].find("f16"), std::string::npos) << lines[6];
  for (const std::string& line : lines) EXPECT_EQ(line.find("padded"), std::string::npos) << line;
}

TEST(QuantError, StatsOfAKnownMatrix) {
  // 2x2 reference against a matrix holding ref + {0.5, 0, 0, -1}.
  const float ref[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float got[4] = {1.5f, 2.0f, 3.0f, 3.0f};
  QMatrix q = Quantize(got, 2, 2, QType::F32);
  QuantErrorStats s = MeasureQuantError(ref, q);
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.max_abs, 1.0);
  EXPECT_DOUBLE_EQ(s.mean_abs, 1.5 / 4);
  EXPECT_DOUBLE_EQ(s.rmse, std::sqrt(1.25 / 4));
  EXPECT_DOUBLE_EQ(s.snr_db, 10 * std::log10(30.0 / 1.25));
  EXPECT_TRUE(std::isinf(MeasureQuantError(q, QType::F32).snr_db));
}

TEST(QuantError, ModelTotalsAndFormatOrdering) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 6);
  ModelQuantError q8 = MeasureModelQuantError(m, QType::Q8_0);
  ModelQuantError q4 = MeasureModelQuantError(m, QType::Q4_0);
  ASSERT_EQ(q8.tensors.size(), 1u + 7u * m.layers.size());
  size_t count = 0;
  for (const auto& t : q8.tensors) count += t.stats.count;
  EXPECT_EQ(q8.total.count, count);
  EXPECT_EQ(count, m.ParameterCount() - size_t(m.config.vocab_size) * m.config.dim -
                       size_t(m.config.dim) * (2 * m.layers.size() + 1));
  // 8-bit keeps ~6 dB/bit more than 4-bit.
  EXPECT_GT(q8.total.snr_db, q4.total.snr_db + 18.0);
  EXPECT_GT(q4.total.snr_db, 15.0);
}

TEST(QuantizeModel, RealStories260kW2IsF16) {
  const std::string dir = testing::SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "shared models not available";
  LoadedModel lm = LoadModel(dir + "/tinystories-260k");
  Model q = QuantizeModel(*lm.model, QType::Q4_0);
  // FFN width 172 is no multiple of 32: w2 is F16, as a quantized GGUF file holds it.
  bool found = false;
  for (const std::string& line : DescribeWeights(q))
    if (line.find("layers.0.w2") != std::string::npos) {
      EXPECT_NE(line.find("f16"), std::string::npos) << line;
      EXPECT_EQ(line.find("padded"), std::string::npos) << line;
      found = true;
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(q.layers[0].w1.type, QType::Q4_0);
}

}  // namespace
}  // namespace specsweep
