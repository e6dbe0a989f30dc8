#include "quant/aligned_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/error.h"
#include "quant/huge_pages.h"

namespace specsweep {
namespace {

std::shared_ptr<const void> AllocZeroed(size_t bytes, uint8_t** out) {
  const size_t alloc = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, alloc));
  if (!p) Fail("out of memory allocating {} bytes", bytes);
  std::memset(p, 0, alloc);
  *out = p;
  return std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
}

}  // namespace

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) { owner_ = AllocZeroed(bytes, &ptr_); }

AlignedBuffer AlignedBuffer::Uninitialized(size_t bytes) {
  AlignedBuffer b;
  b.size_ = bytes;
  if (bytes >= kHugePage) {
    b.owner_ = MapHugePages(bytes, &b.ptr_);
    return b;
  }
  const size_t alloc = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  b.ptr_ = static_cast<uint8_t*>(std::aligned_alloc(64, alloc));
  if (!b.ptr_) Fail("out of memory allocating {} bytes", bytes);
  std::memset(b.ptr_ + bytes, 0, alloc - bytes);  // as past the end of a huge one
  b.owner_ = std::shared_ptr<const void>(b.ptr_, [](const void* q) { std::free(const_cast<void*>(q)); });
  return b;
}

AlignedBuffer AlignedBuffer::View(const uint8_t* p, size_t bytes, std::shared_ptr<const void> owner) {
  AlignedBuffer b;
  b.owner_ = std::move(owner);
  b.ptr_ = const_cast<uint8_t*>(p);  // never written: immutable
  b.size_ = bytes;
  b.immutable_ = true;
  return b;
}

AlignedBuffer::AlignedBuffer(const AlignedBuffer& o) {
  if (o.immutable_) {
    owner_ = o.owner_, ptr_ = o.ptr_, size_ = o.size_, immutable_ = true;
    return;
  }
  *this = Uninitialized(o.size_);
  if (o.size_) std::memcpy(ptr_, o.ptr_, o.size_);
}

AlignedBuffer& AlignedBuffer::operator=(const AlignedBuffer& o) {
  if (this != &o) *this = AlignedBuffer(o);
  return *this;
}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    owner_ = std::move(o.owner_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    size_ = std::exchange(o.size_, 0);
    immutable_ = std::exchange(o.immutable_, false);
  }
  return *this;
}

void AlignedBuffer::Unshare() {
  AlignedBuffer copy = Uninitialized(size_);
  std::memcpy(copy.ptr_, ptr_, size_);
  *this = std::move(copy);
}

}  // namespace specsweep
