// AVX-512 (BW + VNNI) K-quant kernels (Q4_K, Q5_K, Q6_K on row layout). Two
// weight rows per pass: per super-block both rows are unpacked once into 4 vectors of
// 64 unsigned quants each, then per activation row and 64 values one vpmaddubsw (u8 x s8
// -> int16 pairs) and one vpdpwssd with the groups' scales (int16 x int16 -> int32,
// accumulated). The two rows' 8 integer lanes share one vector, so the float step of
// quant/kquants.h is one 512-bit step per row pair. Integer sums exact, float steps
// those of the scalar reference: bit-identical. Two rows per pass beat one row with
// value-order shuffles (docs/kernels.md, "K-quant kernels").
//
// Q4_K/Q5_K quants are used in storage order: 64 bytes of qs hold chunks 2p, 2p + 1,
// whose low nibbles are values 128 p + 0..31 and + 64..95 and whose high nibbles are
// + 32..63 and + 96..127. The activation rows are permuted once per call to match
// (PermuteActs), so no weight shuffles are needed; each 256-bit half of a vector is
// then one 32-value sub-block.
//
// Verification (n >= 2) of Q4_K and Q5_K takes the dot layout instead: each vector pair's
// quants dword-interleaved so that vpdpbusd sums 4 values per lane and one vpackssdw +
// vpdpwssd scales two sub-blocks' sums at once (PairStep).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "quant/blocks_k.h"
#include "quant/fp16.h"
#include "quant/kquants.h"
#include "quant/prefetch.h"
#include "quant/qmatrix.h"
#include "quant/qtype.h"
#include "quant/target_region.h"

#if !defined(__clang__)
// GCC 12 reports its own _mm512_undefined_* placeholders inside insert/extract/shuffle
// intrinsics as maybe-uninitialized (the lanes are fully written), and where the baseline
// lacks AVX-512, lambdas taking or returning __m512 draw -Wpsabi (an ABI note that cannot
// matter: they never leave this file).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
SPECSWEEP_TARGET_PUSH("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")

#include "quant/kquant_simd.h"
#include "quant/prefetch.h"

namespace specsweep {
namespace {

using namespace kquant_simd;

constexpr int kMaxCols = 16;  // activation rows per pass over a weight row pair

// Sub-block of each 256-bit half of vector v (Q4_K/Q5_K storage order).
constexpr int SubLo(int v) { return 4 * (v / 2) + v % 2; }
constexpr int SubHi(int v) { return 4 * (v / 2) + v % 2 + 2; }

// Sub-block in half h of unpacked vector v (UnpackPair before Interleave: v = 2p holds the
// low nibbles of qs/ql bytes 64p .. 64p + 63, v = 2p + 1 their high nibbles).
template <QType T>
constexpr int Sub(int v, int h) {
  if constexpr (T == QType::Q6_K) return 4 * (v / 2) + 2 * (v % 2) + h;
  return h ? SubHi(v) : SubLo(v);
}

// Word indices for vpermw: the scales of row t for vector v (quant pairs: from [row 0: 8
// scales, 8 mins | row 1: ...] for Q4_K/Q5_K, [row 0: 16 scales | row 1: ...] for Q6_K)
// and, for the dot layout (PairStep), of row t's packed words for vectors 2p, 2p + 1
// (per 128-bit lane L, words alternate sub-blocks Sub(2p, L / 2), Sub(2p + 1, L / 2) of
// groups 2b + L % 2); mins per 16-value group of both rows; float indices for vpermps: d
// and dmin of both rows from their block headers converted to float.
template <QType T>
struct Index {
  alignas(64) int16_t s4[2][4][32];
  alignas(64) int16_t s6[2][4][32];
  alignas(64) int16_t sc[2][2][32];
  alignas(64) int16_t m4[32];
  alignas(64) int32_t d[16], dmin[16];
  constexpr Index() : s4{}, s6{}, sc{}, m4{}, d{}, dmin{} {
    for (int t = 0; t < 2; ++t)
      for (int v = 0; v < 4; ++v)
        for (int l = 0; l < 32; ++l) {
          s4[t][v][l] = static_cast<int16_t>(16 * t + (l < 16 ? SubLo(v) : SubHi(v)));
          s6[t][v][l] = static_cast<int16_t>(16 * t + 4 * v + l / 8);  // int16 lane l: values 2l, 2l + 1
        }
    for (int t = 0; t < 2; ++t)
      for (int p = 0; p < 2; ++p)
        for (int w = 0; w < 32; ++w) {
          const int lane = w / 8, b = Sub<T>(2 * p + w % 2, lane / 2);
          sc[t][p][w] = static_cast<int16_t>(16 * t + (T == QType::Q6_K ? 2 * b + lane % 2 : b));
        }
    for (int l = 0; l < 32; ++l) m4[l] = static_cast<int16_t>(16 * (l / 16) + 8 + (l % 16) / 2);
    for (int l = 0; l < 16; ++l) {
      d[l] = 8 * (l / 8);
      dmin[l] = 8 * (l / 8) + 1;
    }
  }
};
template <QType T>
constexpr Index<T> kIndex;

// Two rows' super-blocks, unpacked.
struct Pair {
  __m512i q[2][4];   // [row][vector]: 64 unsigned quants (order above; dot: PairStep's)
  __m512i sc[2][4];  // [row][vector]: int16 scale of each quant pair (dot: of each packed word)
  __m512i m;         // [row 0: 16 groups | row 1: 16 groups] int16 mins (Q6_K: scales)
  __m512 d, dmin;    // [row 0 x 8 | row 1 x 8]
};

inline void UnpackNibbles(const uint8_t* qs, __m512i q[4]) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int p = 0; p < 2; ++p) {
    const __m512i z = _mm512_loadu_si512(qs + 64 * p);
    q[2 * p] = _mm512_and_si512(z, low);
    q[2 * p + 1] = _mm512_and_si512(_mm512_srli_epi16(z, 4), low);
  }
}

