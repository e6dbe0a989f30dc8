// AVX2-level pieces shared by the AVX2 and AVX-512 K-quant kernels; included by each
// kernel file after its SPECSWEEP_TARGET_PUSH (quant/target_region.h), so they compile for that family.
//
// A super-block is unpacked into unsigned quants (Q4_K 0..15, Q5_K 0..31, Q6_K 0..63 =
// q + 32) and two vectors of 16 int16, one lane per 16-value group: G = scales, M = mins
// (Q4_K/Q5_K; Q6_K has none, its +32 is taken back as 32 * sum_k G_k bsum_k). The
// integer sums these give are exactly those of quant/kquants.h.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "quant/blocks_k.h"
#include "quant/fp16.h"
#include "quant/prefetch.h"
#include "quant/qmatrix.h"
#include "quant/qtype.h"

// Internal linkage: each including file compiles these for its own target, and no
// out-of-line copy may be shared between the families.
namespace specsweep {
namespace {
namespace kquant_simd {

// Q4_K/Q5_K: the 8 scales and 8 mins of the 6-bit packing (ScaleMinK4 in kquants.cpp),
// as G and M with each sub-block's value in both of its 16-value groups. Byte shuffles
// gather [s0..3 | s8..11 | s4..7 | s8..11] (low bits) and s0..3, s4..7 under the bytes
// whose top 2 bits they give; 16 bytes are read (the last 4 are quants, unused).
// ScalesMinsBytesK4 gives the bytes [scales 0..7 | mins 0..7] they are made from.
inline __m128i ScalesMinsBytesK4(const uint8_t* s) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m128i b = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 7));
  const __m128i lo = _mm_and_si128(a, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
  const __m128i hi4 =
      _mm_and_si128(_mm_srli_epi16(a, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
  const __m128i top = _mm_and_si128(_mm_srli_epi16(b, 2), _mm_setr_epi8(0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30, 0, 0, 0, 0,
                                                                        0x30, 0x30, 0x30, 0x30));
  return _mm_or_si128(_mm_or_si128(lo, hi4), top);
}
inline void ScalesMinsK4(const uint8_t* s, __m256i* g, __m256i* m) {
  const __m128i r = ScalesMinsBytesK4(s);
  *g = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r, r));
  *m = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r, r));
}

// Q6_K: the 16 signed scales as G.
inline __m256i ScalesQ6(const BlockQ6_K& b) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
}

// 32 quants of unit u (values 32 u .. 32 u + 31).
inline void UnpackQ4(const uint8_t* qs, __m256i q[8]) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (int c = 0; c < 4; ++c) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
    q[2 * c] = _mm256_and_si256(v, low);
    q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
  }
}
inline void UnpackQ5(const BlockQ5_K& b, __m256i q[8]) {
  UnpackQ4(b.qs, q);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  for (int j = 0; j < 8; ++j) {  // bit j of qh[l] is bit 4 of value 32 j + l
    const __m256i hb = _mm256_and_si256(_mm256_slli_epi16(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(j)), 4), bit4);
    q[j] = _mm256_or_si256(q[j], hb);
  }
}
inline void UnpackQ6(const BlockQ6_K& b, __m256i q[8]) {
  const __m256i low = _mm256_set1_epi8(0x0F), hi2 = _mm256_set1_epi8(0x30);
  for (int h = 0; h < 2; ++h) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
    const __m256i hq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
    q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(a, low), _mm256_and_si256(_mm256_slli_epi16(hq, 4), hi2));
    q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(c, low), _mm256_and_si256(_mm256_slli_epi16(hq, 2), hi2));
    q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low), _mm256_and_si256(hq, hi2));
    q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), low),
                                   _mm256_and_si256(_mm256_srli_epi16(hq, 2), hi2));
  }
}

// One super-block step of the 8 float lanes (quant/kquants.h): a = the lanes' integer
// dot products (scales applied), bs = the activation block's 16 group sums.
template <QType T>
inline __m256 LaneStep(__m256 lanes, __m256i a, __m256i bs, __m256i g, __m256i m, float d, float dmin, float dx) {
  if constexpr (T == QType::Q6_K) a = _mm256_sub_epi32(a, _mm256_slli_epi32(_mm256_madd_epi16(bs, g), 5));  // bias 32
  lanes = _mm256_add_ps(lanes, _mm256_mul_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(a)));
  if constexpr (T != QType::Q6_K)
    lanes =
        _mm256_sub_ps(lanes, _mm256_mul_ps(_mm256_set1_ps(dmin * dx), _mm256_cvtepi32_ps(_mm256_madd_epi16(bs, m))));
  return lanes;
}

// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
inline float LaneSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The row walk of the AVX2 row-layout kernels (K-quants, quant/kquant_avx2_rows.h; the
// 32-value types, quant/legacy_avx2_rows.h): per weight row, the activation rows in chunks
// of up to MaxCols, a chunk of one compiled apart (C = 1: its lanes stay in a register),
// others with C = 0: pass.template operator()<C>(r, i0, nc, window).
template <int MaxCols, class Pass>
inline void RowPasses(const QMatrix& W, int r0, int r1, int n, Pass&& pass) {
  WindowPrefetcher window(W.Row(r0));
  for (int r = r0; r < r1; ++r)
    for (int i0 = 0; i0 < n; i0 += MaxCols) {
      const int nc = std::min(MaxCols, n - i0);
      if (nc == 1)
        pass.template operator()<1>(r, i0, nc, window);
      else
        pass.template operator()<0>(r, i0, nc, window);
    }
}

}  // namespace kquant_simd
}  // namespace
}  // namespace specsweep
