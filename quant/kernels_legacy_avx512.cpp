// AVX-512 (BW + VNNI) kernels for Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS on row layout
// (semantics: quant/legacy_quants.h; pieces: quant/legacy_simd.h). Per block pair, the 64
// unsigned values are unpacked once into one register (nibbles, a masked add for the high
// bits, a byte shuffle for the code book) and meet each activation row in one vpdpbusd;
// the 16 int32 lanes are exactly the reference's lanes of the two blocks, so the float
// step is one or two 512-bit fused multiply-adds per pair and activation row, and the
// result equals the scalar reference bit for bit. A lone last block (odd block count)
// runs as a pair with itself and a write mask on the second half.
//
// Two rows per pass (independent chains, shared activation loads), scales converted straight
// from the row and dx pairs expanded once per call. It still spends ~14 instructions per row
// and 64 values where the 16-row interleaved q4_0 kernel spends ~2, so models hold these
// types interleaved too (quant/legacy_avx512_packed.h, same bits); this kernel serves
// matrices left in row layout (docs/kernels.md, "Row kernels of q4_1, ...").
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

// Per activation row, dx of each block pair as one vector [dx_b x8 | dx_b1 x8] (the
// scales' float steps then take one multiply per pair and weight row).
struct PairDx {
  AlignedBuffer buf;
  int pairs = 0;
  const __m512* Row(int i) const { return reinterpret_cast<const __m512*>(buf.data()) + size_t(i) * pairs; }
};

const PairDx& ExpandDx(const QuantActs* A, int n, int nb) {
  static thread_local PairDx dx;
  dx.pairs = (nb + 1) / 2;
  const size_t bytes = size_t(n) * dx.pairs * 64;
  if (dx.buf.size() < bytes) dx.buf = AlignedBuffer(bytes);
  auto* out = reinterpret_cast<__m512*>(dx.buf.data());
  const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  for (int i = 0; i < n; ++i)
    for (int p = 0; p < dx.pairs; ++p)  // dx[2p + 1] exists: A's blocks cover ActsCols >= 64 p + 64
      out[size_t(i) * dx.pairs + p] =
          _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(
                                         _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(A->D(i) + 2 * p)))));
  return dx;
}

// The scales of blocks b, b1 as vectors [d_b x8 | d_b1 x8] (and the mins): the f16s are
// converted straight from the row (a masked load reads only them), then spread.
template <QType T>
inline void PairScales(const uint8_t* row, int b, bool lone, __m256 xs_scales, __m512* d, __m512* m) {
  if constexpr (T == QType::IQ4_XS) {
    const int k = b % 8;
    *d = _mm512_permutexvar_ps(_mm512_set_epi32(k + 1, k + 1, k + 1, k + 1, k + 1, k + 1, k + 1, k + 1, k, k, k, k, k,
                                                k, k, k),
                               _mm512_castps256_ps512(xs_scales));
  } else {
    constexpr int h = int(kBlockBytes<T> / 2);  // halves per block
    const __mmask16 want = HasMin(T) ? (lone ? 0x3 : 0x3 | 0x3 << h) : (lone ? 0x1 : 0x1 | 0x1 << h);
    const __m512 f = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(want, row + kBlockBytes<T> * b));
    *d = _mm512_permutexvar_ps(_mm512_set_epi32(h, h, h, h, h, h, h, h, 0, 0, 0, 0, 0, 0, 0, 0), f);
    if constexpr (HasMin(T))
      *m = _mm512_permutexvar_ps(_mm512_set_epi32(h + 1, h + 1, h + 1, h + 1, h + 1, h + 1, h + 1, h + 1, 1, 1, 1, 1, 1,
                                                  1, 1, 1),
                                 f);
  }
}

