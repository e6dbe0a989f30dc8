// AVX-512 kernel family (F/BW/VL + VNNI): 16-lane float FMAs with masked tails, and
// vpdpbusd integer dots over 64-element steps (two 32-wide activation blocks).
// Selected only when cpuid reports all of these features.
#include <immintrin.h>

#include <algorithm>
#include <cfloat>

#include "quant/blocks.h"
#include "quant/kernels.h"

// GCC 12 reports its own _mm512_undefined_* placeholders inside insert/extract/shuffle
// intrinsics as maybe-uninitialized; the lanes are fully written.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

#include "quant/kernel_driver.h"

namespace specsweep {
namespace {

// Lanes [0, n) set, n clamped to [0, 16].
inline __mmask16 FirstLanes(int n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// ---- float weights ---------------------------------------------------------------

struct F32W {
  static __m512 Load(const void* p) { return _mm512_loadu_ps(p); }
  static __m512 LoadMasked(const void* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
  static const uint8_t* At(const uint8_t* row, int c) { return row + 4 * c; }
};
struct F16W {
  static __m512 Load(const void* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  static __m512 LoadMasked(const void* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
  static const uint8_t* At(const uint8_t* row, int c) { return row + 2 * c; }
};
struct BF16W {
  static __m512 Widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 Load(const void* p) { return Widen(_mm256_loadu_si256(static_cast<const __m256i*>(p))); }
  static __m512 LoadMasked(const void* p, __mmask16 m) { return Widen(_mm256_maskz_loadu_epi16(m, p)); }
  static const uint8_t* At(const uint8_t* row, int c) { return row + 2 * c; }
};

template <class WL>
struct FloatBlk {
  static constexpr int kMaxAcc = 16;  // 32 zmm: 16 accumulators + 4 weights + activations
  template <int R, int C>
  static void Run(const QMatrix& W, int r, const float* X, const QuantActs*, int i0, float* Y) {
    const int cols = W.cols;
    const uint8_t* w[R];  // [R] rows
    const float* x[C];    // [C] activation rows
    for (int a = 0; a < R; ++a) w[a] = W.Row(r + a);
    for (int b = 0; b < C; ++b) x[b] = X + static_cast<size_t>(i0 + b) * cols;
    __m512 acc[R][C];  // one 16-lane accumulator per output element
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < C; ++b) acc[a][b] = _mm512_setzero_ps();
    const int full = cols & ~15;
    for (int c = 0; c < full; c += 16) {
      __m512 wv[R];
      for (int a = 0; a < R; ++a) wv[a] = WL::Load(WL::At(w[a], c));
      for (int b = 0; b < C; ++b) {
        const __m512 xv = _mm512_loadu_ps(x[b] + c);
        for (int a = 0; a < R; ++a) acc[a][b] = _mm512_fmadd_ps(wv[a], xv, acc[a][b]);
      }
    }
    if (full < cols) {  // masked last chunk: zeros in both operands
      const __mmask16 m = FirstLanes(cols - full);
      __m512 wv[R];
      for (int a = 0; a < R; ++a) wv[a] = WL::LoadMasked(WL::At(w[a], full), m);
      for (int b = 0; b < C; ++b) {
        const __m512 xv = _mm512_maskz_loadu_ps(m, x[b] + full);
        for (int a = 0; a < R; ++a) acc[a][b] = _mm512_fmadd_ps(wv[a], xv, acc[a][b]);
      }
    }
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < C; ++b)
        Y[static_cast<size_t>(i0 + b) * W.rows + r + a] = _mm512_reduce_add_ps(acc[a][b]);
  }
};

// ---- quantized weights -----------------------------------------------------------

// Step s covers elements [64 s, 64 s + 64) = activation blocks 2s, 2s+1. Load gives the
// 64 weights in element order (unsigned nibbles for Q4 types, int8 for Q8_0), Scale the
// per-lane weight scale (lanes 0-7: block 2s, 8-15: block 2s+1). The Half variants
// cover a last odd 32-wide block (Q8_0/Q4_0 rows with an odd block count).
// [f0 x8, f1 x8] from lanes 0 and 1 of v (one permute instead of two broadcasts+insert).
inline __m512 SpreadTwo(__m128 v) {
  const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
}
inline __m512 TwoScales(Half d0, Half d1) {
  return SpreadTwo(_mm_cvtph_ps(_mm_insert_epi16(_mm_cvtsi32_si128(d0), d1, 1)));
}
inline __m512 LowScale(Half d0) { return _mm512_maskz_mov_ps(0x00FF, _mm512_set1_ps(_cvtsh_ss(d0))); }

template <QType T>
struct QW;
template <>
struct QW<QType::Q8_0> {
  static constexpr bool kSigned = true;
  static const BlockQ8_0* B(const uint8_t* row) { return reinterpret_cast<const BlockQ8_0*>(row); }
  static __m512i Load(const uint8_t* row, int s) {
    const BlockQ8_0* b = B(row) + 2 * s;
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)), 1);
  }
  static __m512 Scale(const uint8_t* row, int s) { return TwoScales(B(row)[2 * s].d, B(row)[2 * s + 1].d); }
  static __m512i LoadHalf(const uint8_t* row, int s) {
    return _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B(row)[2 * s].qs)));
  }
  static __m512 ScaleHalf(const uint8_t* row, int s) { return LowScale(B(row)[2 * s].d); }
};
template <>
struct QW<QType::Q4_0> {
  static constexpr bool kSigned = false;
  static const BlockQ4_0* B(const uint8_t* row) { return reinterpret_cast<const BlockQ4_0*>(row); }
  static __m512i Load(const uint8_t* row, int s) {
    const BlockQ4_0* b = B(row) + 2 * s;
    const __m256i q01 = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs)), 1);
    const __m256i m = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(q01, m);                         // [lo0 | lo1]
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q01, 4), m);  // [hi0 | hi1]
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    return _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));  // [lo0 hi0 lo1 hi1]
  }
  static __m512 Scale(const uint8_t* row, int s) { return TwoScales(B(row)[2 * s].d, B(row)[2 * s + 1].d); }
  static __m512i LoadHalf(const uint8_t* row, int s) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(B(row)[2 * s].qs));
    const __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
    return _mm512_zextsi256_si512(v);
  }
  static __m512 ScaleHalf(const uint8_t* row, int s) { return LowScale(B(row)[2 * s].d); }
};
template <>
struct QW<QType::Q4_G64> {
  static constexpr bool kSigned = false;
  static const BlockQ4_G64* B(const uint8_t* row) { return reinterpret_cast<const BlockQ4_G64*>(row); }
  static __m512i Load(const uint8_t* row, int s) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B(row)[s].qs));
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
    return _mm512_and_si512(z, _mm512_set1_epi8(0x0F));  // [low nibbles | high nibbles]
  }
  static __m512 Scale(const uint8_t* row, int s) { return _mm512_set1_ps(_cvtsh_ss(B(row)[s].d)); }
  static __m512i LoadHalf(const uint8_t*, int) { return _mm512_setzero_si512(); }  // never: 64 | cols
  static __m512 ScaleHalf(const uint8_t*, int) { return _mm512_setzero_ps(); }
};
template <>
struct QW<QType::Q4_G128> {
  static constexpr bool kSigned = false;
  static const BlockQ4_G128* B(const uint8_t* row) { return reinterpret_cast<const BlockQ4_G128*>(row); }
  static __m512i Load(const uint8_t* row, int s) {
    __m512i q = _mm512_loadu_si512(B(row)[s / 2].qs);
    if (s & 1) q = _mm512_srli_epi16(q, 4);  // elements 64..127 are the high nibbles
    return _mm512_and_si512(q, _mm512_set1_epi8(0x0F));
  }
  static __m512 Scale(const uint8_t* row, int s) { return _mm512_set1_ps(_cvtsh_ss(B(row)[s / 2].d)); }
  static __m512i LoadHalf(const uint8_t*, int) { return _mm512_setzero_si512(); }  // never: 128 | cols
  static __m512 ScaleHalf(const uint8_t*, int) { return _mm512_setzero_ps(); }
};

