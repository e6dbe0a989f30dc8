// Packed Q8_0/Q4_0 kernels (Layout::kPacked16, quant/packed.h) on 256-bit registers,
// shared by the avx2 and avx2vnni families. Internal: included by kernels_avx2.cpp and
// kernels_avx2vnni.cpp inside their target regions (so each gets code for its own
// instruction set), never by other headers.
//
// Each 64-byte chunk of the 16-row layout is two 8-row halves: bytes [0, 32) hold 4
// bytes of each of rows 0-7, bytes [32, 64) of rows 8-15. One ymm load is thus an 8-row
// interleaved chunk, the shape a 256-bit kernel wants (one int32 lane per row), and both
// families stream the same packed bytes as the AVX-512 one: a model packs once, whatever
// family runs it.
//
// Per 32-wide block and half, each lane ends with its row's exact integer block sum, and
// y = sum_b (dw_b * dx_b) * isum_b is accumulated in block order without fused
// multiply-add, exactly as the scalar reference: bit-identical for any n and tile.
//   plain AVX2 (kVnni = false): vpmaddubsw + vpmaddwd. Q4_0: nibble (0..15) x int8 pairs
//     stay within int16: 8 pair sums per block lane <= 8 * 2 * 15 * 127 = 30480, so they
//     add up in int16 and widen once per block. Q8_0: |w| x (x sign w), <= 2 * 128 * 127
//     per pair, widened per chunk.
//   AVX-VNNI (kVnni = true): vpdpbusd on the stored unsigned bytes, int32 throughout,
//     started at the offset correction -offset * sum(xq) of the block.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "quant/kernel_driver.h"
#include "quant/kernels.h"
#include "quant/packed.h"
#include "quant/prefetch.h"

namespace specsweep {
namespace {

inline __m256i Bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// An empty asm that takes v in a register: GCC otherwise computes a whole tile's products
// first and sums them at the end, holding (and spilling) dozens of them; pinning each
// running sum after its step keeps the steps in order and the live set small.
inline void Pin(__m256i& v) { asm volatile("" : "+x"(v)); }

// Blocks per segment of the offset table (PackedPass): bounds its stack size for any width.
constexpr int kOffsetSeg = 64;

// Plain AVX2 integer sums of a tile (PackedTile): chunk and plane (Q4_0: low, then high
// nibbles) outer, column inner. With NH = 2 (Q4_0) each broadcast feeds both halves and
// the live set is the 2 x C sums, one unpacked plane per half and one broadcast: 15 of
// the 16 ymm at C = 4, nothing spills (docs/kernels.md, "Packed AVX2 kernels").
template <QType T, int C0, int C, int NH>
[[gnu::always_inline]] inline void TileSumsPlain(const uint8_t* q, int h0, const int8_t* const* x, size_t xk,
                                                 __m256i (&is)[NH][C]) {
  constexpr int kQuantBytes = packed::QuantBytes(T);
  const __m256i nibble = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  constexpr int kPlanes = T == QType::Q4_0 ? 2 : 1;
#pragma GCC unroll 8
  for (int ch = 0; ch < kQuantBytes / 64; ++ch) {
    __m256i v[NH];
#pragma GCC unroll 2
    for (int hh = 0; hh < NH; ++hh)
      v[hh] = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 64 * ch + 32 * (h0 + hh)));
#pragma GCC unroll 2
    for (int plane = 0; plane < kPlanes; ++plane) {
      __m256i w[NH], aw[NH];  // Q4_0: the plane's nibbles; Q8_0: signed values, |values|
#pragma GCC unroll 2
      for (int hh = 0; hh < NH; ++hh) {
        if constexpr (T == QType::Q4_0) {
          w[hh] = _mm256_and_si256(plane ? _mm256_srli_epi16(v[hh], 4) : v[hh], nibble);
        } else {
          w[hh] = _mm256_xor_si256(v[hh], bias);
          aw[hh] = _mm256_abs_epi8(w[hh]);
        }
      }
#pragma GCC unroll 4
      for (int b = 0; b < C; ++b) {
        // Q4_0 chunk ch: elements 8ch..8ch+3 (low plane), 8ch+4..8ch+7 (high); Q8_0: 4ch..4ch+3.
        const __m256i xb = Bcast4(x[C0 + b] + xk + (T == QType::Q4_0 ? 8 * ch + 4 * plane : 4 * ch));
#pragma GCC unroll 2
        for (int hh = 0; hh < NH; ++hh) {
          if constexpr (T == QType::Q4_0) {
            const __m256i p = _mm256_maddubs_epi16(w[hh], xb);
            is[hh][b] = ch == 0 && plane == 0 ? p : _mm256_add_epi16(is[hh][b], p);
          } else {
            const __m256i p = _mm256_maddubs_epi16(aw[hh], _mm256_sign_epi8(xb, w[hh]));
            is[hh][b] = _mm256_add_epi32(is[hh][b], _mm256_madd_epi16(p, ones));
          }
          Pin(is[hh][b]);
        }
      }
    }
  }
}

