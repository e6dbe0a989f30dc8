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

// NH (1 or 2) halves of row group g from half h0, times activation rows i0 .. i0 + C.
template <QType T, bool kVnni, int NH, int C>
void PackedTile(const QMatrix& W, int g, int h0, const QuantActs& A, int i0, float* Y) {
  constexpr int kQuantBytes = packed::QuantBytes(T);
  constexpr int kOffset = T == QType::Q4_0 ? 8 : 128;  // stored byte = value + kOffset
  const int nb = W.cols_padded / 32;
  const uint8_t* q = packed::Group(W, g) + 32 * h0;
  const uint16_t* sc = packed::Scales(W, packed::Group(W, g)) + 8 * h0;
  const int8_t* x[C];    // [C] quantized activation rows
  const float* dx[C];    // [C] their block scales
  const int32_t* bs[C];  // [C] their block sums
  __m256 acc[NH][C];     // [half][column] 8 rows each
  for (int b = 0; b < C; ++b) {
    x[b] = A.Q(i0 + b);
    dx[b] = A.D(i0 + b);
    bs[b] = A.BSum(i0 + b);
    for (int h = 0; h < NH; ++h) acc[h][b] = _mm256_setzero_ps();
  }
  const __m256i nibble = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  // The first pass over a group streams it from memory (prefetched in address order, a
  // block's share of the group per block, as the AVX-512 kernel); later passes (the other
  // half, more columns) find it in L1/L2.
  const bool lead = h0 == 0 && i0 == 0;
  const size_t block_share = W.group_bytes / nb;
  const uint8_t* pf = packed::Group(W, g) + block_share;
  WindowPrefetcher window(packed::Group(W, g));
  for (int k = 0; k < nb; ++k, q += kQuantBytes, pf += block_share) {
    if (lead) window.Reach(pf);
    __m256i is[NH][C], ih[NH][C];  // integer block sums: two chains (VNNI) or int16 + unused
    for (int h = 0; h < NH; ++h)
      for (int b = 0; b < C; ++b) {
        is[h][b] = kVnni ? _mm256_set1_epi32(-kOffset * bs[b][k]) : _mm256_setzero_si256();
        ih[h][b] = _mm256_setzero_si256();
      }
    #pragma GCC unroll 8
    for (int ch = 0; ch < kQuantBytes / 64; ++ch) {
      for (int h = 0; h < NH; ++h) {
        const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 64 * ch + 32 * h));
        if constexpr (T == QType::Q4_0) {
          const __m256i lo = _mm256_and_si256(v, nibble);                         // elements 8ch..8ch+3
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);  // 8ch+4..8ch+7
          for (int b = 0; b < C; ++b) {
            const __m256i xl = Bcast4(x[b] + 32 * k + 8 * ch), xh = Bcast4(x[b] + 32 * k + 8 * ch + 4);
            if constexpr (kVnni) {
              is[h][b] = _mm256_dpbusd_avx_epi32(is[h][b], lo, xl);
              ih[h][b] = _mm256_dpbusd_avx_epi32(ih[h][b], hi, xh);
            } else {
              is[h][b] = _mm256_add_epi16(is[h][b], _mm256_add_epi16(_mm256_maddubs_epi16(lo, xl),
                                                                      _mm256_maddubs_epi16(hi, xh)));
            }
          }
        } else if constexpr (kVnni) {
          for (int b = 0; b < C; ++b) {
            __m256i& chain = ch % 2 ? ih[h][b] : is[h][b];
            chain = _mm256_dpbusd_avx_epi32(chain, v, Bcast4(x[b] + 32 * k + 4 * ch));
          }
        } else {
          const __m256i w = _mm256_xor_si256(v, bias);  // signed values
          const __m256i aw = _mm256_abs_epi8(w);
          for (int b = 0; b < C; ++b) {
            const __m256i p = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(Bcast4(x[b] + 32 * k + 4 * ch), w));
            __m256i& chain = ch % 2 ? ih[h][b] : is[h][b];
            chain = _mm256_add_epi32(chain, _mm256_madd_epi16(p, ones));
          }
        }
      }
    }
    for (int h = 0; h < NH; ++h) {
      const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * k + 8 * h)));
      for (int b = 0; b < C; ++b) {
        __m256i sum;
        if constexpr (T == QType::Q4_0 && !kVnni)
          sum = _mm256_add_epi32(_mm256_madd_epi16(is[h][b], ones), _mm256_set1_epi32(-kOffset * bs[b][k]));
        else
          sum = _mm256_add_epi32(is[h][b], ih[h][b]);
        const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(dx[b][k]));
        acc[h][b] = _mm256_add_ps(acc[h][b], _mm256_mul_ps(s, _mm256_cvtepi32_ps(sum)));
      }
    }
  }
  for (int h = 0; h < NH; ++h) {
    const int row0 = packed::kGroupRows * g + 8 * (h0 + h);
    const int valid = std::clamp(W.rows - row0, 0, 8);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int b = 0; b < C; ++b)
      _mm256_maskstore_ps(Y + static_cast<size_t>(i0 + b) * W.rows + row0, mask, acc[h][b]);
  }
}

// Rows [r0, r1) start at a group boundary (MatMul's row chunks are whole groups). n = 1
// takes both halves of a group in one pass (each weight line read once from memory);
// n > 1 takes one half at a time with up to 4 activation rows, so 16 ymm registers hold
// the accumulators, and re-reads the group from cache for the other half and columns.
template <QType T, bool kVnni>
void PackedRows(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  for (int g = r0 / packed::kGroupRows; g * packed::kGroupRows < r1; ++g) {
    if (n == 1) {
      PackedTile<T, kVnni, 2, 1>(W, g, 0, *A, 0, Y);
      continue;
    }
    for (int h = 0; h < 2 && packed::kGroupRows * g + 8 * h < W.rows; ++h)
      for (int i = 0; i < n; i += 4)
        kernel_driver::WithCols<4>(std::min(4, n - i),
                                   [&]<int C>() { PackedTile<T, kVnni, 1, C>(W, g, h, *A, i, Y); });
  }
}

}  // namespace
}  // namespace specsweep