// Q4_K/Q5_K scales and mins of both rows from their 16-byte headers (d, dmin, scales):
// [row 0: 8 scales, 8 mins | row 1: ...] as 32 int16 (ScalesMinsK4 shifted by the 4
// header bytes, one row per 128-bit lane).
inline __m512i ScalesMinsPair(__m256i h) {
  const __m256i a = _mm256_shuffle_epi8(h, _mm256_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15, 4,
                                                            5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m256i b = _mm256_shuffle_epi8(h, _mm256_setr_epi8(4, 4, 4, 4, 4, 5, 6, 7, 4, 4, 4, 4, 8, 9, 10, 11, 4, 4, 4,
                                                            4, 4, 5, 6, 7, 4, 4, 4, 4, 8, 9, 10, 11));
  const __m256i lo = _mm256_and_si256(a, _mm256_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0,
                                                          63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
  const __m256i hi4 =
      _mm256_and_si256(_mm256_srli_epi16(a, 4), _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15, 0,
                                                                 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
  const __m256i top =
      _mm256_and_si256(_mm256_srli_epi16(b, 2),
                       _mm256_setr_epi8(0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30, 0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30, 0, 0, 0,
                                        0, 0x30, 0x30, 0x30, 0x30, 0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30));
  return _mm512_cvtepu8_epi16(_mm256_or_si256(_mm256_or_si256(lo, hi4), top));
}

template <QType T, bool Dot>
inline void UnpackPair(const uint8_t* b0, const uint8_t* b1, Pair& u) {
  const uint8_t* blk[2] = {b0, b1};
  if constexpr (T == QType::Q6_K) {
    const __m512i low = _mm512_set1_epi8(0x0F), hi2 = _mm512_set1_epi8(0x30);
    // High bits of value l (l < 32) of each 32: qh[l] bits 0-1, 2-3, 4-5, 6-7 for the
    // four 32-value quarters of a 128 half; shifted per 256-bit half to bits 4-5.
    const __m512i shl = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    for (int t = 0; t < 2; ++t) {
      const auto& b = *reinterpret_cast<const BlockQ6_K*>(blk[t]);
      for (int h = 0; h < 2; ++h) {
        const __m512i ql = _mm512_loadu_si512(b.ql + 64 * h);
        const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h)));
        u.q[t][2 * h] = _mm512_or_si512(_mm512_and_si512(ql, low), _mm512_and_si512(_mm512_sllv_epi16(qh, shl), hi2));
        u.q[t][2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low),
                                            _mm512_and_si512(_mm512_srlv_epi16(qh, shr), hi2));
      }
    }
    const auto& q0 = *reinterpret_cast<const BlockQ6_K*>(b0);
    const auto& q1 = *reinterpret_cast<const BlockQ6_K*>(b1);
    const __m256i s8 =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q0.scales))),
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(q1.scales)), 1);
    u.m = _mm512_cvtepi8_epi16(s8);  // [row 0: 16 scales | row 1: 16 scales]
    for (int t = 0; t < 2; ++t)
      for (int v = 0; v < 4; ++v) u.sc[t][v] = _mm512_permutexvar_epi16(_mm512_load_si512(kIndex<T>.s6[t][v]), u.m);
    u.d = _mm512_insertf32x8(_mm512_set1_ps(_cvtsh_ss(q0.d)), _mm256_set1_ps(_cvtsh_ss(q1.d)), 1);
    u.dmin = _mm512_setzero_ps();
  } else {
    for (int t = 0; t < 2; ++t) {
      if constexpr (T == QType::Q4_K) {
        UnpackNibbles(reinterpret_cast<const BlockQ4_K*>(blk[t])->qs, u.q[t]);
      } else {
        const auto& b = *reinterpret_cast<const BlockQ5_K*>(blk[t]);
        UnpackNibbles(b.qs, u.q[t]);
        // Bit j of qh[l] is bit 4 of value 32 j + l; vector v's halves are sub-blocks
        // SubLo(v), SubHi(v).
        const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh)));
        const __m512i bit4 = _mm512_set1_epi8(0x10);
        for (int v = 0; v < 4; ++v) {
          const __m512i sel =
              _mm512_inserti64x4(_mm512_set1_epi8(char(1 << SubLo(v))), _mm256_set1_epi8(char(1 << SubHi(v))), 1);
          u.q[t][v] = _mm512_mask_add_epi8(u.q[t][v], _mm512_test_epi8_mask(qh, sel), u.q[t][v], bit4);
        }
      }
    }
    const __m256i h =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0))),
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1)), 1);
    const __m512i sm = ScalesMinsPair(h);
    for (int t = 0; t < 2; ++t)
      for (int v = 0; v < (Dot ? 2 : 4); ++v)
        u.sc[t][v] = _mm512_permutexvar_epi16(_mm512_load_si512(Dot ? kIndex<T>.sc[t][v] : kIndex<T>.s4[t][v]), sm);
    u.m = _mm512_permutexvar_epi16(_mm512_load_si512(kIndex<T>.m4), sm);
    const __m512 f = _mm512_cvtph_ps(h);  // row 0's d, dmin in floats 0, 1; row 1's in 8, 9
    u.d = _mm512_permutexvar_ps(_mm512_load_si512(kIndex<T>.d), f);
    u.dmin = _mm512_permutexvar_ps(_mm512_load_si512(kIndex<T>.dmin), f);
  }
  if constexpr (!Dot) return;
  // Vectors 2p, 2p + 1 dword-interleaved (PairStep).
  for (int t = 0; t < 2; ++t)
    for (int p = 0; p < 2; ++p) {
      const __m512i lo = u.q[t][2 * p], hi = u.q[t][2 * p + 1];
      u.q[t][2 * p] = _mm512_unpacklo_epi32(lo, hi);
      u.q[t][2 * p + 1] = _mm512_unpackhi_epi32(lo, hi);
    }
}

