// Weight storage formats. Block layouts follow ggml so GGUF files interoperate.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace specsweep {

enum class QType : uint8_t {
  F32,
  F16,
  BF16,
  Q8_0,    // ggml block_q8_0: 32 int8 + one f16 scale
  Q4_0,    // ggml block_q4_0: 32 x 4 bit (j low nibble, j+16 high), f16 scale, offset 8
  Q4_G64,  // Q4_0 semantics with 64-wide groups (specsweep level, not in GGUF)
  Q4_G128, // Q4_0 semantics with 128-wide groups (specsweep level, not in GGUF)
  // ggml K-quants: 256-wide super-blocks with per-sub-block scales (quant/blocks_k.h).
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  // ggml's other GGUF block types (quant/blocks_legacy.h): 32-value blocks, IQ4_XS in
  // 256-value super-blocks of 32-value sub-blocks. Their kernels: quant/legacy_quants.h.
  Q4_1,
  Q5_0,
  Q5_1,
  IQ4_NL,
  IQ4_XS,
};
constexpr int kQTypeCount = static_cast<int>(QType::IQ4_XS) + 1;
// Q2_K..Q6_K.
constexpr bool IsKQuant(QType t) { return t >= QType::Q2_K && t <= QType::Q6_K; }
// Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS.
constexpr bool IsLegacyQuant(QType t) { return t >= QType::Q4_1 && t <= QType::IQ4_XS; }

// Elements per block (1 for the float types).
int BlockSize(QType t);
// Bytes per block (element bytes for the float types).
size_t BlockBytes(QType t);
bool IsQuantized(QType t);
std::string_view QTypeName(QType t);  // "f32", "f16", "bf16", "q8_0", "q4_0", "q4_g64", "q4_g128",
                                      // "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q4_1",
                                      // "q5_0", "q5_1", "iq4_nl", "iq4_xs"
// Parses a name as above (case-insensitive); throws Error naming `what` on failure.
QType ParseQType(std::string_view name, std::string_view what = "quant type");
// Whether weights can be quantized to t (--quant, --draft-quant, draft_quant,
// target_quant, `quantize`). Q2_K and Q3_K are load-only: GGUF files holding them are
// read and run, but specsweep has no quantizer for them.
bool CanQuantizeTo(QType t);
// Why CanQuantizeTo(t) is false, for error messages.
std::string LoadOnlyReason(QType t);
// ParseQType for a type to quantize to: also refuses the load-only types.
QType ParseQuantizeTarget(std::string_view name, std::string_view what);

}  // namespace specsweep
