// AVX-512 (BW + VNNI) K-quant kernels (Q4_K, Q5_K, Q6_K on row layout): as the AVX2 ones
// (kernels_kquant_avx2.cpp) with 64 values per vector: the weights of a super-block are
// unpacked once into 4 vectors in value order, then per 64 values and activation row one
// vpmaddubsw (u8 x s8 -> int16 pairs) and one vpdpwssd with the groups' scales
// (int16 x int16 -> int32, accumulated). Integer sums exact, float steps those of the
// scalar reference (quant/kquants.h): bit-identical.
#include <immintrin.h>

#include <algorithm>

#include "quant/blocks_k.h"
#include "quant/fp16.h"
#include "quant/kquants.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

#include "quant/kquant_simd.h"
#include "quant/prefetch.h"

namespace specsweep {
namespace {

using namespace kquant_simd;

struct Unpacked {
  __m512i q[4];  // unit v: values 64 v .. 64 v + 63, unsigned
  __m256i g, m;  // per 16-value group: scale, min (m: Q4_K/Q5_K)
  float d, dmin;
};

// Q4_K/Q5_K nibbles: 64 bytes = chunks 2p, 2p + 1; their low nibbles are values
// 128 p + 0..31 and + 64..95, the high ones + 32..63 and + 96..127. 128-bit lane
// shuffles put them in value order.
inline void UnpackQ4x64(const uint8_t* qs, __m512i q[4]) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int p = 0; p < 2; ++p) {
    const __m512i z = _mm512_loadu_si512(qs + 64 * p);
    const __m512i lo = _mm512_and_si512(z, low), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), low);
    q[2 * p] = _mm512_shuffle_i64x2(lo, hi, 0x44);
    q[2 * p + 1] = _mm512_shuffle_i64x2(lo, hi, 0xEE);
  }
}

template <QType T>
inline void Unpack(const uint8_t* blk, Unpacked& u) {
  if constexpr (T == QType::Q6_K) {
    const auto& b = *reinterpret_cast<const BlockQ6_K*>(blk);
    const __m512i low = _mm512_set1_epi8(0x0F), hi2 = _mm512_set1_epi8(0x30);
    // High bits of value l (l < 32) of each 32: qh[l] bits 0-1, 2-3, 4-5, 6-7 for the
    // four 32-value quarters of a 128 half; shifted per 256-bit half to bits 4-5.
    const __m512i shl = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(b.ql + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h)));
      u.q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, low), _mm512_and_si512(_mm512_sllv_epi16(qh, shl), hi2));
      u.q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low),
                                       _mm512_and_si512(_mm512_srlv_epi16(qh, shr), hi2));
    }
    u.g = ScalesQ6(b);
    u.m = _mm256_setzero_si256();
    u.dmin = 0;
    u.d = F16ToF32(b.d);
  } else {
    const auto& b = *reinterpret_cast<const BlockQ4_K*>(blk);
    if constexpr (T == QType::Q4_K) {
      UnpackQ4x64(b.qs, u.q);
    } else {
      const auto& b5 = *reinterpret_cast<const BlockQ5_K*>(blk);
      UnpackQ4x64(b5.qs, u.q);
      // Bit j of qh[l] is bit 4 of value 32 j + l: unit v takes bits 2v and 2v + 1.
      const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b5.qh)));
      const __m512i bit4 = _mm512_set1_epi8(0x10);
      for (int v = 0; v < 4; ++v) {
        const __m512i sel =
            _mm512_inserti64x4(_mm512_set1_epi8(char(1 << (2 * v))), _mm256_set1_epi8(char(1 << (2 * v + 1))), 1);
        u.q[v] = _mm512_mask_add_epi8(u.q[v], _mm512_test_epi8_mask(qh, sel), u.q[v], bit4);
      }
    }
    ScalesMinsK4(b.scales, &u.g, &u.m);
    u.d = F16ToF32(b.d);
    u.dmin = F16ToF32(b.dmin);
  }
}

constexpr int kMaxCols = 16;  // activation rows per pass over a weight row

// Unit v's int16 product lane l covers values 2l, 2l + 1: group 4 v + l / 8.
struct GroupIndex {
  alignas(64) int16_t ix[4][32];
  constexpr GroupIndex() : ix{} {
    for (int v = 0; v < 4; ++v)
      for (int l = 0; l < 32; ++l) ix[v][l] = static_cast<int16_t>(4 * v + l / 8);
  }
};
constexpr GroupIndex kGroupIndex;

// Row r against activation rows i0 .. i0 + nc - 1; C = nc when known at compile time
// (1: the decode step keeps its lanes in a register), 0 otherwise.
template <QType T, int C>
inline void RowPass(const QMatrix& W, int r, int i0, int nc, const QuantActs* A, WindowPrefetcher& window, float* Y) {
  if constexpr (C > 0) nc = C;
  const int nsb = W.cols_padded / kQK;
  const size_t bytes = BlockBytes(T);
  const uint8_t* row = W.Row(r);
  __m256 lanes[C > 0 ? C : kMaxCols];
  for (int c = 0; c < nc; ++c) lanes[c] = _mm256_setzero_ps();
  for (int s = 0; s < nsb; ++s) {
    const uint8_t* blk = row + s * bytes;
    window.Reach(blk + bytes - 1);
    Unpacked u;
    Unpack<T>(blk, u);
    __m512i sc[4];
    for (int v = 0; v < 4; ++v)
      sc[v] = _mm512_permutexvar_epi16(_mm512_load_si512(kGroupIndex.ix[v]), _mm512_castsi256_si512(u.g));
    for (int c = 0; c < nc; ++c) {
      const int i = i0 + c;
      const int8_t* xq = A->KQ(i) + kQK * s;
      __m512i a = _mm512_setzero_si512();
      for (int v = 0; v < 4; ++v)
        a = _mm512_dpwssd_epi32(a, _mm512_maddubs_epi16(u.q[v], _mm512_loadu_si512(xq + 64 * v)), sc[v]);
      const __m256i a8 = _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(A->KBSum(i) + 16 * s));
      lanes[c] = LaneStep<T>(lanes[c], a8, bs, u.g, u.m, u.d, u.dmin, A->KD(i)[s]);
    }
  }
  for (int c = 0; c < nc; ++c) Y[size_t(i0 + c) * W.rows + r] = LaneSum(lanes[c]);
}

template <QType T>
void KRowsAvx512(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  WindowPrefetcher window(W.Row(r0));
  for (int r = r0; r < r1; ++r)
    for (int i0 = 0; i0 < n; i0 += kMaxCols) {
      const int nc = std::min(kMaxCols, n - i0);
      if (nc == 1) RowPass<T, 1>(W, r, i0, nc, A, window, Y);
      else RowPass<T, 0>(W, r, i0, nc, A, window, Y);
    }
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

#pragma GCC pop_options
