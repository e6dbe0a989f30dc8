// 64-byte aligned byte buffers with value semantics (weights, activations, scratch).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace specsweep {

// 64-byte aligned byte buffer (AVX-512 loads) with value semantics. Its bytes are either
// owned and writable, or immutable: borrowed from a longer-lived owner (View: weights
// pointed to in a memory-mapped file) or frozen (Freeze). Copies of immutable bytes share
// them instead of copying (a tied classifier and embedding are one buffer); writing
// through the non-const data() makes a private copy first, so sharing is never visible.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);  // zeroed
  // Contents undefined, for buffers the caller fills completely: no page is written
  // twice (zeroing, then filling) and a large one is faulted in on huge pages
  // (quant/huge_pages.h).
  static AlignedBuffer Uninitialized(size_t bytes);
  // The `bytes` at p, immutable, kept alive by `owner` (p need not be 64-byte aligned:
  // only row-layout matrices, whose kernels use unaligned loads, are viewed).
  static AlignedBuffer View(const uint8_t* p, size_t bytes, std::shared_ptr<const void> owner);
  AlignedBuffer(const AlignedBuffer& o);
  AlignedBuffer& operator=(const AlignedBuffer& o);
  AlignedBuffer(AlignedBuffer&& o) noexcept { *this = std::move(o); }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  uint8_t* data() {  // copies immutable bytes first (copy on write)
    if (immutable_ && size_ > 0) Unshare();
    return ptr_;
  }
  const uint8_t* data() const { return ptr_; }
  size_t size() const { return size_; }
  // Makes the bytes immutable, so that copies share them.
  void Freeze() { immutable_ = true; }
  bool immutable() const { return immutable_; }

 private:
  void Unshare();
  std::shared_ptr<const void> owner_;  // frees the bytes (or keeps a view's source alive)
  uint8_t* ptr_ = nullptr;
  size_t size_ = 0;
  bool immutable_ = false;
};

}  // namespace specsweep
