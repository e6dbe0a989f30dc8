// Weight storage formats. Block layouts follow ggml so GGUF files interoperate.
//
// Each format is one entry of kQTypes below: its name, group, block shape (sizeof of its
// block struct in quant/blocks*.h) and capabilities. Its group says which activations its
// kernels take, where its quantizer lives (quant/row_codecs.h) and how every kernel family
// finds its kernels (quant/kernels.h), so adding a format means its entry, its block struct
// and its kernels.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "quant/blocks.h"
#include "quant/blocks_k.h"
#include "quant/blocks_legacy.h"

namespace specsweep {

// One kQTypes entry per value, in this order.
enum class QType : uint8_t {
  F32,
  F16,
  BF16,
  Q8_0,     // ggml block_q8_0: 32 int8 + one f16 scale
  Q4_0,     // ggml block_q4_0: 32 x 4 bit (j low nibble, j+16 high), f16 scale, offset 8
  Q4_G64,   // Q4_0 semantics with 64-wide groups (specsweep level, not in GGUF)
  Q4_G128,  // Q4_0 semantics with 128-wide groups (specsweep level, not in GGUF)
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

// The format groups: one kind of activations, one quantizer and one kernel dispatch each.
enum class QGroup : uint8_t {
  kFloat,   // F32, F16, BF16: float activations, the families' own kernels (quant/kernels.h)
  kQ8,      // Q8_0, Q4_0, Q4_G64, Q4_G128: 32-wide int8 activations, the families' own kernels
  kLegacy,  // Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS: 32-wide int8 activations (quant/legacy_quants.h)
  kKQuant,  // Q2_K..Q6_K: 256-wide Q8_K activations (quant/kquants.h)
};

struct QTypeTraits {
  QType type;
  std::string_view name;  // as --quant and the records spell it
  QGroup group;
  int block_size;           // elements per block (1 for the float types)
  size_t block_bytes;       // bytes per block (element bytes for the float types)
  bool quantizable = true;  // specsweep has a quantizer for it (else load-only)
  bool packed16 = false;    // has the 16-row interleaved layout (quant/packed.h)
  bool has_min = false;     // 32-value blocks of value = d q + m (Q4_1, Q5_1)
  bool calibrated = false;  // its kernel family is chosen by calibration (quant/kernel_choice.h)

  constexpr QTypeTraits LoadOnly() const { return With(&QTypeTraits::quantizable, false); }
  constexpr QTypeTraits Packed16() const { return With(&QTypeTraits::packed16, true); }
  constexpr QTypeTraits WithMin() const { return With(&QTypeTraits::has_min, true); }
  constexpr QTypeTraits Calibrated() const { return With(&QTypeTraits::calibrated, true); }

