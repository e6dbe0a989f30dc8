// The AVX-512 (BW + VNNI) kernels for Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS on the 16-row
// interleaved layout (quant/packed.h; semantics: quant/legacy_quants.h), included after
// the SPECSWEEP_TARGET_PUSH of kernels_legacy_packed_avx512.cpp and of its VBMI twin.
// A 64-byte chunk of a block holds 4-value groups of 16 rows, so one vpdpbusd gives, per
// row, the reference's 4-value sum of lane j: 16 zmm accumulators (lane L = 8 (b % 2) + j,
// one row per element) carry exactly the scalar reference's 16 float lanes for 16 rows at
// once, and LaneTreeSum16 runs vertically over them: bit-identical, and no horizontal
// reduction per row. Per block and group: 4 chunk loads, 8 unpacks (nibble; + high bit;
// code book), 8 vpdpbusd, 8 conversions and 8 (min types: 16) fused multiply-adds for 16
// rows, where the row-layout kernel (kernels_legacy_avx512.cpp) spent ~14 instructions per
// row and 64 values. One activation row per pass (16 accumulators): n > 1 re-reads the
// group from L1/L2.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "quant/legacy_quants.h"
#include "quant/legacy_simd.h"
#include "quant/packed.h"
#include "quant/prefetch.h"
#include "quant/qmatrix.h"

namespace specsweep {
namespace {
namespace legacy_avx512_packed {

using namespace legacy_simd;

inline __mmask16 FirstRows(int n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

// Lane k (0..7) of a block: elements 4k..4k+3 of the 16 rows as unsigned bytes
// (legacy_simd.h). Chunk k / 2 holds them in its low (k even) or high nibbles; the high
// bits sit at bit k of the block's high-bit bytes.
// kVbmi: IQ4's code book through vpermb, which reads 6 index bits, from a 64-byte table
// (4 copies): no mask for the nibble (8 of the ~46 instructions per block and group).
template <QType T, int K, bool kVbmi>
inline __m512i LaneValues(__m512i chunk, __m512i high, __m512i table) {
  constexpr bool kIq4 = T == QType::IQ4_NL || T == QType::IQ4_XS;
  if constexpr (kIq4 && kVbmi) return _mm512_permutexvar_epi8(K % 2 ? _mm512_srli_epi16(chunk, 4) : chunk, table);
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512i u = K % 2 ? _mm512_and_si512(_mm512_srli_epi16(chunk, 4), nibble) : _mm512_and_si512(chunk, nibble);
  if constexpr (T == QType::Q5_0 || T == QType::Q5_1) {  // bit K -> bit 4 (16-bit shifts stay in their byte)
    const __m512i h = K < 4 ? _mm512_slli_epi16(high, 4 - K) : _mm512_srli_epi16(high, K - 4);
    u = _mm512_ternarylogic_epi32(u, h, _mm512_set1_epi8(0x10), 0xF8);  // u | (h & 0x10)
  }
  if constexpr (kIq4) u = _mm512_shuffle_epi8(table, u);
  return u;
}

template <QType T, bool kVbmi>
void PackedGroup(const QMatrix& W, int g, const QuantActs& A, int i, float* Y) {
  const int nb = W.cols_padded / 32;
  const packed::GroupSections sec = packed::Sections(W, g);
  const uint8_t *group = sec.quants, *high = sec.high, *sc = sec.scales, *super = sec.super;
  const int8_t* x = A.Q(i);
  const float* dx = A.D(i);
  const int32_t* offset = A.Offsets(i, kCorrShift<T> >= 0 ? kCorrShift<T> : 1);  // [cols/4] corr << kCorrShift
  const float* xsum = A.XSum(i);     // [cols/4] the sums as floats (the min's term)
  const __m512i table = _mm512_broadcast_i32x4(Iq4Table());
  __m512 s[16];  // the reference's lanes, 16 rows each
  for (__m512& v : s) v = _mm512_setzero_ps();
  __m512 dsuper = _mm512_setzero_ps();
  const size_t block_share = W.group_bytes / nb;  // prefetch in address order, as the Q4_0 kernel
  WindowPrefetcher window(group);
  auto block = [&]<int P>(int b) __attribute__((always_inline)) {
    window.Reach(group + block_share * (b + 1));
    const __m512 dxb = _mm512_set1_ps(dx[b]);
    __m512 d;
    if constexpr (T == QType::IQ4_XS) {  // d (ls - 32), exact, as UnpackLegacy
      if (b % 8 == 0)
        dsuper = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + packed::kSuperBytes * (b / 8))));
      const __m512i ls = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16 * b)));
      d = _mm512_mul_ps(dsuper, _mm512_cvtepi32_ps(_mm512_sub_epi32(ls, _mm512_set1_epi32(32))));
    } else {
      d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + packed::ScaleBytes(T) * b)));
    }
    const __m512 dd = _mm512_mul_ps(d, dxb);
    __m512 dm = _mm512_setzero_ps();
    if constexpr (HasMin(T))
      dm = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + 64 * b + 32))), dxb);
    __m512i h = _mm512_setzero_si512();
    if constexpr (packed::HighBytes(T)) h = _mm512_loadu_si512(high + 64 * b);
    const uint8_t* q = group + 256 * size_t(b);
    [&]<int... K>(std::integer_sequence<int, K...>) __attribute__((always_inline)) {
      (
          [&]() __attribute__((always_inline)) {
            const __m512i u = LaneValues<T, K, kVbmi>(_mm512_load_si512(q + 64 * (K / 2)), h, table);
            int32_t x4;
            std::memcpy(&x4, x + 32 * b + 4 * K, 4);
            __m512i init = _mm512_setzero_si512();
            if constexpr (kCorrShift<T> >= 0) init = _mm512_set1_epi32(offset[8 * b + K]);
            const __m512i isum = _mm512_dpbusd_epi32(init, u, _mm512_set1_epi32(x4));
            __m512& l = s[8 * P + K];
            l = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(isum), l);
            if constexpr (HasMin(T)) l = _mm512_fmadd_ps(dm, _mm512_set1_ps(xsum[8 * b + K]), l);  // + (m dx) xsum
          }(),
          ...);
    }(std::make_integer_sequence<int, 8>{});
  };
  int b = 0;
  for (; b + 1 < nb; b += 2) block.template operator()<0>(b), block.template operator()<1>(b + 1);
  if (b < nb) block.template operator()<0>(b);
  __m512 t[8], u[4];  // LaneTreeSum16, vertically
  for (int j = 0; j < 8; ++j) t[j] = _mm512_add_ps(s[j], s[j + 8]);
  for (int j = 0; j < 4; ++j) u[j] = _mm512_add_ps(t[j], t[j + 4]);
  const __m512 y = _mm512_add_ps(_mm512_add_ps(u[0], u[2]), _mm512_add_ps(u[1], u[3]));
  _mm512_mask_storeu_ps(Y + size_t(i) * W.rows + packed::kGroupRows * g, FirstRows(W.rows - packed::kGroupRows * g), y);
}

// Rows [r0, r1) start at a group boundary (MatMul's row chunks are whole groups).
template <QType T, bool kVbmi>
void PackedRows(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  for (int g = r0 / packed::kGroupRows; g * packed::kGroupRows < r1; ++g)
    for (int i = 0; i < n; ++i) PackedGroup<T, kVbmi>(W, g, *A, i, Y);
}

}  // namespace legacy_avx512_packed
}  // namespace
}  // namespace specsweep
