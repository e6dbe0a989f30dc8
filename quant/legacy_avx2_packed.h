// The AVX2 kernels for Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS on the 16-row interleaved layout
// (quant/packed.h), shared by the avx2 and avx2vnni families (Dot: how 32 unsigned weight
// bytes meet 32 int8 activations); included after the file's SPECSWEEP_TARGET_PUSH. As
// the AVX-512 kernel (kernels_legacy_packed_avx512.cpp) on 8-row halves of a group (bytes
// [0, 32) of each 64-byte chunk hold rows 0-7, [32, 64) rows 8-15): one ymm accumulator
// per reference lane, each element one row. 16 ymm registers hold 8 accumulators, so
// the even blocks (lanes 0-7) and the odd ones (lanes 8-15) take separate passes; each
// lane's additions keep their block order, so the result is the scalar reference's bits.
// The first pass streams the group from memory, the other three read it from L1/L2.
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
namespace legacy_avx2_packed {

using namespace legacy_simd;

template <class Dot, QType T>
void PackedGroup(const QMatrix& W, int g, const QuantActs& A, int i, float* Y) {
  // Without VNNI, IQ4 values are used signed (vpmaddubsw of value + 128 could saturate).
  constexpr bool kSignedIq4 = (T == QType::IQ4_NL || T == QType::IQ4_XS) && !Dot::kUnsignedIq4;
  const int nb = W.cols_padded / 32;
  const packed::GroupSections sec = packed::Sections(W, g);
  const uint8_t *group = sec.quants, *high = sec.high, *sc = sec.scales, *super = sec.super;
  // Named copies, not a structured binding: the lambdas below capture them, which clang
  // before 16 refuses for bindings (the fuzz build is clang).
  const ActRow<T> act(A, i);
  const int8_t* x = act.x;
  const float* dx = act.dx;
  const int32_t* offset = act.offset;
  const float* xsum = act.xsum;
  const __m256i table = _mm256_broadcastsi128_si256(
      kSignedIq4 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)) : Iq4Table());
  const __m256i nibble = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
  const size_t block_share = W.group_bytes / nb;
  WindowPrefetcher window(group);
  const int rows = W.rows - packed::kGroupRows * g;  // valid rows of the group (may be < 16)
  for (int half = 0; half < 2 && 8 * half < rows; ++half) {
    alignas(32) float even[8][8];  // lanes 0-7 after the even pass, [lane][row]
    __m256 t[8];
    for (int parity = 0; parity < 2; ++parity) {
      __m256 s[8];
      for (__m256& v : s) v = _mm256_setzero_ps();
      for (int b = parity; b < nb; b += 2) {
        window.Reach(group + block_share * (b + 1));
        const __m256 dxb = _mm256_set1_ps(dx[b]);
        __m256 d;
        if constexpr (T == QType::IQ4_XS) {  // d (ls - 32), exact, as UnpackLegacy
          const __m256 ds = _mm256_cvtph_ps(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(super + packed::kSuperBytes * (b / 8) + 16 * half)));
          const __m128i ls8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16 * b + 8 * half));
          d = _mm256_mul_ps(ds, _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(ls8), _mm256_set1_epi32(32))));
        } else {
          d = _mm256_cvtph_ps(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + packed::ScaleBytes(T) * b + 16 * half)));
        }
        const __m256 dd = _mm256_mul_ps(d, dxb);
        __m256 dm = _mm256_setzero_ps();
        if constexpr (HasMin(T))
          dm = _mm256_mul_ps(_mm256_cvtph_ps(
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 64 * b + 32 + 16 * half))),
                             dxb);
        __m256i h = _mm256_setzero_si256();
        if constexpr (packed::HighBytes(T))
          h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(high + 64 * b + 32 * half));
        const uint8_t* q = group + 256 * size_t(b) + 32 * half;
        [&]<int... K>(std::integer_sequence<int, K...>) __attribute__((always_inline)) {
          (
              [&]() __attribute__((always_inline)) {
                const __m256i chunk = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 64 * (K / 2)));
                __m256i u = _mm256_and_si256(K % 2 ? _mm256_srli_epi16(chunk, 4) : chunk, nibble);
                if constexpr (T == QType::Q5_0 || T == QType::Q5_1)  // bit K -> bit 4, see packed.h
                  u = _mm256_or_si256(u, _mm256_and_si256(K < 4 ? _mm256_slli_epi16(h, 4 - K)
                                                                : _mm256_srli_epi16(h, K - 4),
                                                          bit4));
                if constexpr (T == QType::IQ4_NL || T == QType::IQ4_XS) u = _mm256_shuffle_epi8(table, u);
                int32_t x4;
                std::memcpy(&x4, x + 32 * b + 4 * K, 4);
                const __m256i xv = _mm256_set1_epi32(x4);
                __m256i isum;
                if constexpr (kSignedIq4) {
                  isum = Dot::Acc(_mm256_setzero_si256(), _mm256_sign_epi8(u, u), _mm256_sign_epi8(xv, u));
                } else {
                  __m256i init = _mm256_setzero_si256();
                  if constexpr (kCorrShift<T> >= 0) init = _mm256_set1_epi32(offset[8 * b + K]);
                  isum = Dot::Acc(init, u, xv);
                }
                s[K] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(isum), s[K]);
                if constexpr (HasMin(T))
                  s[K] = _mm256_fmadd_ps(dm, _mm256_set1_ps(xsum[8 * b + K]), s[K]);  // + (m dx) xsum
              }(),
              ...);
        }
        (std::make_integer_sequence<int, 8>{});
      }
      if (parity == 0)
        for (int j = 0; j < 8; ++j) _mm256_store_ps(even[j], s[j]);
      else
        for (int j = 0; j < 8; ++j) t[j] = _mm256_add_ps(_mm256_load_ps(even[j]), s[j]);  // LaneTreeSum16
    }
    __m256 u[4];
    for (int j = 0; j < 4; ++j) u[j] = _mm256_add_ps(t[j], t[j + 4]);
    alignas(32) float y[8];
    _mm256_store_ps(y, _mm256_add_ps(_mm256_add_ps(u[0], u[2]), _mm256_add_ps(u[1], u[3])));
    float* out = Y + size_t(i) * W.rows + packed::kGroupRows * g + 8 * half;
    for (int r = 0; r < 8 && 8 * half + r < rows; ++r) out[r] = y[r];
  }
}

// Rows [r0, r1) start at a group boundary (MatMul's row chunks are whole groups).
template <class Dot, QType T>
void PackedRows(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  for (int g = r0 / packed::kGroupRows; g * packed::kGroupRows < r1; ++g)
    for (int i = 0; i < n; ++i) PackedGroup<Dot, T>(W, g, *A, i, Y);
}

template <class Dot>
RowsKernelFn Select(QType type) {
  return ForLegacyType(type, [](auto t) -> RowsKernelFn { return PackedRows<Dot, decltype(t)::value>; });
}

}  // namespace legacy_avx2_packed
}  // namespace
}  // namespace specsweep