// One super-block step of both rows' lanes for activation row values xq (PermuteActs'
// order), group sums bs and scale dx (quant/kquants.h). Quant pairs: per 64 values and
// row one vpmaddubsw and one vpdpwssd with the scales. Dot: per 64 values and row one
// vpdpbusd gives each 4-value group's sum (|sum| <= 4 * 63 * 127: int16), vpackssdw puts
// the same lane's groups of two sub-blocks side by side and one vpdpwssd per 128 values
// scales both and adds them into the lane (12 multiply instructions per row pair and 256
// values instead of 16; docs/kernels.md, "K-quant kernels").
template <QType T, bool Dot>
inline __m512 PairStep(__m512 lanes, const Pair& u, const int8_t* xq, const int16_t* bs, float dx) {
  __m512i a[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
  if constexpr (Dot) {
    for (int p = 0; p < 2; ++p) {
      const __m512i x0 = _mm512_load_si512(xq + 128 * p), x1 = _mm512_load_si512(xq + 128 * p + 64);
      for (int t = 0; t < 2; ++t) {
        const __m512i p0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u.q[t][2 * p], x0);
        const __m512i p1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u.q[t][2 * p + 1], x1);
        a[t] = _mm512_dpwssd_epi32(a[t], _mm512_packs_epi32(p0, p1), u.sc[t][p]);
      }
    }
  } else {
    for (int v = 0; v < 4; ++v) {
      const __m512i x = _mm512_load_si512(xq + 64 * v);
      for (int t = 0; t < 2; ++t) a[t] = _mm512_dpwssd_epi32(a[t], _mm512_maddubs_epi16(u.q[t][v], x), u.sc[t][v]);
    }
  }
  // Lane j of each row: its two 256-bit halves added; row 0 low, row 1 high.
  __m512i s = _mm512_add_epi32(_mm512_shuffle_i64x2(a[0], a[1], 0x44), _mm512_shuffle_i64x2(a[0], a[1], 0xEE));
  const __m512i b = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bs)));
  if constexpr (T == QType::Q6_K) s = _mm512_sub_epi32(s, _mm512_slli_epi32(_mm512_madd_epi16(b, u.m), 5));  // bias 32
  const __m512 vdx = _mm512_set1_ps(dx);
  lanes = _mm512_add_ps(lanes, _mm512_mul_ps(_mm512_mul_ps(u.d, vdx), _mm512_cvtepi32_ps(s)));
  if constexpr (T != QType::Q6_K)
    lanes =
        _mm512_sub_ps(lanes, _mm512_mul_ps(_mm512_mul_ps(u.dmin, vdx), _mm512_cvtepi32_ps(_mm512_madd_epi16(b, u.m))));
  return lanes;
}