// Per-column activation operands of one step.
struct ActStep {
  __m512i x;     // Q4: int8 values; Q8: values + 128 as unsigned bytes
  __m512 dx;     // per-lane activation scale
  __m512i corr;  // Q4: -8 * sum of each 4 values (offset of the nibbles)
};
template <QType T>
inline ActStep LoadAct(const QuantActs* A, int i, int s) {
  ActStep a;
  a.x = _mm512_load_si512(A->Q(i) + 64 * s);
  if (QW<T>::kSigned) a.x = _mm512_xor_si512(a.x, _mm512_set1_epi8(static_cast<char>(0x80)));
  const float* d = A->D(i) + 2 * s;
  a.dx = SpreadTwo(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(d))));
  a.corr = QW<T>::kSigned ? _mm512_setzero_si512() : _mm512_load_si512(A->Corr(i) + 16 * s);
  return a;
}
// Per-row correction for Q8_0: -128 * sum of each 4 weights (undoes the +128 bias of x).
template <QType T>
inline __m512i RowCorr(__m512i w) {
  if (!QW<T>::kSigned) return _mm512_setzero_si512();
  const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), w);
  return _mm512_sub_epi32(_mm512_setzero_si512(), s);
}
// 16 int32 lanes; lanes 0-7 sum to block 2s, 8-15 to block 2s+1, exactly.
template <QType T>
inline __m512i Isum(__m512i w, __m512i wcorr, const ActStep& a) {
  if constexpr (QW<T>::kSigned) return _mm512_dpbusd_epi32(wcorr, a.x, w);  // (x+128) w - 128 w
  return _mm512_dpbusd_epi32(a.corr, w, a.x);                              // nib x - 8 x
}

