#include "quant/huge_pages.h"

#include <atomic>
#include <fstream>

#include <sys/mman.h>

#include "base/error.h"

namespace specsweep {
namespace {
std::atomic<uint64_t> mapped_bytes{0};
}  // namespace

uint64_t HugePageBytesMapped() { return mapped_bytes.load(std::memory_order_relaxed); }

// A 1.1B-parameter model takes ~1200 huge pages instead of ~600 000 small ones (in a VM
// each fault is a trap that costs more than zeroing the page).
std::shared_ptr<const void> MapHugePages(size_t bytes, uint8_t** out) {
  const size_t len = (bytes + 4095) / 4096 * 4096;
  void* raw = ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) Fail("out of memory allocating {} bytes", bytes);
  // Trim to a 2 MiB aligned start so that whole huge pages fit.
  const uintptr_t b = reinterpret_cast<uintptr_t>(raw), a = (b + kHugePage - 1) / kHugePage * kHugePage;
  if (a > b) ::munmap(raw, a - b);
  if (b + kHugePage > a) ::munmap(reinterpret_cast<void*>(a + len), b + kHugePage - a);
  auto* p = reinterpret_cast<uint8_t*>(a);
  ::madvise(p, len, MADV_HUGEPAGE);  // a hint: without THP the pages are small, nothing else changes
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // linux/mman.h, older libc headers lack it
#endif
  // Faulted in by one call rather than by the first writes, an order of magnitude faster
  // in a VM (docs/kernels.md, "Huge pages"). A hint too: on failure (kernels before 5.14)
  // the writes fault the pages in.
  ::madvise(p, len, MADV_POPULATE_WRITE);
  mapped_bytes.fetch_add(len, std::memory_order_relaxed);
  *out = p;
  return std::shared_ptr<const void>(p, [len](const void* q) { ::munmap(const_cast<void*>(q), len); });
}

std::string TransparentHugePageMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");  // e.g. "always [madvise] never"
  std::string line;
  std::getline(f, line);
  const size_t a = line.find('['), b = line.find(']');
  return a != std::string::npos && b != std::string::npos && b > a ? line.substr(a + 1, b - a - 1) : "unknown";
}

bool UninitializedOnHugePages(size_t bytes) {
  static const std::string mode = TransparentHugePageMode();
  return bytes >= kHugePage && (mode == "always" || mode == "madvise");
}

}  // namespace specsweep
