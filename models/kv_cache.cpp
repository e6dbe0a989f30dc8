#include "models/kv_cache.h"

#include "models/error.h"

namespace specsweep {

KVCache::KVCache(const ModelConfig& c, int n_layers, int capacity)
    : n_layers_(n_layers > 0 ? n_layers : c.n_layers),
      capacity_(capacity > 0 ? capacity : c.max_seq_len),
      n_kv_heads_(c.n_kv_heads),
      head_dim_(c.head_dim()) {
  if (n_layers_ > c.n_layers)
    Fail("kv cache: n_layers: {} exceeds the model's {} layers", n_layers_, c.n_layers);
  size_t n = static_cast<size_t>(n_layers_) * capacity_ * kv_dim();
  k_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

void KVCache::Truncate(int pos) {
  if (pos < 0 || pos > length_) Fail("kv cache: truncate: position {} outside [0, {}]", pos, length_);
  length_ = pos;  // entries past pos are overwritten by the next Forward
}

}  // namespace specsweep
