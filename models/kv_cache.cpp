#include "models/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

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
  if (capacity_ > c.max_seq_len)
    Fail("kv cache: capacity: {} exceeds the model's context length {}", capacity_, c.max_seq_len);
}

void KVCache::Reserve(int positions) {
  if (positions <= reserved_) return;
  if (positions > capacity_)
    Fail("kv cache: {} positions exceed the context length {}", positions, capacity_);
  // Doubling (from 256) keeps the copies amortized; never beyond the context.
  int grown = reserved_ > 0 ? reserved_ : 256;
  while (grown < positions) grown = grown > capacity_ / 2 ? capacity_ : grown * 2;
  grown = std::min(grown, capacity_);
  const size_t row = static_cast<size_t>(head_dim_) * KvElementBytes(type_);  // bytes of one position
  const size_t heads = static_cast<size_t>(n_layers_) * n_kv_heads_;
  auto regrow = [&](Bytes& b) {
    Bytes fresh(heads * grown * row, 0);  // zero bits: 0.0 in either type
    for (size_t h = 0; h < heads && reserved_ > 0; ++h)
      std::memcpy(fresh.data() + h * grown * row, b.data() + h * reserved_ * row,
                  static_cast<size_t>(length_) * row);
    b.swap(fresh);
  };
  regrow(k_);
  regrow(v_);
  reserved_ = grown;
}

void KVCache::Truncate(int pos) {
  if (pos < 0 || pos > length_) Fail("kv cache: truncate: position {} outside [0, {}]", pos, length_);
  length_ = pos;  // entries past pos are overwritten by the next Forward
}

}  // namespace specsweep
