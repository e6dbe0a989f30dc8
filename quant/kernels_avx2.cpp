// AVX2 + FMA + F16C kernel family (8-lane float, maddubs integer dots, packed Q8_0/Q4_0
// kernels of quant/kernels_avx2_packed.h). Compiled for those features regardless of the
// build flags and only selected when cpuid has them.
#include <immintrin.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/kquants.h"
#include "quant/packed.h"
#include "quant/prefetch.h"
#include "quant/target_region.h"

SPECSWEEP_TARGET_PUSH("avx2,fma,f16c")

#include "quant/kernel_driver.h"
#include "quant/kernels_avx2_packed.h"

namespace specsweep {
namespace {

// Fixed-order horizontal sums.
inline float Hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline int32_t HsumI(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// ---- float weights ---------------------------------------------------------------

// 8 weights at element c as floats; Elem is the storage type (for the zero-padded tail).
struct F32W {
  using Elem = float;
  static __m256 Load(const void* p) { return _mm256_loadu_ps(static_cast<const float*>(p)); }
};
struct F16W {
  using Elem = uint16_t;
  static __m256 Load(const void* p) { return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p))); }
};
struct BF16W {
  using Elem = uint16_t;
  static __m256 Load(const void* p) {
    const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  }
};

// The float order of quant/float_order.h: per output element two accumulators, lanes
// 0-7 and 8-15 of the 16-lane partial sums (columns 16k..16k+7 and 16k+8..16k+15), so
// y = Hsum(lo + hi) is LaneTreeSum16 of the scalar reference, bit for bit.
template <class WL>
struct FloatBlk {
  static constexpr int kMaxAcc = 4;  // output elements: 8 ymm accumulators + weights + activations
  // 2 x 2 tiles for n >= 2, each activation vector loaded once (the asm keeps GCC from
  // folding one load into every FMA that uses it): per 8 FMAs 4 weight and 4 activation
  // loads, against 2 + 8 in 1 x 4 tiles (docs/kernels.md, "Float tiles").
  static constexpr int kMaxCols = 2;
  template <int R, int C>
  static void Run(const QMatrix& W, int r, const float* X, const QuantActs*, int i0, float* Y) {
    using E = typename WL::Elem;
    const int cols = W.cols;
    const E* w[R];      // [R] row pointers
    const float* x[C];  // [C] activation rows
    for (int a = 0; a < R; ++a) w[a] = reinterpret_cast<const E*>(W.Row(r + a));
    for (int b = 0; b < C; ++b) x[b] = X + static_cast<size_t>(i0 + b) * cols;
    __m256 lo[R][C], hi[R][C];  // lanes 0-7 and 8-15 of each output element's partial sums
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < C; ++b) lo[a][b] = hi[a][b] = _mm256_setzero_ps();
    auto step = [&](const E* const* wp, const float* const* xp) {
      __m256 wl[R], wh[R];
      for (int a = 0; a < R; ++a) wl[a] = WL::Load(wp[a]), wh[a] = WL::Load(wp[a] + 8);
      for (int b = 0; b < C; ++b) {
        __m256 xl = _mm256_loadu_ps(xp[b]), xh = _mm256_loadu_ps(xp[b] + 8);
        if constexpr (R > 1 && C > 1) asm("" : "+x"(xl), "+x"(xh));  // one load each
        for (int a = 0; a < R; ++a) {
          lo[a][b] = _mm256_fmadd_ps(wl[a], xl, lo[a][b]);
          hi[a][b] = _mm256_fmadd_ps(wh[a], xh, hi[a][b]);
        }
      }
    };
    const int full = cols & ~15;
    for (int c = 0; c < full; c += 16) {
      const E* wp[R];
      const float* xp[C];
      for (int a = 0; a < R; ++a) wp[a] = w[a] + c;
      for (int b = 0; b < C; ++b) xp[b] = x[b] + c;
      step(wp, xp);
    }
    if (full < cols) {  // zero-padded last 16 columns: the same accumulators, the same order
      const int t = cols - full;
      E wt[R][16] = {};
      float xt[C][16] = {};
      const E* wp[R];
      const float* xp[C];
      for (int a = 0; a < R; ++a) std::memcpy(wt[a], w[a] + full, sizeof(E) * t), wp[a] = wt[a];
      for (int b = 0; b < C; ++b) std::memcpy(xt[b], x[b] + full, sizeof(float) * t), xp[b] = xt[b];
      step(wp, xp);
    }
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < C; ++b)
        Y[static_cast<size_t>(i0 + b) * W.rows + r + a] = Hsum(_mm256_add_ps(lo[a][b], hi[a][b]));
  }
};