// Activation rows in the order of the quants: per 128 values p of a super-block, the
// sub-blocks Sub(2p, h) in bytes 0..63 and Sub(2p + 1, h) in 64..127 (h = 0 the low 32
// bytes of each, h = 1 the high: Q4_K, Q5_K; Q6_K's vectors are in value order and use
// A's rows directly); dot layout: the two dword-interleaved as the quants are
// (vpunpckldq in bytes 0..63, vpunpckhdq in 64..127).
struct Acts {
  AlignedBuffer buf;
  const int8_t* rows = nullptr;
  size_t stride = 0;
  const int8_t* Row(int i) const { return rows + stride * i; }
};

template <QType T, bool Dot>
const Acts& PermuteActs(const QuantActs* A, int n, int cols) {
  static thread_local Acts acts;
  acts.stride = A->cols_k;
  if constexpr (T == QType::Q6_K && !Dot) {
    acts.rows = A->KQ(0);
    return acts;
  }
  const size_t bytes = size_t(n) * A->cols_k;
  if (acts.buf.size() < bytes) acts.buf = AlignedBuffer(bytes);
  auto* out = reinterpret_cast<int8_t*>(acts.buf.data());
  auto sub = [](const int8_t* x, int b) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(x + 32 * b)); };
  for (int i = 0; i < n; ++i)
    for (int s = 0; s < cols; s += kQK)
      for (int p = 0; p < 2; ++p)
        for (int h = 0; h < 2; ++h) {
          const int8_t* x = A->KQ(i) + s;
          const __m256i a = sub(x, Sub<T>(2 * p, h)), b = sub(x, Sub<T>(2 * p + 1, h));
          int8_t* o = out + size_t(i) * A->cols_k + s + 128 * p + 32 * h;
          if constexpr (Dot) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(o), _mm256_unpacklo_epi32(a, b));
            _mm256_store_si256(reinterpret_cast<__m256i*>(o + 64), _mm256_unpackhi_epi32(a, b));
          } else {
            _mm256_store_si256(reinterpret_cast<__m256i*>(o), a);
            _mm256_store_si256(reinterpret_cast<__m256i*>(o + 64), b);
          }
        }
  acts.rows = out;
  return acts;
}

