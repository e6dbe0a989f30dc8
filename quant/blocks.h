// Quantized block layouts, byte-compatible with ggml (block_q8_0, block_q4_0) so GGUF
// tensors are used in place. Q4_G64/Q4_G128 generalise block_q4_0 to wider groups:
// element j of a group is the low nibble of qs[j] for j < G/2, the high nibble of
// qs[j - G/2] otherwise; value = (nibble - 8) * d.
#pragma once
#include <cstdint>

namespace specsweep {

using Half = uint16_t;  // ggml_half: IEEE binary16 bits

constexpr int kQ8Block = 32;  // activation and Q8_0/Q4_0 block width

// Every block struct names its element count (kValues), so that a format's entry in
// quant/qtype.h takes its shape from the struct. The float types are blocks of one.
struct BlockF32 {
  static constexpr int kValues = 1;
  float v;
};
struct BlockF16 {
  static constexpr int kValues = 1;
  Half v;
};
struct BlockBF16 {
  static constexpr int kValues = 1;
  uint16_t v;  // bfloat16 bits
};

struct BlockQ8_0 {
  static constexpr int kValues = 32;
  Half d;         // scale = amax / 127
  int8_t qs[32];  // value = qs[j] * d
};
static_assert(sizeof(BlockQ8_0) == 34, "block_q8_0 must match ggml");

template <int G>
struct BlockQ4 {
  static constexpr int kValues = G;
  Half d;             // scale = max / -8 (max: signed value of largest magnitude)
  uint8_t qs[G / 2];  // [G/2] two 4-bit values per byte, see above
};
using BlockQ4_0 = BlockQ4<32>;
using BlockQ4_G64 = BlockQ4<64>;
using BlockQ4_G128 = BlockQ4<128>;
static_assert(sizeof(BlockQ4_0) == 18, "block_q4_0 must match ggml");
static_assert(sizeof(BlockQ4_G64) == 34, "Q4_G64 block: f16 scale + 32 bytes");
static_assert(sizeof(BlockQ4_G128) == 66, "Q4_G128 block: f16 scale + 64 bytes");

}  // namespace specsweep
