// The AVX2 kernels for Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS on row layout, shared by the avx2
// and avx2vnni families (Dot: how 32 unsigned weight bytes meet 32 int8 activations);
// included after the file's SPECSWEEP_TARGET_PUSH. One 256-bit register per block: its 8
// int32 lanes are the reference's lanes j of that block, accumulated into an even-block
// and an odd-block register (lanes 0-7 and 8-15 of quant/legacy_quants.h), whose sum is
// the first step of LaneTreeSum16. Float steps as the scalar reference: bit-identical.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "quant/kquant_simd.h"
#include "quant/legacy_quants.h"
#include "quant/legacy_simd.h"
#include "quant/prefetch.h"
#include "quant/qmatrix.h"

namespace specsweep {
namespace {
namespace legacy_avx2 {

using namespace legacy_simd;

constexpr int kMaxCols = 4;

// Bytes e of `bits` set -> 0xFF (e < 32): broadcast the 4 bytes, select each byte's bit.
inline __m256i BitsToBytes(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)),
                                             _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                                              2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// kquant_simd::LaneSum of t = even + odd is LaneTreeSum16 of the 16 lanes.
using kquant_simd::LaneSum;

template <class Dot, QType T, int C>
inline void RowPass(const QMatrix& W, int r, int i0, int nc, const QuantActs* A, WindowPrefetcher& window, float* Y) {
  if constexpr (C > 0) nc = C;
  const int nb = W.cols_padded / 32;
  const uint8_t* row = W.Row(r);
  // Without VNNI, IQ4 values are used signed (vpmaddubsw of value + 128 could saturate).
  constexpr bool kSignedIq4 = (T == QType::IQ4_NL || T == QType::IQ4_XS) && !Dot::kUnsignedIq4;
  const __m256i table = _mm256_broadcastsi128_si256(
      kSignedIq4 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)) : Iq4Table());
  __m256 lanes[C > 0 ? C : kMaxCols][2];
  for (int c = 0; c < nc; ++c) lanes[c][0] = lanes[c][1] = _mm256_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    window.Reach(row + kBlockBytes<T> * (b + 1) - 1);
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(Qs<T>(row, b)));
    __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), _mm256_set1_epi8(0x0F));
    if constexpr (T == QType::Q5_0 || T == QType::Q5_1)
      v = _mm256_or_si256(v, _mm256_and_si256(BitsToBytes(HighBits<T>(row, b)), _mm256_set1_epi8(16)));
    if constexpr (T == QType::IQ4_NL || T == QType::IQ4_XS) v = _mm256_shuffle_epi8(table, v);
    const __m128 s = Scales<T>(row, b, b);  // [d, m, ..] or [d, ..]
    const float d = _mm_cvtss_f32(s), m = HasMin(T) ? _mm_cvtss_f32(_mm_movehdup_ps(s)) : 0.0f;
    for (int c = 0; c < nc; ++c) {
      const int i = i0 + c;
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(A->Q(i) + 32 * b));
      const __m256i corr = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(A->Corr(i) + 8 * b));
      __m256i isum;
      if constexpr (kSignedIq4) {
        isum = Dot::Acc(_mm256_setzero_si256(), _mm256_sign_epi8(v, v), _mm256_sign_epi8(x, v));
      } else {
        __m256i init = _mm256_setzero_si256();
        if constexpr (kCorrShift<T> >= 0) init = _mm256_slli_epi32(corr, kCorrShift<T>);
        isum = Dot::Acc(init, v, x);
      }
      const float dx = A->D(i)[b];
      __m256& l = lanes[c][b % 2];
      l = _mm256_fmadd_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(isum), l);
      if constexpr (HasMin(T))  // + (m dx) xsum, xsum = -(corr >> 3)
        l = _mm256_fnmadd_ps(_mm256_set1_ps(m * dx), _mm256_cvtepi32_ps(_mm256_srai_epi32(corr, 3)), l);
    }
  }
  for (int c = 0; c < nc; ++c) Y[size_t(i0 + c) * W.rows + r] = LaneSum(_mm256_add_ps(lanes[c][0], lanes[c][1]));
}

template <class Dot, QType T>
void Rows(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  kquant_simd::RowPasses<kMaxCols>(W, r0, r1, n, [&]<int C>(int r, int i0, int nc, WindowPrefetcher& window) {
    RowPass<Dot, T, C>(W, r, i0, nc, A, window, Y);
  });
}

template <class Dot>
RowsKernelFn Select(QType type) {
  return ForLegacyType(type, [](auto t) -> RowsKernelFn { return Rows<Dot, decltype(t)::value>; });
}

}  // namespace legacy_avx2
}  // namespace
}  // namespace specsweep