// Rows r .. r + R - 1 of W against activation rows i0 .. i0 + nc - 1 (C = nc when known,
// else 0). Two rows per pass share the activation loads and give the out-of-order core
// two independent chains of fused multiply-adds.
template <QType T, int R, int C>
inline void RowPass(const QMatrix& W, int r, int i0, int nc, const QuantActs* A, const PairDx& dx,
                    WindowPrefetcher& window, float* Y) {
  if constexpr (C > 0) nc = C;
  const int nb = W.cols_padded / 32;
  const uint8_t* rows[R];
  for (int t = 0; t < R; ++t) rows[t] = W.Row(r + t);
  const __m512i table = _mm512_broadcast_i32x4(Iq4Table());
  constexpr int NC = C > 0 ? C : kMaxCols;
  const int8_t* xq[NC];
  const int32_t* xc[NC];
  const __m512* xd[NC];
  __m512 lanes[R][NC];
  for (int c = 0; c < NC; ++c) {
    const int i = i0 + std::min(c, nc - 1);
    xq[c] = A->Q(i), xc[c] = A->Corr(i), xd[c] = dx.Row(i);
    for (int t = 0; t < R; ++t) lanes[t][c] = _mm512_setzero_ps();
  }
  __m256 xs_scales[R] = {};
  // Whole pairs, then a lone last block (its own instance, so the pair loop has no masks).
  auto step = [&]<bool lone>(int b) __attribute__((always_inline)) {
    const int b1 = lone ? b : b + 1;
    window.Reach(rows[R - 1] + kBlockBytes<T> * (b1 + 1) - 1);
    __m512i v[R];
    __m512 d[R], m[R];
    for (int t = 0; t < R; ++t) {
      if constexpr (T == QType::IQ4_XS)
        if (b % 8 == 0) xs_scales[t] = Iq4XsScales(rows[t] + kBlockBytes<T> * (b / 8));
      v[t] = Values<T>(rows[t], b, b1, table);
      m[t] = _mm512_setzero_ps();
      PairScales<T>(rows[t], b, lone, xs_scales[t], &d[t], &m[t]);
    }
    constexpr __mmask16 keep = lone ? 0x00FF : 0xFFFF;
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) {
      if (C == 0 && c >= nc) break;
      const __m512i x = _mm512_loadu_si512(xq[c] + 32 * b);
      const __m512i corr = _mm512_loadu_si512(xc[c] + 8 * b);
      __m512i init = _mm512_setzero_si512();
      if constexpr (kCorrShift<T> >= 0) init = _mm512_slli_epi32(corr, kCorrShift<T>);
      const __m512 dxv = xd[c][b / 2];
#pragma GCC unroll 2
      for (int t = 0; t < R; ++t) {
        const __m512i isum = _mm512_dpbusd_epi32(init, v[t], x);
        lanes[t][c] = _mm512_mask3_fmadd_ps(_mm512_mul_ps(d[t], dxv), _mm512_cvtepi32_ps(isum), lanes[t][c], keep);
        if constexpr (HasMin(T))  // + (m dx) xsum, xsum = -(corr >> 3)
          lanes[t][c] = _mm512_mask3_fnmadd_ps(_mm512_mul_ps(m[t], dxv), _mm512_cvtepi32_ps(_mm512_srai_epi32(corr, 3)),
                                               lanes[t][c], keep);
      }
    }
  };
  for (int b = 0; b + 1 < nb; b += 2) step.template operator()<false>(b);
  if (nb % 2) step.template operator()<true>(nb - 1);
  for (int t = 0; t < R; ++t)
    for (int c = 0; c < nc; ++c) Y[size_t(i0 + c) * W.rows + r + t] = _mm512_reduce_add_ps(lanes[t][c]);
}

template <QType T>
void LegacyRowsAvx512T(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  const PairDx& dx = ExpandDx(A, n, W.cols_padded / 32);
  WindowPrefetcher window(W.Row(r0));
  for (int r = r0; r < r1; r += 2)
    for (int i0 = 0; i0 < n; i0 += kMaxCols) {
      const int nc = std::min(kMaxCols, n - i0);
      if (r + 1 == r1)
        RowPass<T, 1, 0>(W, r, i0, nc, A, dx, window, Y);
      else if (nc == 1)
        RowPass<T, 2, 1>(W, r, i0, nc, A, dx, window, Y);
      else
        RowPass<T, 2, 0>(W, r, i0, nc, A, dx, window, Y);
    }
}

}  // namespace

RowsKernelFn LegacyRowsAvx512(QType type) {
  return ForLegacyType(type, [](auto t) -> RowsKernelFn { return LegacyRowsAvx512T<decltype(t)::value>; });
}

}  // namespace specsweep

SPECSWEEP_TARGET_POP()
