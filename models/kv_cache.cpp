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
  if (n_layers_ > c.n_layers) Fail("kv cache: n_layers: {} exceeds the model's {} layers", n_layers_, c.n_layers);
  if (capacity_ > c.max_seq_len)
    Fail("kv cache: capacity: {} exceeds the model's context length {}", capacity_, c.max_seq_len);
}

void KVCache::Reserve(int positions) {
  if (positions <= reserved_) return;
  if (positions > capacity_) Fail("kv cache: {} positions exceed the context length {}", positions, capacity_);
  // Doubling (from 256) keeps the copies amortized; never beyond the context.
  int grown = reserved_ > 0 ? reserved_ : 256;
  while (grown < positions) grown = grown > capacity_ / 2 ? capacity_ : grown * 2;
  grown = std::min(grown, capacity_);
  const size_t row = static_cast<size_t>(head_dim_) * KvElementBytes(type_);  // bytes of one position
  const size_t heads = static_cast<size_t>(n_layers_) * n_kv_heads_;
  auto regrow = [&](Bytes& b) {
    Bytes fresh(heads * grown * row, 0);  // zero bits: 0.0 in either type
    for (size_t h = 0; h < heads && reserved_ > 0; ++h)
      std::memcpy(fresh.data() + h * grown * row, b.data() + h * reserved_ * row, static_cast<size_t>(length_) * row);
    b.swap(fresh);
  };
  regrow(k_);
  regrow(v_);
  reserved_ = grown;
}

void KVCache::Truncate(int pos) {
  if (pos < 0 || pos > length_) Fail("kv cache: truncate: position {} outside [0, {}]", pos, length_);
  length_ = pos;  // entries past pos are overwritten by the next Forward
  if (pos <= tree_from_) {
    tree_from_ = INT_MAX;
    tree_parent_.clear();
    tree_pos_.clear();
  } else {
    tree_parent_.resize(pos - tree_from_);
    tree_pos_.resize(pos - tree_from_);
  }
}

void KVCache::AddTreeNodes(int start, std::span<const int> parents) {
  if (start != length_) Fail("kv cache: tree nodes at {} but the cache holds {} positions", start, length_);
  if (!has_tree()) {
    tree_from_ = start;
    tree_parent_.clear();
    tree_pos_.clear();
  }
  for (size_t i = 0; i < parents.size(); ++i) {
    const int slot = start + static_cast<int>(i), p = parents[i];
    if (p != tree_from_ - 1 && (p < tree_from_ || p >= slot)) {
      const int before = tree_from_ - 1;
      Truncate(start);  // nothing half-recorded
      Fail("kv cache: tree node {}: parent {} is neither slot {} (before the tree) nor an earlier tree node", slot, p,
           before);
    }
    tree_parent_.push_back(p);
    tree_pos_.push_back(p < tree_from_ ? tree_from_ : tree_pos_[p - tree_from_] + 1);
  }
}

void KVCache::KeepPath(std::span<const int> path) {
  const int from = tree_from();
  for (size_t j = 0; j < path.size(); ++j) {
    const int s = path[j], want_parent = j == 0 ? from - 1 : path[j - 1];
    if (s < from || s >= length_ || parent(s) != want_parent)
      Fail("kv cache: keep path: slot {} is not a child of {} in the tree", s, want_parent);
  }
  // path[j] >= from + j (a node's depth is below its slot), so copying in order never
  // overwrites a row still to be read.
  const size_t row = static_cast<size_t>(head_dim_) * KvElementBytes(type_);
  const size_t heads = static_cast<size_t>(n_layers_) * n_kv_heads_;
  for (Bytes* b : {&k_, &v_})
    for (size_t h = 0; h < heads; ++h) {
      unsigned char* base = b->data() + h * reserved_ * row;
      for (size_t j = 0; j < path.size(); ++j)
        if (path[j] != from + static_cast<int>(j))
          std::memcpy(base + (from + j) * row, base + static_cast<size_t>(path[j]) * row, row);
    }
  Truncate(from);
  length_ = from + static_cast<int>(path.size());
}

}  // namespace specsweep
