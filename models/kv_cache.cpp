#include "models/kv_cache.h"

#include "models/error.h"

namespace specsweep {

KvType ParseKvType(std::string_view s, std::string_view what) {
  if (s == "f32") return KvType::F32;
  if (s == "f16") return KvType::F16;
  Fail("{}: '{}' is not a KV cache type (f32, f16)", what, s);
}

std::string_view KvTypeName(KvType t) { return t == KvType::F16 ? "f16" : "f32"; }

KVCache::KVCache(const ModelConfig& c, int n_layers, int capacity, KvType type)
    : n_layers_(n_layers > 0 ? n_layers : c.n_layers),
      capacity_(capacity > 0 ? capacity : c.max_seq_len),
      n_kv_heads_(c.n_kv_heads),
      head_dim_(c.head_dim()),
      type_(type) {
  if (n_layers_ > c.n_layers)
    Fail("kv cache: n_layers: {} exceeds the model's {} layers", n_layers_, c.n_layers);
  const size_t bytes = static_cast<size_t>(n_layers_) * capacity_ * kv_dim() * KvElementBytes(type);
  k_.assign(bytes, 0);  // zero bits: 0.0 in either type
  v_.assign(bytes, 0);
}

void KVCache::Truncate(int pos) {
  if (pos < 0 || pos > length_) Fail("kv cache: truncate: position {} outside [0, {}]", pos, length_);
  length_ = pos;  // entries past pos are overwritten by the next Forward
}

}  // namespace specsweep
