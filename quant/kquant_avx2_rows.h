// The AVX2-level K-quant kernels (Q4_K, Q5_K, Q6_K on row layout), shared by the avx2
// and avx2vnni families: included by kernels_kquant_avx2.cpp and
// kernels_kquant_avx2vnni.cpp after their SPECSWEEP_TARGET_PUSH, inside an anonymous
// namespace; Dot::Acc(acc, pairs, scales) adds the int16 pairs times the scales to the
// int32 lanes (vpmaddwd + vpaddd, or AVX-VNNI's vpdpwssd: the same exact sums).
//
// Per super-block the weights are unpacked once into 8 vectors of 32 unsigned quants and
// reused for up to 16 activation rows; per 32 values one maddubs (u8 x s8 -> pairs in
// int16, at most 2 * 63 * 127) and one Dot::Acc with the 16-value groups' scales. The
// integer sums are exact, the float steps are those of the scalar reference
// (quant/kquants.h): bit-identical.
#pragma once
#include <immintrin.h>

#include <algorithm>

#include "quant/blocks_k.h"
#include "quant/kquant_simd.h"
#include "quant/kquants.h"
#include "quant/prefetch.h"

// Internal linkage: each including file compiles these for its own target.
namespace specsweep {
namespace {
namespace kquant_avx2 {

using namespace kquant_simd;

struct Unpacked {
  __m256i q[8];   // unit u: values 32 u .. 32 u + 31, unsigned
  __m256i g, m;   // per 16-value group: scale, min (m: Q4_K/Q5_K)
  __m256i sc[8];  // unit u: the int16 scale of each quant pair
  float d, dmin;
};

// vpshufb indices: unit u's scale byte (Q4_K/Q5_K: sub-block u) zero-extended to every
// int16 lane.
struct ScaleIndex {
  alignas(32) int8_t ix[8][32];
  constexpr ScaleIndex() : ix{} {
    for (int u = 0; u < 8; ++u)
      for (int l = 0; l < 32; ++l) ix[u][l] = static_cast<int8_t>(l % 2 ? -128 : u);
  }
};
constexpr ScaleIndex kScaleIndex;

template <QType T>
inline void Unpack(const uint8_t* blk, Unpacked& u) {
  if constexpr (T == QType::Q6_K) {
    const auto& b = *reinterpret_cast<const BlockQ6_K*>(blk);
    UnpackQ6(b, u.q);
    u.g = ScalesQ6(b);
    u.m = _mm256_setzero_si256();
    // Broadcasts int16 lane pair (2u, 2u + 1) of G: group 2u to the low 128-bit half
    // (values 0..15 of the unit), group 2u + 1 to the high half.
    const __m256i dup = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
                                         2, 3, 2, 3, 2, 3);
    for (int k = 0; k < 8; ++k)
      u.sc[k] = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(u.g, _mm256_set1_epi32(k)), dup);
    u.dmin = 0;
    u.d = _cvtsh_ss(b.d);
  } else {
    const auto& b = *reinterpret_cast<const BlockQ4_K*>(blk);
    if constexpr (T == QType::Q4_K)
      UnpackQ4(b.qs, u.q);
    else
      UnpackQ5(*reinterpret_cast<const BlockQ5_K*>(blk), u.q);
    const __m128i r = ScalesMinsBytesK4(b.scales);  // [scales 0..7 | mins 0..7]
    u.g = _mm256_setzero_si256();                   // unused: no bias
    u.m = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r, r));
    const __m256i r2 = _mm256_broadcastsi128_si256(r);
    for (int k = 0; k < 8; ++k)
      u.sc[k] = _mm256_shuffle_epi8(r2, _mm256_load_si256(reinterpret_cast<const __m256i*>(kScaleIndex.ix[k])));
    u.d = _cvtsh_ss(b.d);
    u.dmin = _cvtsh_ss(b.dmin);
  }
}

constexpr int kMaxCols = 16;  // activation rows per pass over a weight row

// Row r against activation rows i0 .. i0 + nc - 1; C = nc when known at compile time
// (1: the decode step keeps its lanes in a register), 0 otherwise.
template <class Dot, QType T, int C>
inline void RowPass(const QMatrix& W, int r, int i0, int nc, const QuantActs* A, WindowPrefetcher& window, float* Y) {
  if constexpr (C > 0) nc = C;
  const int nsb = W.cols_padded / kQK;
  constexpr size_t bytes = T == QType::Q4_K   ? sizeof(BlockQ4_K)
                           : T == QType::Q5_K ? sizeof(BlockQ5_K)
                                              : sizeof(BlockQ6_K);
  const uint8_t* row = W.Row(r);
  __m256 lanes[C > 0 ? C : kMaxCols];
  for (int c = 0; c < nc; ++c) lanes[c] = _mm256_setzero_ps();
  for (int s = 0; s < nsb; ++s) {
    const uint8_t* blk = row + s * bytes;
    window.Reach(blk + bytes - 1);
    Unpacked u;
    Unpack<T>(blk, u);
    for (int c = 0; c < nc; ++c) {
      const int i = i0 + c;
      const int8_t* xq = A->KQ(i) + kQK * s;
      __m256i a = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * k));
        a = Dot::Acc(a, _mm256_maddubs_epi16(u.q[k], x), u.sc[k]);
      }
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(A->KBSum(i) + 16 * s));
      lanes[c] = LaneStep<T>(lanes[c], a, bs, u.g, u.m, u.d, u.dmin, A->KD(i)[s]);
    }
  }
  for (int c = 0; c < nc; ++c) Y[size_t(i0 + c) * W.rows + r] = LaneSum(lanes[c]);
}

template <class Dot, QType T>
void KRowsAvx2(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  RowPasses<kMaxCols>(W, r0, r1, n, [&]<int C>(int r, int i0, int nc, WindowPrefetcher& window) {
    RowPass<Dot, T, C>(W, r, i0, nc, A, window, Y);
  });
}

}  // namespace kquant_avx2
}  // namespace
}  // namespace specsweep