template <QType T>
struct QuantBlk {
  static constexpr int kMaxAcc = 8;
  template <int R, int C>
  static void Run(const QMatrix& W, int r, const float*, const QuantActs* A, int i0, float* Y) {
    const int nb = W.cols_padded / 32;
    const uint8_t* w[R];  // [R] rows
    for (int a = 0; a < R; ++a) w[a] = W.Row(r + a);
    __m512 acc[R][C];  // lane partial sums per output element
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < C; ++b) acc[a][b] = _mm512_setzero_ps();
    auto step = [&](int s, bool half) {
      __m512i wv[R], wc[R];
      __m512 dw[R];
      for (int a = 0; a < R; ++a) {
        wv[a] = half ? QW<T>::LoadHalf(w[a], s) : QW<T>::Load(w[a], s);
        dw[a] = half ? QW<T>::ScaleHalf(w[a], s) : QW<T>::Scale(w[a], s);
        wc[a] = RowCorr<T>(wv[a]);
      }
      for (int b = 0; b < C; ++b) {
        const ActStep act = LoadAct<T>(A, i0 + b, s);
        for (int a = 0; a < R; ++a) {
          const __m512 lanes = _mm512_cvtepi32_ps(Isum<T>(wv[a], wc[a], act));
          acc[a][b] = _mm512_fmadd_ps(lanes, _mm512_mul_ps(dw[a], act.dx), acc[a][b]);
        }
      }
    };
    for (int s = 0; s < nb / 2; ++s) step(s, false);
    if (nb & 1) step(nb / 2, true);
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < C; ++b)
        Y[static_cast<size_t>(i0 + b) * W.rows + r + a] = _mm512_reduce_add_ps(acc[a][b]);
  }
};

template <class Blk>
void Rows(const QMatrix& W, int r0, int r1, const float* X, const QuantActs* A, int n, float* Y) {
  kernel_driver::DriveRows<Blk>(W, r0, r1, X, A, n, Y);
}

void QuantizeActsAvx512(const float* x, int cols, int cols_padded, int8_t* q, float* d,
                        int32_t* corr) {
  for (int b = 0; b < cols_padded / 32; ++b) {
    const int left = cols - 32 * b;  // valid elements from the block start
    const __m512 v0 = _mm512_maskz_loadu_ps(FirstLanes(left), x + 32 * b);
    const __m512 v1 = _mm512_maskz_loadu_ps(FirstLanes(left - 16), x + 32 * b + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    float dd = amax / 127.0f;
    if (!(dd >= FLT_MIN)) dd = 0.0f;  // as the scalar oracle: no finite 1/d
    const __m512 id = _mm512_set1_ps(dd != 0.0f ? 1.0f / dd : 0.0f);
    const __m512i i0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i i1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i q8 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(i0)),
                                               _mm512_cvtepi32_epi8(i1), 1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), q8);
    d[b] = dd;
    const __m256i s4 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), q8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(corr + 8 * b),
                        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(s4, 3)));
  }
}

template <QType T>
void BlockDotsT(const uint8_t* row, const int8_t* xq, const int32_t* corr, int nblocks, int32_t* out) {
  for (int s = 0; 2 * s < nblocks; ++s) {
    const bool half = 2 * s + 1 == nblocks;
    const __m512i w = half ? QW<T>::LoadHalf(row, s) : QW<T>::Load(row, s);
    ActStep a;
    a.x = half ? _mm512_maskz_loadu_epi8(0xFFFFFFFFull, xq + 64 * s) : _mm512_loadu_si512(xq + 64 * s);
    if (QW<T>::kSigned) a.x = _mm512_xor_si512(a.x, _mm512_set1_epi8(static_cast<char>(0x80)));
    a.corr = QW<T>::kSigned ? _mm512_setzero_si512()
                            : _mm512_maskz_loadu_epi32(half ? 0x00FF : 0xFFFF, corr + 16 * s);
    const __m512i v = Isum<T>(w, RowCorr<T>(w), a);
    out[2 * s] = _mm512_mask_reduce_add_epi32(0x00FF, v);
    if (!half) out[2 * s + 1] = _mm512_mask_reduce_add_epi32(0xFF00, v);
  }
}

void BlockDotsAvx512(QType type, const uint8_t* row, const int8_t* xq, const int32_t* corr,
                     int nblocks, int32_t* out) {
  switch (type) {
    case QType::Q8_0: BlockDotsT<QType::Q8_0>(row, xq, corr, nblocks, out); break;
    case QType::Q4_0: BlockDotsT<QType::Q4_0>(row, xq, corr, nblocks, out); break;
    case QType::Q4_G64: BlockDotsT<QType::Q4_G64>(row, xq, corr, nblocks, out); break;
    case QType::Q4_G128: BlockDotsT<QType::Q4_G128>(row, xq, corr, nblocks, out); break;
    default: std::fill(out, out + nblocks, 0);
  }
}

}  // namespace

const KernelFamily& Avx512Kernels() {
  static const KernelFamily k = {
      "avx512",
      QuantizeActsAvx512,
      BlockDotsAvx512,
      {Rows<FloatBlk<F32W>>, Rows<FloatBlk<F16W>>, Rows<FloatBlk<BF16W>>, Rows<QuantBlk<QType::Q8_0>>,
       Rows<QuantBlk<QType::Q4_0>>, Rows<QuantBlk<QType::Q4_G64>>, Rows<QuantBlk<QType::Q4_G128>>},
  };
  return k;
}

}  // namespace specsweep

#pragma GCC pop_options