 private:
  constexpr QTypeTraits With(bool QTypeTraits::*field, bool value) const {
    QTypeTraits t = *this;
    t.*field = value;
    return t;
  }
};

// The entry of a format stored in `Block`s (Block::kValues elements in sizeof(Block) bytes).
template <class Block>
constexpr QTypeTraits Format(QType type, std::string_view name, QGroup group) {
  return {type, name, group, Block::kValues, sizeof(Block)};
}

inline constexpr QTypeTraits kQTypes[] = {
    Format<BlockF32>(QType::F32, "f32", QGroup::kFloat).Calibrated(),
    Format<BlockF16>(QType::F16, "f16", QGroup::kFloat).Calibrated(),
    Format<BlockBF16>(QType::BF16, "bf16", QGroup::kFloat).Calibrated(),
    Format<BlockQ8_0>(QType::Q8_0, "q8_0", QGroup::kQ8).Packed16().Calibrated(),
    Format<BlockQ4_0>(QType::Q4_0, "q4_0", QGroup::kQ8).Packed16().Calibrated(),
    // Not calibrated: their row-layout kernels are not in the scalar order (quant/kernels.h),
    // so a family change there would change logits.
    Format<BlockQ4_G64>(QType::Q4_G64, "q4_g64", QGroup::kQ8),
    Format<BlockQ4_G128>(QType::Q4_G128, "q4_g128", QGroup::kQ8),
    // Load-only, with the scalar kernel alone (nothing to calibrate).
    Format<BlockQ2_K>(QType::Q2_K, "q2_k", QGroup::kKQuant).LoadOnly(),
    Format<BlockQ3_K>(QType::Q3_K, "q3_k", QGroup::kKQuant).LoadOnly(),
    Format<BlockQ4_K>(QType::Q4_K, "q4_k", QGroup::kKQuant).Calibrated(),
    Format<BlockQ5_K>(QType::Q5_K, "q5_k", QGroup::kKQuant).Calibrated(),
    Format<BlockQ6_K>(QType::Q6_K, "q6_k", QGroup::kKQuant).Calibrated(),
    Format<BlockQ4_1>(QType::Q4_1, "q4_1", QGroup::kLegacy).Packed16().WithMin().Calibrated(),
    Format<BlockQ5_0>(QType::Q5_0, "q5_0", QGroup::kLegacy).Packed16().Calibrated(),
    Format<BlockQ5_1>(QType::Q5_1, "q5_1", QGroup::kLegacy).Packed16().WithMin().Calibrated(),
    Format<BlockIQ4_NL>(QType::IQ4_NL, "iq4_nl", QGroup::kLegacy).Packed16().Calibrated(),
    Format<BlockIQ4_XS>(QType::IQ4_XS, "iq4_xs", QGroup::kLegacy).Packed16().Calibrated(),
};
constexpr int kQTypeCount = static_cast<int>(std::size(kQTypes));

constexpr bool QTypesInEnumOrder() {
  for (int t = 0; t < kQTypeCount; ++t)
    if (static_cast<int>(kQTypes[t].type) != t) return false;
  return true;
}
static_assert(QTypesInEnumOrder(), "kQTypes: one entry per QType, in enum order");

constexpr const QTypeTraits& Traits(QType t) { return kQTypes[static_cast<int>(t)]; }
constexpr QGroup GroupOf(QType t) { return Traits(t).group; }
constexpr bool IsKQuant(QType t) { return GroupOf(t) == QGroup::kKQuant; }
constexpr bool IsLegacyQuant(QType t) { return GroupOf(t) == QGroup::kLegacy; }
// Elements per block (1 for the float types).
constexpr int BlockSize(QType t) { return Traits(t).block_size; }
// Bytes per block (element bytes for the float types).
constexpr size_t BlockBytes(QType t) { return Traits(t).block_bytes; }
constexpr bool IsQuantized(QType t) { return GroupOf(t) != QGroup::kFloat; }
// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_g64", "q4_g128", "q2_k", "q3_k", "q4_k",
// "q5_k", "q6_k", "q4_1", "q5_0", "q5_1", "iq4_nl", "iq4_xs"; "?" for no QType.
constexpr std::string_view QTypeName(QType t) { return static_cast<int>(t) < kQTypeCount ? Traits(t).name : "?"; }
// Parses a name as above (case-insensitive); throws Error naming `what` on failure.
QType ParseQType(std::string_view name, std::string_view what = "quant type");
// Whether weights can be quantized to t (--quant, --draft-quant, draft_quant,
// target_quant, `quantize`). Q2_K and Q3_K are load-only: GGUF files holding them are
// read and run, but specsweep has no quantizer for them.
constexpr bool CanQuantizeTo(QType t) { return Traits(t).quantizable; }
// Why CanQuantizeTo(t) is false, for error messages.
std::string LoadOnlyReason(QType t);
// ParseQType for a type to quantize to: also refuses the load-only types.
QType ParseQuantizeTarget(std::string_view name, std::string_view what);

namespace qtype_detail {
template <QGroup G, QType T, class R, class F>
R CallIfIn(F& f) {
  if constexpr (Traits(T).group == G)
    return f(std::integral_constant<QType, T>{});
  else
    return R{};
}
}  // namespace qtype_detail

// f(std::integral_constant<QType, T>{}) for the format T == type if T is in group G, else
// R{}: the type switch of a group's kernel tables, which a new format joins by its entry.
template <QGroup G, class R, class F>
R ForTypeIn(QType type, F&& f) {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    R r{};
    (void)((static_cast<size_t>(type) == I && (r = qtype_detail::CallIfIn<G, static_cast<QType>(I), R>(f), true)) ||
           ...);
    return r;
  }
  (std::make_index_sequence<kQTypeCount>{});
}

}  // namespace specsweep
