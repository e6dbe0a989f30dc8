// Anonymous memory on transparent huge pages, for the large buffers (weights) that are
// filled once: far fewer page faults than 4 KiB pages (AlignedBuffer::Uninitialized).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace specsweep {

// Buffers of at least this size get their own 2 MiB aligned mapping (MapHugePages).
constexpr size_t kHugePage = size_t{2} << 20;

// `bytes` (rounded up to 4 KiB) of zeroed memory at *out, 2 MiB aligned, advised onto
// transparent huge pages and faulted in at once; the returned owner unmaps it. Throws
// Error when out of memory.
std::shared_ptr<const void> MapHugePages(size_t bytes, uint8_t** out);
// Bytes MapHugePages has mapped in this process so far: fresh memory faulted in, which
// dominates loading time (docs/performance.md, "generate against bench-forward").
uint64_t HugePageBytesMapped();

// The kernel's transparent huge page mode: "always", "madvise" or "never" (the bracketed
// word of /sys/kernel/mm/transparent_hugepage/enabled), "unknown" where it cannot be read.
std::string TransparentHugePageMode();
// Whether AlignedBuffer::Uninitialized(bytes) is backed by huge pages: kHugePage or more
// (its own mapping) and a mode that honours MADV_HUGEPAGE.
bool UninitializedOnHugePages(size_t bytes);

}  // namespace specsweep
