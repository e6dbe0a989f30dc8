// The AVX-512 (BW + VNNI) kernels for Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS on the 16-row
// interleaved layout (quant/packed.h; semantics: quant/legacy_quants.h), included after
// the SPECSWEEP_TARGET_PUSH of kernels_legacy_packed_avx512.cpp and of its VBMI twin.
// A 64-byte chunk of a block holds 4-value groups of 16 rows, so one vpdpbusd gives, per
// row, the reference's 4-value sum of lane j: zmm accumulators (one row per element)
// carry exactly the scalar reference's float lanes for 16 rows at once, and
// LaneTreeSum16 runs vertically over them: bit-identical, and no horizontal reduction
// per row. Per block and group: 4 chunk loads, 8 unpacks (nibble; + high bit; code book),
// 8 vpdpbusd, 8 conversions and 8 (min types: 16) fused multiply-adds per activation row.
//
// A pass holds 16 accumulators in two units of 8 lanes: one activation row's even and
// odd blocks (lanes 0-7 and 8-15), or, for two activation rows, the lanes of one block
// parity each, in two passes (even blocks, then odd), so each block is unpacked once for
// both rows. Each lane's additions keep their block order either way.
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
// bits sit at bit k of the block's high-bit bytes. k is a constant once the lane loop is
// unrolled.
// kVbmi (CPUs with AVX512-VBMI and GFNI): IQ4's code book through vpermb, which reads 6
// index bits, from a 64-byte table (4 copies), so the nibble needs no mask; Q5's bit k
// moved to bit 4 alone by one gf2p8affineqb, merged with the nibble by one ternary op
// (2-3 instructions per lane instead of 3-4).
template <QType T, bool kVbmi>
inline __m512i LaneValues(int k, __m512i chunk, __m512i high, __m512i table) {
  constexpr bool kIq4 = T == QType::IQ4_NL || T == QType::IQ4_XS;
  const __m512i src = k % 2 ? _mm512_srli_epi16(chunk, 4) : chunk;
  if constexpr (kIq4 && kVbmi) return _mm512_permutexvar_epi8(src, table);
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  if constexpr ((T == QType::Q5_0 || T == QType::Q5_1) && kVbmi) {
    // Output bit 4 = parity(matrix byte 3 & input): byte 3 = 1 << k.
    const __m512i h = _mm512_gf2p8affine_epi64_epi8(high, _mm512_set1_epi64(int64_t{1} << (24 + k)), 0);
    return _mm512_ternarylogic_epi32(src, h, nibble, 0xEC);  // (src & nibble) | h
  }
  __m512i u = _mm512_and_si512(src, nibble);
  if constexpr (T == QType::Q5_0 || T == QType::Q5_1) {  // bit k -> bit 4 (16-bit shifts stay in their byte)
    const __m512i h = k < 4 ? _mm512_slli_epi16(high, 4 - k) : _mm512_srli_epi16(high, k - 4);
    u = _mm512_ternarylogic_epi32(u, h, _mm512_set1_epi8(0x10), 0xF8);  // u | (h & 0x10)
  }
  if constexpr (kIq4) u = _mm512_shuffle_epi8(table, u);
  return u;
}

// The weight scales of block b for the 16 rows: d (IQ4_XS: d (ls - 32), exact, as
// UnpackLegacy, dsuper the super-block's d) and, for the min types, m.
template <QType T>
inline __m512 BlockScale(const packed::GroupSections& sec, int b, __m512 dsuper) {
  if constexpr (T == QType::IQ4_XS) {
    const __m512i ls = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sec.scales + 16 * b)));
    return _mm512_mul_ps(dsuper, _mm512_cvtepi32_ps(_mm512_sub_epi32(ls, _mm512_set1_epi32(32))));
  } else {
    return _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sec.scales + packed::ScaleBytes(T) * b)));
  }
}
inline __m512 BlockMin(const packed::GroupSections& sec, int b) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sec.scales + 64 * b + 32)));
}

// One block step's inputs for units 0 and 1 (see Pass).
template <QType T>
struct StepArgs {
  const uint8_t *q0, *q1;  // quants of the units' blocks
  __m512i h0, h1, table;   // high bits (Q5), code book (IQ4)
  const int8_t *x0, *x1;   // the units' activation block
  const int32_t *off0, *off1;
  const float *xs0, *xs1;  // (min types) the 4-value sums
  __m512 dd0, dd1, dm0, dm1;
  __mmask16 keep1;  // unit 1's lanes take part
};

