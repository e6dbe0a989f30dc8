// Pieces of the Q4_1/Q5_0/Q5_1/IQ4_NL/IQ4_XS SIMD kernels shared by the families (semantics
// in quant/legacy_quants.h); included by each kernel file after its SPECSWEEP_TARGET_PUSH.
// A 32-value block is handled as 32 unsigned bytes u_e (nibble | high bit; IQ4: the code
// book value + 128) against the int8 activations, so one u8 x s8 multiply-add gives the
// 8 lanes' sums; the offset of the signed types comes back exactly through the
// activations' 4-value sums, which QuantActs::corr holds as -8 sum:
//   isum = sum u_e xq_e - off xsum = sum u_e xq_e + (off / 8) corr,  off = 16 (Q5_0), 128 (IQ4);
// for Q4_1/Q5_1, xsum = -(corr >> 3).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/blocks_legacy.h"
#include "quant/fp16.h"
#include "quant/legacy_quants.h"
#include "quant/qtype.h"

namespace specsweep {
namespace {
namespace legacy_simd {

template <QType T>
constexpr size_t kBlockBytes = T == QType::Q4_1     ? sizeof(BlockQ4_1)
                               : T == QType::Q5_0   ? sizeof(BlockQ5_0)
                               : T == QType::Q5_1   ? sizeof(BlockQ5_1)
                               : T == QType::IQ4_NL ? sizeof(BlockIQ4_NL)
                                                    : sizeof(BlockIQ4_XS);
// log2(off / 8) for the signed types' offset (above); -1: none.
template <QType T>
constexpr int kCorrShift = T == QType::Q5_0                           ? 1
                           : T == QType::IQ4_NL || T == QType::IQ4_XS ? 4
                                                                      : -1;

// Activation row i's inputs of the packed kernels: the int8 values and block scales, the
// signed types' offset correction per 4 values (corr << kCorrShift) and the min types'
// 4-value sums as floats (the min's term).
template <QType T>
struct ActRow {
  const int8_t* x;        // [cols]
  const float* dx;        // [cols/32]
  const int32_t* offset;  // [cols/4]
  const float* xsum;      // [cols/4]
  ActRow(const QuantActs& A, int i)
      : x(A.Q(i)), dx(A.D(i)), offset(A.Offsets(i, kCorrShift<T> >= 0 ? kCorrShift<T> : 1)), xsum(A.XSum(i)) {}
};

// The 16 code-book values + 128, as unsigned bytes.
inline __m128i Iq4Table() {
  alignas(16) uint8_t t[16];
  for (int k = 0; k < 16; ++k) t[k] = static_cast<uint8_t>(kIq4nlValues[k] + 128);
  return _mm_load_si128(reinterpret_cast<const __m128i*>(t));
}

// Weight block b of a row (IQ4_XS: sub-block b): its qs, its 32-bit high-bit mask (Q5_0/Q5_1).
template <QType T>
inline const uint8_t* Qs(const uint8_t* row, int b) {
  if constexpr (T == QType::IQ4_XS)
    return reinterpret_cast<const BlockIQ4_XS*>(row)[b / 8].qs + 16 * (b % 8);
  else if constexpr (T == QType::Q4_1)
    return reinterpret_cast<const BlockQ4_1*>(row)[b].qs;
  else if constexpr (T == QType::Q5_0)
    return reinterpret_cast<const BlockQ5_0*>(row)[b].qs;
  else if constexpr (T == QType::Q5_1)
    return reinterpret_cast<const BlockQ5_1*>(row)[b].qs;
  else
    return reinterpret_cast<const BlockIQ4_NL*>(row)[b].qs;
}
template <QType T>
inline uint32_t HighBits(const uint8_t* row, int b) {
  uint32_t h = 0;
  if constexpr (T == QType::Q5_0) std::memcpy(&h, reinterpret_cast<const BlockQ5_0*>(row)[b].qh, 4);
  if constexpr (T == QType::Q5_1) std::memcpy(&h, reinterpret_cast<const BlockQ5_1*>(row)[b].qh, 4);
  return h;
}

// The 8 sub-block scales d (ls - 32) of IQ4_XS super-block `blk`.
inline __m256 Iq4XsScales(const uint8_t* blk) {
  const auto& k = *reinterpret_cast<const BlockIQ4_XS*>(blk);
  uint32_t lo;
  std::memcpy(&lo, k.scales_l, 4);
  const __m256i l =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(lo)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                       _mm256_set1_epi32(15));
  const __m256i h =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(k.scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                       _mm256_set1_epi32(3));
  const __m256i ls = _mm256_or_si256(l, _mm256_slli_epi32(h, 4));
  return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(k.d)), _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32))));
}

// The float scales of blocks b and b1 (b1 == b for a lone last block): [d_b, d_b1, ..]
// or, with a min, [d_b, m_b, d_b1, m_b1]. IQ4_XS: the sub-block scales d (ls - 32).
template <QType T>
inline __m128 Scales(const uint8_t* row, int b, int b1) {
  if constexpr (T == QType::IQ4_XS) {
    auto dl = [row](int s) {
      const auto& k = reinterpret_cast<const BlockIQ4_XS*>(row)[s / 8];
      const int j = s % 8;
      const int ls = ((k.scales_l[j / 2] >> 4 * (j % 2)) & 0x0F) | ((k.scales_h >> 2 * j) & 3) << 4;
      return _cvtsh_ss(k.d) * static_cast<float>(ls - 32);
    };
    return _mm_setr_ps(dl(b), dl(b1), 0, 0);
  } else if constexpr (HasMin(T)) {
    uint32_t a, c;
    std::memcpy(&a, row + kBlockBytes<T> * b, 4);
    std::memcpy(&c, row + kBlockBytes<T> * b1, 4);
    return _mm_cvtph_ps(_mm_setr_epi32(int(a), int(c), 0, 0));
  } else {
    uint16_t a, c;
    std::memcpy(&a, row + kBlockBytes<T> * b, 2);
    std::memcpy(&c, row + kBlockBytes<T> * b1, 2);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(int(a | uint32_t(c) << 16)));
  }
}

}  // namespace legacy_simd
}  // namespace
}  // namespace specsweep