// ---- quantized weights -----------------------------------------------------------

// The 32 weights of activation block s: unsigned nibbles 0..15 (Q4 types, offset 8 is
// applied through QuantActs::corr) or signed int8 (Q8_0), in element order.
template <QType T>
struct QW;
template <>
struct QW<QType::Q8_0> {
  static constexpr bool kSigned = true;
  static __m256i Load(const uint8_t* row, int s) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const BlockQ8_0*>(row)[s].qs));
  }
  static float Scale(const uint8_t* row, int s) { return _cvtsh_ss(reinterpret_cast<const BlockQ8_0*>(row)[s].d); }
};
template <>
struct QW<QType::Q4_0> {
  static constexpr bool kSigned = false;
  static __m256i Load(const uint8_t* row, int s) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const BlockQ4_0*>(row)[s].qs));
    const __m256i v = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);  // [low nibbles | high nibbles]
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
  }
  static float Scale(const uint8_t* row, int s) { return _cvtsh_ss(reinterpret_cast<const BlockQ4_0*>(row)[s].d); }
};
template <>
struct QW<QType::Q4_G64> {
  static constexpr bool kSigned = false;
  static __m256i Load(const uint8_t* row, int s) {
    const auto& b = reinterpret_cast<const BlockQ4_G64*>(row)[s / 2];
    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    if (s & 1) q = _mm256_srli_epi16(q, 4);  // elements 32..63 are the high nibbles
    return _mm256_and_si256(q, _mm256_set1_epi8(0x0F));
  }
  static float Scale(const uint8_t* row, int s) {
    return _cvtsh_ss(reinterpret_cast<const BlockQ4_G64*>(row)[s / 2].d);
  }
};
template <>
struct QW<QType::Q4_G128> {
  static constexpr bool kSigned = false;
  static __m256i Load(const uint8_t* row, int s) {
    const auto& b = reinterpret_cast<const BlockQ4_G128*>(row)[s / 4];
    // block s%4: 0,1 = low nibbles of qs[0..32), qs[32..64); 2,3 = their high nibbles
    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + (s & 1) * 32));
    if (s & 2) q = _mm256_srli_epi16(q, 4);
    return _mm256_and_si256(q, _mm256_set1_epi8(0x0F));
  }
  static float Scale(const uint8_t* row, int s) {
    return _cvtsh_ss(reinterpret_cast<const BlockQ4_G128*>(row)[s / 4].d);
  }
};

// 8 int32 lanes whose sum is the exact block dot product; lane k covers elements 4k..4k+3.
template <QType T>
inline __m256i Isum(__m256i w, __m256i x, __m256i corr) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (QW<T>::kSigned) {
    // maddubs needs an unsigned operand: |w| * (x * sign(w)); |pair| <= 2*128*127 fits int16.
    const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(p, ones);
  } else {
    // nibbles 0..15 times x: |pair| <= 2*15*127; corr = -8 * (sum of the 4 x) per lane.
    const __m256i p = _mm256_maddubs_epi16(w, x);
    return _mm256_add_epi32(_mm256_madd_epi16(p, ones), corr);
  }
}

template <QType T>
struct QuantBlk {
  static constexpr int kMaxAcc = 4;
  template <int R, int C>
  static void Run(const QMatrix& W, int r, const float*, const QuantActs* A, int i0, float* Y) {
    const int nb = W.cols_padded / 32;
    const uint8_t* w[R];  // [R] rows
    for (int a = 0; a < R; ++a) w[a] = W.Row(r + a);
    __m256 acc[R][C];  // lane partial sums per output element
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < C; ++b) acc[a][b] = _mm256_setzero_ps();
    for (int s = 0; s < nb; ++s) {
      __m256i wv[R];
      __m256 dw[R];
      for (int a = 0; a < R; ++a) {
        wv[a] = QW<T>::Load(w[a], s);
        dw[a] = _mm256_set1_ps(QW<T>::Scale(w[a], s));
      }
      for (int b = 0; b < C; ++b) {
        const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(A->Q(i0 + b) + 32 * s));
        const __m256 dx = _mm256_set1_ps(A->D(i0 + b)[s]);
        const __m256i corr = QW<T>::kSigned
                                 ? _mm256_setzero_si256()
                                 : _mm256_load_si256(reinterpret_cast<const __m256i*>(A->Corr(i0 + b) + 8 * s));
        for (int a = 0; a < R; ++a) {
          const __m256 lanes = _mm256_cvtepi32_ps(Isum<T>(wv[a], xv, corr));
          acc[a][b] = _mm256_fmadd_ps(lanes, _mm256_mul_ps(dw[a], dx), acc[a][b]);
        }
      }
    }
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < C; ++b) Y[static_cast<size_t>(i0 + b) * W.rows + r + a] = Hsum(acc[a][b]);
  }
};

