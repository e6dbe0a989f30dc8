// AVX-512 (BW + VNNI) kernels for Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS on row layout
// (semantics: quant/legacy_quants.h; pieces: quant/legacy_simd.h). Per block pair, the 64
// unsigned values are unpacked once into one register (nibbles, a masked add for the high
// bits, a byte shuffle for the code book) and meet each activation row in one vpdpbusd;
// the 16 int32 lanes are exactly the reference's lanes of the two blocks, so the float
// step is one or two 512-bit fused multiply-adds per pair and activation row, and the
// result equals the scalar reference bit for bit. A lone last block (odd block count)
// runs as a pair with itself and a write mask on the second half.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "quant/legacy_quants.h"
#include "quant/prefetch.h"
#include "quant/qmatrix.h"
#include "quant/target_region.h"

#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wpsabi"
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's _mm512_broadcast_i32x4 placeholder
#endif
SPECSWEEP_TARGET_PUSH("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")

#include "quant/legacy_simd.h"

namespace specsweep {
namespace {

using namespace legacy_simd;

constexpr int kMaxCols = 4;  // activation rows per pass over a weight row

// The unsigned values of blocks b, b1 (legacy_simd.h): bytes 0..31 block b, 32..63 b1.
template <QType T>
inline __m512i Values(const uint8_t* row, int b, int b1, __m512i table) {
  const __m256i y = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(Qs<T>(row, b1)),
                                        reinterpret_cast<const __m128i*>(Qs<T>(row, b)));
  const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(y), _mm256_srli_epi16(y, 4), 1);
  // [low nibbles b | low b1 | high b | high b1] -> [low b | high b | low b1 | high b1]
  __m512i v = _mm512_and_si512(_mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0)), _mm512_set1_epi8(0x0F));
  if constexpr (T == QType::Q5_0 || T == QType::Q5_1) {
    const __mmask64 high = _cvtu64_mask64(HighBits<T>(row, b) | uint64_t(HighBits<T>(row, b1)) << 32);
    v = _mm512_mask_add_epi8(v, high, v, _mm512_set1_epi8(16));
  }
  if constexpr (T == QType::IQ4_NL || T == QType::IQ4_XS) v = _mm512_shuffle_epi8(table, v);
  return v;
}

// Rows r of W against activation rows i0 .. i0 + nc - 1 (C = nc when known, else 0).
template <QType T, int C>
inline void RowPass(const QMatrix& W, int r, int i0, int nc, const QuantActs* A, WindowPrefetcher& window,
                    float* Y) {
  if constexpr (C > 0) nc = C;
  const int nb = W.cols_padded / 32;
  const uint8_t* row = W.Row(r);
  const __m512i table = _mm512_broadcast_i32x4(Iq4Table());
  const __m512i lo8 = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i d_idx = HasMin(T) ? _mm512_slli_epi32(lo8, 1) : lo8;     // d_b, d_b1 lanes
  const __m512i m_idx = _mm512_add_epi32(d_idx, _mm512_set1_epi32(1));   // m_b, m_b1
  __m512 lanes[C > 0 ? C : kMaxCols];
  for (int c = 0; c < nc; ++c) lanes[c] = _mm512_setzero_ps();
  for (int b = 0; b < nb; b += 2) {
    const bool lone = b + 1 == nb;
    const int b1 = lone ? b : b + 1;
    window.Reach(row + kBlockBytes<T> * (b1 + 1) - 1);
    const __m512i v = Values<T>(row, b, b1, table);
    const __m128 s = Scales<T>(row, b, b1);
    const __mmask16 keep = lone ? 0x00FF : 0xFFFF;
    for (int c = 0; c < nc; ++c) {
      const int i = i0 + c;
      const __m512i x = _mm512_loadu_si512(A->Q(i) + 32 * b);
      const __m512i corr = _mm512_loadu_si512(A->Corr(i) + 8 * b);
      __m512i init = _mm512_setzero_si512();
      if constexpr (kCorrShift<T> >= 0) init = _mm512_slli_epi32(corr, kCorrShift<T>);
      const __m512i isum = _mm512_dpbusd_epi32(init, v, x);
      __m128 dx = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(A->D(i) + b)));
      if constexpr (HasMin(T)) dx = _mm_unpacklo_ps(dx, dx);  // [dx_b, dx_b, dx_b1, dx_b1]
      const __m512 prod = _mm512_castps128_ps512(_mm_mul_ps(s, dx));
      lanes[c] = _mm512_mask3_fmadd_ps(_mm512_permutexvar_ps(d_idx, prod), _mm512_cvtepi32_ps(isum), lanes[c], keep);
      if constexpr (HasMin(T))  // + (m dx) xsum, xsum = -(corr >> 3)
        lanes[c] = _mm512_mask3_fnmadd_ps(_mm512_permutexvar_ps(m_idx, prod),
                                          _mm512_cvtepi32_ps(_mm512_srai_epi32(corr, 3)), lanes[c], keep);
    }
  }
  for (int c = 0; c < nc; ++c) Y[size_t(i0 + c) * W.rows + r] = _mm512_reduce_add_ps(lanes[c]);
}

template <QType T>
void LegacyRowsAvx512T(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  WindowPrefetcher window(W.Row(r0));
  for (int r = r0; r < r1; ++r)
    for (int i0 = 0; i0 < n; i0 += kMaxCols) {
      const int nc = std::min(kMaxCols, n - i0);
      if (nc == 1) RowPass<T, 1>(W, r, i0, nc, A, window, Y);
      else RowPass<T, 0>(W, r, i0, nc, A, window, Y);
    }
}

}  // namespace

RowsKernelFn LegacyRowsAvx512(QType type) {
  switch (type) {
    case QType::Q4_1: return LegacyRowsAvx512T<QType::Q4_1>;
    case QType::Q5_0: return LegacyRowsAvx512T<QType::Q5_0>;
    case QType::Q5_1: return LegacyRowsAvx512T<QType::Q5_1>;
    case QType::IQ4_NL: return LegacyRowsAvx512T<QType::IQ4_NL>;
    case QType::IQ4_XS: return LegacyRowsAvx512T<QType::IQ4_XS>;
    default: return nullptr;
  }
}

}  // namespace specsweep

SPECSWEEP_TARGET_POP()