// Rows r, r1 (r1 == r: a single last row) against activation rows i0 .. i0 + nc - 1;
// C = nc when known at compile time (1: the decode step keeps its lanes in a register),
// 0 otherwise.
template <QType T, int C, bool Dot>
inline void PairPass(const QMatrix& W, int r, int r1, int i0, int nc, const QuantActs* A, const Acts& X,
                     WindowPrefetcher& window, float* Y) {
  if constexpr (C > 0) nc = C;
  constexpr size_t bytes = T == QType::Q4_K   ? sizeof(BlockQ4_K)
                           : T == QType::Q5_K ? sizeof(BlockQ5_K)
                                              : sizeof(BlockQ6_K);
  const int nsb = W.cols_padded / kQK;
  const uint8_t* row0 = W.Row(r);
  const uint8_t* row1 = W.Row(r1);
  __m512 lanes[C > 0 ? C : kMaxCols];
  for (int c = 0; c < nc; ++c) lanes[c] = _mm512_setzero_ps();
  for (int s = 0; s < nsb; ++s) {
    // The pair's bytes (row1 follows row0) counted as consumed at their average pace:
    // reaching row1's position at once burst the whole of row0 at the start of each
    // pair (docs/kernels.md, "K-quant kernels").
    window.Reach(row0 + size_t(r1 - r + 1) * (s + 1) * bytes - 1);
    Pair u;
    UnpackPair<T, Dot>(row0 + s * bytes, row1 + s * bytes, u);
    for (int c = 0; c < nc; ++c) {
      const int i = i0 + c;
      lanes[c] = PairStep<T, Dot>(lanes[c], u, X.Row(i) + kQK * s, A->KBSum(i) + 16 * s, A->KD(i)[s]);
    }
  }
  for (int c = 0; c < nc; ++c) {
    float* y = Y + size_t(i0 + c) * W.rows;
    y[r] = LaneSum(_mm512_castps512_ps256(lanes[c]));
    if (r1 != r) y[r1] = LaneSum(_mm512_extractf32x8_ps(lanes[c], 1));
  }
}

template <QType T, bool Dot>
void KRows(const QMatrix& W, int r0, int r1, const QuantActs* A, int n, float* Y) {
  const Acts& X = PermuteActs<T, Dot>(A, n, W.cols_padded);
  WindowPrefetcher window(W.Row(r0));
  for (int r = r0; r < r1; r += 2) {
    const int rb = std::min(r + 1, r1 - 1);
    for (int i0 = 0; i0 < n; i0 += kMaxCols) {
      const int nc = std::min(kMaxCols, n - i0);
      if (nc == 1)
        PairPass<T, 1, Dot>(W, r, rb, i0, nc, A, X, window, Y);
      else
        PairPass<T, 0, Dot>(W, r, rb, i0, nc, A, X, window, Y);
    }
  }
}

// The dot layout for verification (n >= 2) of Q4_K and Q5_K; decode and Q6_K keep the
// quant pairs, which the dot layout did not beat there (docs/kernels.md).
template <QType T>
void KRowsAvx512(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  if (T != QType::Q6_K && n >= 2)
    KRows<T, true>(W, r0, r1, A, n, Y);
  else
    KRows<T, false>(W, r0, r1, A, n, Y);
}

}  // namespace

RowsKernelFn KQuantRowsAvx512(QType type) {
  switch (type) {
    case QType::Q4_K: return KRowsAvx512<QType::Q4_K>;
    case QType::Q5_K: return KRowsAvx512<QType::Q5_K>;
    case QType::Q6_K: return KRowsAvx512<QType::Q6_K>;
    default: return nullptr;
  }
}

}  // namespace specsweep

SPECSWEEP_TARGET_POP()