template <class Blk>
void Rows(const QMatrix& W, int r0, int r1, const float* X, const QuantActs* A, int n, float* Y) {
  kernel_driver::DriveRows<Blk>(W, r0, r1, X, A, n, Y);
}

void QuantizeActsAvx2(const float* x, int cols, int cols_padded, int8_t* q, float* d, int32_t* corr) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int b = 0; b < cols_padded / 32; ++b) {
    const float* src = x + 32 * b;
    float tmp[32];  // [32] zero-padded partial block
    if (32 * b + 32 > cols) {
      std::fill(tmp, tmp + 32, 0.0f);
      if (32 * b < cols) std::memcpy(tmp, src, sizeof(float) * (cols - 32 * b));
      src = tmp;
    }
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(src + 8 * k);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    float dd = amax / 127.0f;
    if (!(dd >= FLT_MIN)) dd = 0.0f;
    const __m256 id = _mm256_set1_ps(dd != 0.0f ? 1.0f / dd : 0.0f);
    __m256i iv[4];
    for (int k = 0; k < 4; ++k)
      iv[k] =
          _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // int32 -> int8 with lane-crossing fix-up (values are within [-127, 127]).
    const __m256i p16a = _mm256_packs_epi32(iv[0], iv[1]);
    const __m256i p16b = _mm256_packs_epi32(iv[2], iv[3]);
    __m256i p8 = _mm256_packs_epi16(p16a, p16b);
    p8 = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), p8);
    d[b] = dd;
    const __m256i s4 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), p8), _mm256_set1_epi16(1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(corr + 8 * b),
                        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(s4, 3)));
  }
}

template <QType T>
void BlockDotsT(const uint8_t* row, const int8_t* xq, const int32_t* corr, int nblocks, int32_t* out) {
  for (int s = 0; s < nblocks; ++s) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * s));
    const __m256i cv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(corr + 8 * s));
    out[s] = HsumI(Isum<T>(QW<T>::Load(row, s), xv, cv));
  }
}

void BlockDotsAvx2(QType type, const uint8_t* row, const int8_t* xq, const int32_t* corr, int nblocks, int32_t* out) {
  switch (type) {
    case QType::Q8_0: BlockDotsT<QType::Q8_0>(row, xq, corr, nblocks, out); break;
    case QType::Q4_0: BlockDotsT<QType::Q4_0>(row, xq, corr, nblocks, out); break;
    case QType::Q4_G64: BlockDotsT<QType::Q4_G64>(row, xq, corr, nblocks, out); break;
    case QType::Q4_G128: BlockDotsT<QType::Q4_G128>(row, xq, corr, nblocks, out); break;
    default: std::fill(out, out + nblocks, 0);
  }
}

double FmaProbeAvx2(long steps) {
  return kernel_driver::FmaProbe(steps, _mm256_set1_ps(0.999f), _mm256_set1_ps(1e-3f), 8,
                                 [](__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); });
}

}  // namespace

const KernelFamily& Avx2Kernels() {
  static const KernelFamily k = [] {
    KernelFamily f{.name = "avx2",
                   .quantize_acts = QuantizeActsAvx2,
                   .block_dots = BlockDotsAvx2,
                   .fma_probe = FmaProbeAvx2};
    // Floats keep the row layout on this family.
    f.Set(QType::F32, Rows<FloatBlk<F32W>>, nullptr);
    f.Set(QType::F16, Rows<FloatBlk<F16W>>, nullptr);
    f.Set(QType::BF16, Rows<FloatBlk<BF16W>>, nullptr);
    f.Set(QType::Q8_0, Rows<QuantBlk<QType::Q8_0>>, PackedRows<QType::Q8_0, false>);
    f.Set(QType::Q4_0, Rows<QuantBlk<QType::Q4_0>>, PackedRows<QType::Q4_0, false>);
    f.Set(QType::Q4_G64, Rows<QuantBlk<QType::Q4_G64>>, nullptr);
    f.Set(QType::Q4_G128, Rows<QuantBlk<QType::Q4_G128>>, nullptr);
    SetGroupKernels(f, {KQuantRowsAvx2, LegacyRowsAvx2, LegacyPackedAvx2});
    return f;
  }();
  return k;
}

}  // namespace specsweep

SPECSWEEP_TARGET_POP()