// AVX-VNNI integer sums of a tile (PackedTile): two vpdpbusd chains per column.
template <QType T, int C0, int C, int NH>
[[gnu::always_inline]] inline void TileSumsVnni(const uint8_t* q, int h0, const int8_t* const* x, size_t xk,
                                                __m256i (&is)[NH][C], __m256i (&ih)[NH][C]) {
  constexpr int kQuantBytes = packed::QuantBytes(T);
  const __m256i nibble = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 8
  for (int ch = 0; ch < kQuantBytes / 64; ++ch) {
#pragma GCC unroll 2
    for (int hh = 0; hh < NH; ++hh) {
      const int h = h0 + hh;
      const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 64 * ch + 32 * h));
      if constexpr (T == QType::Q4_0) {
        // The high nibbles stay in place (16 x value; one vpandn, no shift): that chain
        // is divided by 16 at the end, exactly.
        const __m256i lo = _mm256_and_si256(v, nibble), hi = _mm256_andnot_si256(nibble, v);
#pragma GCC unroll 4
        for (int b = 0; b < C; ++b) {
          const int8_t* xp = x[C0 + b] + xk + 8 * ch;
          is[hh][b] = _mm256_dpbusd_avx_epi32(is[hh][b], lo, Bcast4(xp));
          ih[hh][b] = _mm256_dpbusd_avx_epi32(ih[hh][b], hi, Bcast4(xp + 4));
          Pin(is[hh][b]), Pin(ih[hh][b]);
        }
      } else {
#pragma GCC unroll 4
        for (int b = 0; b < C; ++b) {
          __m256i& chain = ch % 2 ? ih[hh][b] : is[hh][b];
          chain = _mm256_dpbusd_avx_epi32(chain, v, Bcast4(x[C0 + b] + xk + 4 * ch));
          Pin(chain);
        }
      }
    }
  }
}

// Columns [C0, C0 + C) of halves [h0, h0 + NH) at block k (quants at q, xk = 32 k the
// activation offset, kk = k's index in the offset segment off): acc[h][column] +=
// (dw * dx) * isum. With NH = 2 the halves share each activation broadcast.
template <QType T, bool kVnni, int NC, int C0, int C, int NH>
[[gnu::always_inline]] inline void PackedTile(const uint8_t* q, const uint16_t* sc, int k, int kk, int h0, size_t xk,
                                              const int8_t* const* x, const float* const* dx,
                                              const int32_t (&off)[NC][kOffsetSeg], __m256 (&acc)[2][NC]) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i is[NH][C], ih[NH][C];  // integer block sums: VNNI two chains; plain one (int16 for Q4_0)
#pragma GCC unroll 2
  for (int hh = 0; hh < NH; ++hh)
#pragma GCC unroll 4
    for (int b = 0; b < C; ++b) {
      is[hh][b] = kVnni ? _mm256_set1_epi32(off[C0 + b][kk]) : _mm256_setzero_si256();
      ih[hh][b] = _mm256_setzero_si256();
    }
  if constexpr (!kVnni)
    TileSumsPlain<T, C0, C, NH>(q, h0, x, xk, is);
  else
    TileSumsVnni<T, C0, C, NH>(q, h0, x, xk, is, ih);
#pragma GCC unroll 2
  for (int hh = 0; hh < NH; ++hh) {
    const int h = h0 + hh;
    const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * k + 8 * h)));
#pragma GCC unroll 4
    for (int b = 0; b < C; ++b) {
      __m256i sum;
      if constexpr (T == QType::Q4_0 && kVnni)
        sum = _mm256_add_epi32(is[hh][b], _mm256_srai_epi32(ih[hh][b], 4));
      else if constexpr (T == QType::Q4_0)
        sum = _mm256_add_epi32(_mm256_madd_epi16(is[hh][b], ones), _mm256_set1_epi32(off[C0 + b][kk]));
      else if constexpr (kVnni)
        sum = _mm256_add_epi32(is[hh][b], ih[hh][b]);
      else
        sum = is[hh][b];
      const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(dx[C0 + b][k]));
      acc[h][C0 + b] = _mm256_add_ps(acc[h][C0 + b], _mm256_mul_ps(s, _mm256_cvtepi32_ps(sum)));
    }
  }
}

