// Element type of the attention (KV) cache.
#pragma once
#include <cstddef>
#include <string_view>

namespace specsweep {

// F32 keeps keys and values as computed. F16 rounds each to half (round-to-nearest-even)
// once, when it is written, and widens it exactly when read: attention streams half the
// bytes per position (llama.cpp's default cache type), and results still depend only on
// the inputs, never on the batch or the thread count.
enum class KvType { F32, F16 };

constexpr size_t KvElementBytes(KvType t) { return t == KvType::F16 ? 2 : 4; }

// "f32", "f16"; otherwise throws an Error naming `what` (an option or field).
KvType ParseKvType(std::string_view s, std::string_view what = "kv_type");
std::string_view KvTypeName(KvType t);

}  // namespace specsweep