// Lane k of both units. A function of its accumulators (not a lambda capturing them):
// GCC kept captured accumulators in memory, a load and a store per fused multiply-add.
template <QType T, bool kVbmi, int kShared, int k>
__attribute__((always_inline)) inline void LaneStep(const StepArgs<T>& a, __m512& s0, __m512& s1) {
  const __m512i v0 = LaneValues<T, kVbmi>(k, _mm512_load_si512(a.q0 + 64 * (k / 2)), a.h0, a.table);
  const __m512i v1 = kShared ? v0 : LaneValues<T, kVbmi>(k, _mm512_load_si512(a.q1 + 64 * (k / 2)), a.h1, a.table);
  int32_t xa, xb;
  std::memcpy(&xa, a.x0 + 4 * k, 4);
  std::memcpy(&xb, a.x1 + 4 * k, 4);
  __m512i i0 = _mm512_setzero_si512(), i1 = i0;
  if constexpr (kCorrShift<T> >= 0) i0 = _mm512_set1_epi32(a.off0[k]), i1 = _mm512_set1_epi32(a.off1[k]);
  i0 = _mm512_dpbusd_epi32(i0, v0, _mm512_set1_epi32(xa));
  i1 = _mm512_dpbusd_epi32(i1, v1, _mm512_set1_epi32(xb));
  s0 = _mm512_fmadd_ps(a.dd0, _mm512_cvtepi32_ps(i0), s0);
  s1 = _mm512_mask3_fmadd_ps(a.dd1, _mm512_cvtepi32_ps(i1), s1, a.keep1);
  if constexpr (HasMin(T)) {  // + (m dx) xsum
    s0 = _mm512_fmadd_ps(a.dm0, _mm512_set1_ps(a.xs0[k]), s0);
    s1 = _mm512_mask3_fmadd_ps(a.dm1, _mm512_set1_ps(a.xs1[k]), s1, a.keep1);
  }
}
// A unit's 8 float lanes for 16 rows. A struct copied whole and indexed only by constants
// (no loops over j) so that GCC keeps it in registers.
struct Lanes8 {
  __m512 v[8];
};
template <QType T, bool kVbmi, int kShared, int... K>
__attribute__((always_inline)) inline void Lanes(std::integer_sequence<int, K...>, const StepArgs<T>& a, Lanes8& s0,
                                                 Lanes8& s1) {
  (LaneStep<T, kVbmi, kShared, K>(a, s0.v[K], s1.v[K]), ...);
}

// One pass over a group's blocks in two units of 8 lanes, out[unit][j]: kRows 1: blocks
// b (even) and b + 1 of activation row act[0] (lanes 8 (b % 2) + j; a lone last block
// runs with unit 1 masked off); kRows 2: block b of the given parity against rows act[0]
// and act[1].
template <QType T, bool kVbmi, int kRows>
inline void Pass(const QMatrix& W, const packed::GroupSections& sec, const ActRow<T> (&act)[2], int parity,
                 Lanes8 (&out)[2]) {
  const int nb = W.cols_padded / 32;
  const size_t block_share = W.group_bytes / nb;  // prefetch in address order, as the Q4_0 kernel
  WindowPrefetcher window(sec.quants);
  __m512 dsuper = _mm512_setzero_ps();
  Lanes8 s0{}, s1{};
  const ActRow<T>& x1 = act[kRows - 1];
  StepArgs<T> a;
  a.table = _mm512_broadcast_i32x4(Iq4Table());
  a.h0 = a.h1 = _mm512_setzero_si512();
  a.dm0 = a.dm1 = _mm512_setzero_ps();
  for (int b = kRows == 1 ? 0 : parity; b < nb; b += 2) {
    const bool pair = kRows == 2 || b + 1 < nb;
    const int b1 = kRows == 1 && pair ? b + 1 : b;  // unit 1's block
    a.keep1 = pair ? 0xFFFF : 0;
    window.Reach(sec.quants + block_share * (b1 + 1));
    if constexpr (T == QType::IQ4_XS)
      if (b % 8 < 2)  // the first block of its super-block in this pass
        dsuper = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sec.super + packed::kSuperBytes * (b / 8))));
    const __m512 d0 = BlockScale<T>(sec, b, dsuper), d1 = kRows == 1 ? BlockScale<T>(sec, b1, dsuper) : d0;
    const __m512 dx0 = _mm512_set1_ps(act[0].dx[b]), dx1 = _mm512_set1_ps(x1.dx[b1]);
    a.dd0 = _mm512_mul_ps(d0, dx0), a.dd1 = _mm512_mul_ps(d1, dx1);
    if constexpr (HasMin(T)) {
      const __m512 m0 = BlockMin(sec, b), m1 = kRows == 1 ? BlockMin(sec, b1) : m0;
      a.dm0 = _mm512_mul_ps(m0, dx0), a.dm1 = _mm512_mul_ps(m1, dx1);
    }
    if constexpr (packed::HighBytes(T)) {
      a.h0 = _mm512_loadu_si512(sec.high + 64 * b);
      a.h1 = kRows == 1 ? _mm512_loadu_si512(sec.high + 64 * b1) : a.h0;
    }
    a.q0 = sec.quants + 256 * size_t(b), a.q1 = sec.quants + 256 * size_t(b1);
    a.x0 = act[0].x + 32 * b, a.x1 = x1.x + 32 * b1;
    a.off0 = act[0].offset + 8 * b, a.off1 = x1.offset + 8 * b1;
    a.xs0 = act[0].xsum + 8 * b, a.xs1 = x1.xsum + 8 * b1;
    Lanes<T, kVbmi, kRows == 2>(std::make_integer_sequence<int, 8>{}, a, s0, s1);
  }
  out[0] = s0, out[1] = s1;
}

