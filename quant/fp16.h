// Portable scalar conversions between f32 and the 16-bit float formats. These are the
// reference semantics: F16C (vcvtph2ps / vcvtps2ph with round-to-nearest-even) must
// agree with them bit for bit, which test_quant checks on all 65536 halves.
#pragma once
#include <cstdint>
#include <cstring>

namespace specsweep {

inline uint32_t F32Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float F32FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE half -> float, exact for every input (normals, subnormals, inf, NaN). Same
// algorithm as ggml/FP16 (Maratyszcza): the float ops below are exact by construction.
inline float F16ToF32(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float normalized = F32FromBits((two_w >> 4) + exp_offset) * 0x1.0p-112f;
  const uint32_t magic_mask = 126u << 23;
  const float denormalized = F32FromBits((two_w >> 17) | magic_mask) - 0.5f;
  const uint32_t cutoff = 1u << 27;
  return F32FromBits(sign | (two_w < cutoff ? F32Bits(denormalized) : F32Bits(normalized)));
}

// float -> IEEE half with round-to-nearest-even; overflow gives inf, NaN stays NaN.
inline uint16_t F32ToF16(float f) {
  float base = (__builtin_fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = F32Bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = F32FromBits((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = F32Bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

// bfloat16 is the top half of a float: widening is a shift.
inline float BF16ToF32(uint16_t b) { return F32FromBits(static_cast<uint32_t>(b) << 16); }

// float -> bfloat16, round-to-nearest-even, NaN kept quiet (ggml_compute_fp32_to_bf16).
inline uint16_t F32ToBF16(float f) {
  const uint32_t u = F32Bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64);
  return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

}  // namespace specsweep
