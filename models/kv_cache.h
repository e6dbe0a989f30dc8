// Caller-owned attention cache plus the scratch buffers of a forward pass.
// A cache built with fewer layers than the model runs only the first n_layers blocks
// (early-exit draft sharing the target's weights). Memory follows the positions used,
// not the context length: a 128k-context model run for 1k tokens holds ~1k positions
// (Reserve grows the storage, doubling, up to capacity()).
#pragma once
#include <cassert>
#include <climits>
#include <cstddef>
#include <memory>
#include <new>
#include <span>
#include <vector>

#include "models/config.h"
#include "models/kv_type.h"
#include "quant/chunk_queue.h"

namespace specsweep {

// 64-byte aligned storage. Activation and cache rows are multiples of 64 bytes for real
// model widths, so an aligned base keeps every 512-bit kernel load inside one cache line
// (split loads cost ~20% of the n = 8 float kernel on L2-resident weights).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  bool operator==(const CacheLineAllocator&) const = default;
};
using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

class KVCache {
 public:
  // n_layers <= 0: all layers; capacity <= 0: config.max_seq_len.
  explicit KVCache(const ModelConfig& config, int n_layers = 0, int capacity = 0, KvType type = KvType::F32);

  int length() const { return length_; }      // positions held
  int capacity() const { return capacity_; }  // context limit: most positions it may hold
  int reserved() const { return reserved_; }  // positions the storage has room for now
  int n_layers() const { return n_layers_; }
  int n_kv_heads() const { return n_kv_heads_; }
  int head_dim() const { return head_dim_; }
  int kv_dim() const { return n_kv_heads_ * head_dim_; }
  KvType type() const { return type_; }
  size_t bytes() const { return k_.size() + v_.size(); }  // keys and values as allocated
  // Keys and values of one position over all layers.
  size_t bytes_per_position() const { return size_t{2} * n_layers_ * kv_dim() * KvElementBytes(type_); }
  // Room for `positions` (<= capacity()) without moving storage later; Forward calls it
  // for each batch, decoders may call it once with their expected length.
  void Reserve(int positions);
  // Rolls back to the first `pos` positions (0 <= pos <= length()).
  void Truncate(int pos);

  // Token trees (SpecInfer's tree attention). Slots [0, tree_from()) hold one sequence,
  // slot s at position s. A slot s >= tree_from() holds a tree node: its parent is
  // parent(s) (tree_from()-1 for a root, else an earlier tree slot), its RoPE position
  // is its depth below tree_from()-1, and it attends to slots [0, tree_from()) plus its
  // ancestors in the tree. Without a tree tree_from() == length(), parent(s) == s-1.
  bool has_tree() const { return tree_from_ != INT_MAX; }
  int tree_from() const { return has_tree() ? tree_from_ : length_; }
  int parent(int slot) const { return slot < tree_from_ ? slot - 1 : tree_parent_[slot - tree_from_]; }
  int position(int slot) const { return slot < tree_from_ ? slot : tree_pos_[slot - tree_from_]; }
  // Records slots [start, start + parents.size()) as tree nodes with these parent slots
  // (Forward's tree mode calls it before writing them); the tree starts at `start` when
  // none is held. Throws Error on a parent that is not an earlier tree slot or the
  // slot before the tree.
  void AddTreeNodes(int start, std::span<const int> parents);
  // Keeps the root-to-node chain `path` of tree slots (path[0] a root, path[j+1] a
  // child of path[j]): their keys and values move to slots tree_from() + j, which is
  // their position, everything else after tree_from() is dropped and the cache holds a
  // sequence again (length tree_from() + path.size()).
  void KeepPath(std::span<const int> path);

  // Head-major: one KV head's rows of consecutive positions are contiguous, so
  // attention streams each head's keys and values sequentially. E is the element type
  // of type(): float for KvType::F32, uint16_t (IEEE half bits) for KvType::F16.
  template <class E>
  E* K(int layer, int kv_head, int pos) {
    return Row<E>(k_, layer, kv_head, pos);
  }  // [head_dim]
  template <class E>
  E* V(int layer, int kv_head, int pos) {
    return Row<E>(v_, layer, kv_head, pos);
  }  // [head_dim]

 private:
  using Bytes = std::vector<unsigned char, CacheLineAllocator<unsigned char>>;
  template <class E>
  E* Row(Bytes& b, int layer, int kv_head, int pos) {
    assert(sizeof(E) == KvElementBytes(type_));
    assert(pos < reserved_);
    const size_t i = ((static_cast<size_t>(layer) * n_kv_heads_ + kv_head) * reserved_ + pos) * head_dim_;
    return reinterpret_cast<E*>(b.data()) + i;
  }
  int n_layers_, capacity_, n_kv_heads_, head_dim_;
  int reserved_ = 0;
  KvType type_;
  int length_ = 0;
  int tree_from_ = INT_MAX;                  // first tree slot (INT_MAX: none)
  std::vector<int> tree_parent_, tree_pos_;  // [slot - tree_from_] of tree slots
  Bytes k_, v_;                              // [n_layers][n_kv_heads][reserved][head_dim] elements of type_

 public:
  // Forward-pass scratch, grown on demand to the largest batch seen.
  struct Scratch {
    // Shared by the forward pass's threads.
    AlignedFloats q, k, v, att_out, ob, hb, hb2, logits, scores, rope_cos, rope_sin;
    std::vector<int> tree_rows;  // the tree nodes' ancestor slots (forward.cpp QueryRuns)
    // Each thread's own residual stream and normed product input (models/forward.cpp).
    struct Own {
      AlignedFloats x, xb;
    };
    std::vector<Own> own;
    // One row-chunk queue per matrix product of a forward pass.
    std::unique_ptr<ChunkQueue[]> queues;
    size_t n_queues = 0;
  } scratch;
  void SetLength(int n) { length_ = n; }
};

}  // namespace specsweep