// One pass over row group g for the NC (1..8) activation rows from i0, both 8-row halves,
// weight block outer: each block's bytes are read from memory once (in address order,
// prefetched as the AVX-512 kernel does) and feed all NC rows while in L1, so the compute
// of n > 1 overlaps the weight stream as n = 1's does. NC <= 2, and plain Q4_0 for any NC,
// take both halves per chunk (shared broadcasts) in tiles of up to 4 columns; the others
// take per block and half the NC columns in tiles of up to 4 (one unpacked chunk feeds 4
// columns; 16 ymm registers on AVX2 CPUs). The float accumulators acc[half][column] carry
// across blocks (the compiler keeps what fits in registers); each gets + (dw * dx) * isum
// once per block, in block order.
template <QType T, bool kVnni, int NC>
void PackedPass(const QMatrix& W, int g, const QuantActs& A, int i0, bool stream, float* Y) {
  constexpr int kQuantBytes = packed::QuantBytes(T);
  constexpr int kOffset = T == QType::Q4_0 ? 8 : 128;  // stored byte = value + kOffset
  // The offset correction -kOffset * sum(xq) per block: not needed by plain Q8_0 (its
  // bytes are made signed), started as the chain's value on VNNI, added at the end for
  // plain Q4_0 (its int16 sums have no room for it).
  constexpr bool kNeedOffset = kVnni || T == QType::Q4_0;
  const int nb = W.cols_padded / 32;
  const uint8_t* group = packed::Group(W, g);
  const uint16_t* sc = packed::Scales(W, group);
  const int8_t* x[NC];    // [NC] quantized activation rows
  const float* dx[NC];    // [NC] their block scales
  const int32_t* bs[NC];  // [NC] their block sums
  __m256 acc[2][NC];      // [half][column] 8 rows each
#pragma GCC unroll 8
  for (int b = 0; b < NC; ++b) {
    x[b] = A.Q(i0 + b);
    dx[b] = A.D(i0 + b);
    bs[b] = A.BSum(i0 + b);
    acc[0][b] = acc[1][b] = _mm256_setzero_ps();
  }
  alignas(32) int32_t off[NC][kOffsetSeg];  // -kOffset * bs of the segment's blocks
  const size_t block_share = W.group_bytes / nb;
  WindowPrefetcher window(group);
  const uint8_t* q = group;
  for (int k0 = 0; k0 < nb; k0 += kOffsetSeg) {
    const int kn = std::min(kOffsetSeg, nb - k0);
    if constexpr (kNeedOffset)
      for (int b = 0; b < NC; ++b)
        for (int j = 0; j < kn; ++j) off[b][j] = -kOffset * bs[b][k0 + j];
    for (int k = k0; k < k0 + kn; ++k, q += kQuantBytes) {
      if (stream) window.Reach(group + block_share * (k + 1));
      if constexpr (NC <= 2 || (T == QType::Q4_0 && !kVnni)) {
        // Both halves per chunk, sharing the broadcasts, in tiles of up to 4 columns (plain
        // Q8_0 holds two vectors per half, w and |w|, and at n > 2 does better per half).
        PackedTile<T, kVnni, NC, 0, std::min(NC, 4), 2>(q, sc, k, k - k0, 0, 32 * size_t(k), x, dx, off, acc);
        if constexpr (NC > 4)
          PackedTile<T, kVnni, NC, 4, NC - 4, 2>(q, sc, k, k - k0, 0, 32 * size_t(k), x, dx, off, acc);
      } else {
#pragma GCC unroll 1
        for (int h = 0; h < 2; ++h) {
          // The two halves broadcast the same activation bytes: GCC would share them, hold
          // 8 NC broadcasts at once and spill most; the opaque offset keeps them per half.
          size_t xk = 32 * size_t(k);
          asm volatile("" : "+r"(xk));
          PackedTile<T, kVnni, NC, 0, std::min(NC, 4), 1>(q, sc, k, k - k0, h, xk, x, dx, off, acc);
          if constexpr (NC > 4) PackedTile<T, kVnni, NC, 4, NC - 4, 1>(q, sc, k, k - k0, h, xk, x, dx, off, acc);
        }
      }
    }
  }
  for (int h = 0; h < 2; ++h) {
    const int row0 = packed::kGroupRows * g + 8 * h;
    const int valid = std::clamp(W.rows - row0, 0, 8);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 8
    for (int b = 0; b < NC; ++b) _mm256_maskstore_ps(Y + static_cast<size_t>(i0 + b) * W.rows + row0, mask, acc[h][b]);
  }
}

// Rows [r0, r1) start at a group boundary (MatMul's row chunks are whole groups). One
// pass per 8 activation rows: n <= 8 reads each weight byte once; more re-read the group
// (from L1/L2) per further 8, prefetching only on the first pass (why this shape:
// docs/kernels.md, "Packed AVX2 kernels").
template <QType T, bool kVnni>
void PackedRows(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  for (int g = r0 / packed::kGroupRows; g * packed::kGroupRows < r1; ++g)
    for (int i = 0; i < n; i += 8)
      kernel_driver::WithCols<8>(std::min(8, n - i), [&]<int C>() { PackedPass<T, kVnni, C>(W, g, *A, i, i == 0, Y); });
}

}  // namespace
}  // namespace specsweep
