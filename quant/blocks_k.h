// ggml's K-quant blocks, byte for byte: super-blocks of 256 values, split into sub-blocks
// of 32 (Q4_K, Q5_K: 6-bit scale and min each) or 16 (Q2_K: 4-bit scale and min;
// Q3_K: 6-bit signed scale; Q6_K: 8-bit signed scale). Element e of a super-block:
//   Q2_K  q = (qs[32 (e/128) + e%32] >> 2 ((e%128)/32)) & 3            sub-block e/16
//         value = d (sc & 15) q - dmin (sc >> 4)
//   Q3_K  q = that 2-bit value - (bit 4 (e/128) + (e%128)/32 of hmask[e%32] ? 0 : 4)
//         value = d (sc6 - 32) q, sc6 unpacked from scales[12]       sub-block e/16
//   Q4_K  q = nibble (low if e%64 < 32) of qs[32 (e/64) + e%32]       sub-block e/32
//         value = d sc q - dmin m, (sc, m) 6-bit each, packed in scales[12]
//   Q5_K  as Q4_K plus bit e/32 of qh[e%32] as bit 4 of q
//   Q6_K  q = nibble of ql[64 (e/128) + e%64] (low if e%128 < 64) | 2 bits of
//         qh[32 (e/128) + e%32] at shift 2 ((e%128)/32), as bits 4..5; value = d sc (q - 32),
//         sc = scales[e/16]
// BlockQ8_K is ggml's activation block for the K-quant dot products.
#pragma once
#include <cstdint>

#include "quant/blocks.h"

namespace specsweep {

constexpr int kQK = 256;  // K-quant super-block width

struct BlockQ2_K {
  static constexpr int kValues = kQK;
  uint8_t scales[16];  // low nibble scale, high nibble min, per 16 values
  uint8_t qs[64];      // 2-bit quants
  Half d;              // super-block scale of the scales
  Half dmin;           // super-block scale of the mins
};
static_assert(sizeof(BlockQ2_K) == 84, "block_q2_K must match ggml");

struct BlockQ3_K {
  static constexpr int kValues = kQK;
  uint8_t hmask[32];   // high bit of the 3-bit quants
  uint8_t qs[64];      // low 2 bits
  uint8_t scales[12];  // 16 scales of 6 bits (offset 32)
  Half d;
};
static_assert(sizeof(BlockQ3_K) == 110, "block_q3_K must match ggml");

struct BlockQ4_K {
  static constexpr int kValues = kQK;
  Half d;
  Half dmin;
  uint8_t scales[12];  // 8 scales and 8 mins of 6 bits
  uint8_t qs[128];     // 4-bit quants
};
static_assert(sizeof(BlockQ4_K) == 144, "block_q4_K must match ggml");

struct BlockQ5_K {
  static constexpr int kValues = kQK;
  Half d;
  Half dmin;
  uint8_t scales[12];
  uint8_t qh[32];   // bit 4 of the quants
  uint8_t qs[128];  // low 4 bits
};
static_assert(sizeof(BlockQ5_K) == 176, "block_q5_K must match ggml");

struct BlockQ6_K {
  static constexpr int kValues = kQK;
  uint8_t ql[128];    // low 4 bits
  uint8_t qh[64];     // high 2 bits
  int8_t scales[16];  // one per 16 values
  Half d;
};
static_assert(sizeof(BlockQ6_K) == 210, "block_q6_K must match ggml");

}  // namespace specsweep
