// ggml's other 32-value block types, byte for byte, as llama.cpp writes them (its fallback
// for rows K-quants cannot cover, and the older/non-linear presets). Element j of a 32-value
// block: nibble n_j = low nibble of qs[j] for j < 16, high nibble of qs[j - 16] otherwise;
//   Q4_1    value = d n_j + m
//   Q5_0    value = d ((n_j | bit j of qh << 4) - 16)
//   Q5_1    value = d (n_j | bit j of qh << 4) + m           (qh: little-endian u32)
//   IQ4_NL  value = d kIq4nlValues[n_j]
//   IQ4_XS  256-value super-block of 8 such sub-blocks, sub-block k (qs + 16 k) scaled by
//           d (ls_k - 32), ls_k = nibble k%2 of scales_l[k/2] | bits 2k..2k+1 of scales_h << 4
// (ggml computes d * n then + m, two roundings; d (ls - 32) is exact in float).
#pragma once
#include <cstdint>

#include "quant/blocks.h"

namespace specsweep {

// ggml's kvalues_iq4nl: the non-linear 4-bit code book of IQ4_NL and IQ4_XS.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

struct BlockQ4_1 {
  static constexpr int kValues = 32;
  Half d, m;  // scale, minimum
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_1) == 20, "block_q4_1 must match ggml");

struct BlockQ5_0 {
  static constexpr int kValues = 32;
  Half d;
  uint8_t qh[4];  // bit 4 of the 32 values
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22, "block_q5_0 must match ggml");

struct BlockQ5_1 {
  static constexpr int kValues = 32;
  Half d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24, "block_q5_1 must match ggml");

struct BlockIQ4_NL {
  static constexpr int kValues = 32;
  Half d;
  uint8_t qs[16];  // indices into kIq4nlValues
};
static_assert(sizeof(BlockIQ4_NL) == 18, "block_iq4_nl must match ggml");

struct BlockIQ4_XS {
  static constexpr int kValues = 256;  // 8 sub-blocks of 32
  Half d;
  uint16_t scales_h;    // high 2 bits of the 8 sub-block scales
  uint8_t scales_l[4];  // low 4 bits, two per byte
  uint8_t qs[128];
};
static_assert(sizeof(BlockIQ4_XS) == 136, "block_iq4_xs must match ggml");

}  // namespace specsweep