// LaneTreeSum16 vertically over lanes 0-7 (lo) and 8-15 (hi), 16 rows stored; written
// out with constant indices, as above.
inline __m512 T8(const Lanes8& lo, const Lanes8& hi, int j) { return _mm512_add_ps(lo.v[j], hi.v[j]); }
inline void StoreTree(const Lanes8& lo, const Lanes8& hi, const QMatrix& W, int g, int i, float* Y) {
  const __m512 u0 = _mm512_add_ps(T8(lo, hi, 0), T8(lo, hi, 4)), u1 = _mm512_add_ps(T8(lo, hi, 1), T8(lo, hi, 5));
  const __m512 u2 = _mm512_add_ps(T8(lo, hi, 2), T8(lo, hi, 6)), u3 = _mm512_add_ps(T8(lo, hi, 3), T8(lo, hi, 7));
  const __m512 y = _mm512_add_ps(_mm512_add_ps(u0, u2), _mm512_add_ps(u1, u3));
  _mm512_mask_storeu_ps(Y + size_t(i) * W.rows + packed::kGroupRows * g, FirstRows(W.rows - packed::kGroupRows * g), y);
}

// Activation rows i0 (and i0 + 1 when kRows == 2) against group g.
template <QType T, bool kVbmi, int kRows>
void PackedGroup(const QMatrix& W, int g, const QuantActs& A, int i0, float* Y) {
  const packed::GroupSections sec = packed::Sections(W, g);
  const ActRow<T> act[2] = {ActRow<T>(A, i0), ActRow<T>(A, i0 + kRows - 1)};
  Lanes8 s[2];
  Pass<T, kVbmi, kRows>(W, sec, act, 0, s);
  if constexpr (kRows == 1) {
    StoreTree(s[0], s[1], W, g, i0, Y);
  } else {
    const Lanes8 even[2] = {s[0], s[1]};
    Pass<T, kVbmi, 2>(W, sec, act, 1, s);
    StoreTree(even[0], s[0], W, g, i0, Y);
    StoreTree(even[1], s[1], W, g, i0 + 1, Y);
  }
}

// Rows [r0, r1) start at a group boundary (MatMul's row chunks are whole groups).
template <QType T, bool kVbmi>
void PackedRows(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  for (int g = r0 / packed::kGroupRows; g * packed::kGroupRows < r1; ++g) {
    int i = 0;
    for (; i + 1 < n; i += 2) PackedGroup<T, kVbmi, 2>(W, g, *A, i, Y);
    if (i < n) PackedGroup<T, kVbmi, 1>(W, g, *A, i, Y);
  }
}

}  // namespace legacy_avx512_packed
}  // namespace
}  // namespace specsweep
