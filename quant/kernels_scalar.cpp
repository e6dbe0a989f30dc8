// Scalar reference kernels: the definition of MatMul semantics and the test oracle for
// the SIMD families (see quant/kernels.h for the contract they must meet).
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/float_order.h"
#include "quant/packed.h"

namespace specsweep {
namespace {

void QuantizeActsScalar(const float* x, int cols, int cols_padded, int8_t* q, float* d, int32_t* corr) {
  for (int b = 0; b < cols_padded / 32; ++b) {
    float xb[32];  // [32] block, zero beyond cols
    for (int j = 0; j < 32; ++j) xb[j] = 32 * b + j < cols ? x[32 * b + j] : 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    float dd = amax / 127.0f;
    // A subnormal scale has no finite reciprocal: such a block is treated as zero.
    if (!(dd >= FLT_MIN)) dd = 0.0f;
    const float id = dd != 0.0f ? 1.0f / dd : 0.0f;
    for (int j = 0; j < 32; ++j) q[32 * b + j] = static_cast<int8_t>(std::nearbyint(xb[j] * id));
    d[b] = dd;
  }
  for (int k = 0; k < cols_padded / 4; ++k) corr[k] = -8 * (q[4 * k] + q[4 * k + 1] + q[4 * k + 2] + q[4 * k + 3]);
}

// Float weights: element c of a row.
template <QType T>
float LoadW(const uint8_t* row, int c) {
  if constexpr (T == QType::F32) return reinterpret_cast<const float*>(row)[c];
  if constexpr (T == QType::F16) return F16ToF32(reinterpret_cast<const uint16_t*>(row)[c]);
  if constexpr (T == QType::BF16) return BF16ToF32(reinterpret_cast<const uint16_t*>(row)[c]);
  return 0.0f;
}

// Row layout or Layout::kColChunks (a row is one span or one per column chunk; chunks
// are multiples of 16 columns). The float reduction order of every family: lane j of 16
// accumulates the columns c = j (mod 16) in column order with fused multiply-adds, the
// row padded with zeros to a multiple of 16 (as the SIMD tails are), then LaneTreeSum16.
template <QType T>
void FloatRows(const QMatrix& W, int r0, int r1, const float* X, const QuantActs*, int n, float* Y) {
  const int step = W.SpanCols();
  const int padded = (W.cols + 15) / 16 * 16;
  for (int r = r0; r < r1; ++r) {
    for (int i = 0; i < n; ++i) {
      const float* x = X + static_cast<size_t>(i) * W.cols;
      float lanes[16] = {};
      for (int c0 = 0; c0 < W.cols; c0 += step) {
        const uint8_t* span = W.Span(r, c0);
        for (int c = c0; c < std::min(W.cols, c0 + step); ++c)
          lanes[c % 16] = std::fma(LoadW<T>(span, c - c0), x[c], lanes[c % 16]);
      }
      for (int c = W.cols; c < padded; ++c) lanes[c % 16] = std::fma(0.0f, 0.0f, lanes[c % 16]);
      Y[static_cast<size_t>(i) * W.rows + r] = LaneTreeSum16(lanes);
    }
  }
}

// Quantized weights: group width and signed integer value of element c.
template <QType T>
constexpr int Group() {
  return T == QType::Q4_G64 ? 64 : T == QType::Q4_G128 ? 128 : 32;
}
template <QType T>
int WeightQ(const uint8_t* row, int c) {
  if constexpr (T == QType::Q8_0) {
    return reinterpret_cast<const BlockQ8_0*>(row)[c / 32].qs[c % 32];
  } else {
    constexpr int G = Group<T>();
    const BlockQ4<G>& b = reinterpret_cast<const BlockQ4<G>*>(row)[c / G];
    const int j = c % G;
    return (j < G / 2 ? (b.qs[j] & 0x0F) : (b.qs[j - G / 2] >> 4)) - 8;
  }
}
// Scale of the weight block holding 32-wide activation block b.
template <QType T>
float WeightD(const uint8_t* row, int b) {
  if constexpr (T == QType::Q8_0) return F16ToF32(reinterpret_cast<const BlockQ8_0*>(row)[b].d);
  constexpr int G = Group<T>();
  return F16ToF32(reinterpret_cast<const BlockQ4<G>*>(row)[b * 32 / G].d);
}

// Row r of a row-layout matrix: D(b) = scale of 32-wide block b, Q(c) = value of element c.
template <QType T>
struct RowWeights {
  const uint8_t* row;
  float D(int b) const { return WeightD<T>(row, b); }
  int Q(int c) const { return WeightQ<T>(row, c); }
};
// Row r of a Layout::kPacked16 matrix (Q8_0, Q4_0), through quant/packed.h.
struct PackedWeights {
  const QMatrix& m;
  int r;
  float D(int b) const { return F16ToF32(packed::Scale(m, r, b)); }
  int Q(int c) const { return packed::Value(m, r, c); }
};

template <class Weights>
int32_t BlockDot(const Weights& w, const int8_t* xq, int b) {
  int32_t s = 0;
  for (int j = 32 * b; j < 32 * b + 32; ++j) s += w.Q(j) * xq[j];
  return s;
}

// y = sum_b (dw_b * dx_b) * isum_b in block order, whatever the layout; weights(r) gives
// row r's accessor.
template <class RowAccess>
void QuantSum(const QMatrix& W, int r0, int r1, const QuantActs* A, int n, float* Y, RowAccess weights) {
  const int nb = W.cols_padded / 32;
  for (int r = r0; r < r1; ++r) {
    const auto w = weights(r);
    for (int i = 0; i < n; ++i) {
      const int8_t* xq = A->Q(i);
      const float* dx = A->D(i);
      float acc = 0.0f;
      for (int b = 0; b < nb; ++b) acc += (w.D(b) * dx[b]) * static_cast<float>(BlockDot(w, xq, b));
      Y[static_cast<size_t>(i) * W.rows + r] = acc;
    }
  }
}

template <QType T>
void QuantRows(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  QuantSum(W, r0, r1, A, n, Y, [&](int r) { return RowWeights<T>{W.Row(r)}; });
}
void PackedRows(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  QuantSum(W, r0, r1, A, n, Y, [&](int r) { return PackedWeights{W, r}; });
}

template <QType T>
void BlockDotsT(const uint8_t* row, const int8_t* xq, int nblocks, int32_t* out) {
  for (int b = 0; b < nblocks; ++b) out[b] = BlockDot(RowWeights<T>{row}, xq, b);
}
void BlockDotsScalar(QType type, const uint8_t* row, const int8_t* xq, const int32_t*, int nblocks, int32_t* out) {
  switch (type) {
    case QType::Q8_0: return BlockDotsT<QType::Q8_0>(row, xq, nblocks, out);
    case QType::Q4_0: return BlockDotsT<QType::Q4_0>(row, xq, nblocks, out);
    case QType::Q4_G64: return BlockDotsT<QType::Q4_G64>(row, xq, nblocks, out);
    case QType::Q4_G128: return BlockDotsT<QType::Q4_G128>(row, xq, nblocks, out);
    default: std::fill(out, out + nblocks, 0);
  }
}

// The scalar kernels multiply and add separately (-ffp-contract=off), as does the probe.
double FmaProbeScalar(long steps) {
  float a[12];
  std::fill(a, a + 12, 1e-3f);
  for (long s = 0; s < steps; ++s)
    for (float& v : a) v = v * 0.999f + 1e-3f;
  float sum = 0.0f;
  for (float v : a) sum += v;
  asm volatile("" : : "x"(sum));
  return double(steps) * 12;
}

}  // namespace

const KernelFamily& ScalarKernels() {
  static const KernelFamily k = [] {
    KernelFamily f{.name = "scalar",
                   .quantize_acts = QuantizeActsScalar,
                   .block_dots = BlockDotsScalar,
                   .fma_probe = FmaProbeScalar};
    f.Set(QType::F32, FloatRows<QType::F32>, FloatRows<QType::F32>);
    f.Set(QType::F16, FloatRows<QType::F16>, FloatRows<QType::F16>);
    f.Set(QType::BF16, FloatRows<QType::BF16>, FloatRows<QType::BF16>);
    f.Set(QType::Q8_0, QuantRows<QType::Q8_0>, PackedRows);
    f.Set(QType::Q4_0, QuantRows<QType::Q4_0>, PackedRows);
    f.Set(QType::Q4_G64, QuantRows<QType::Q4_G64>, nullptr);
    f.Set(QType::Q4_G128, QuantRows<QType::Q4_G128>, nullptr);
    SetGroupKernels(f, {});
    return f;
  }();
  return k;
}

}  // namespace specsweep
