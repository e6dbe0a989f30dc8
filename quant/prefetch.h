// Where the kernels' software prefetch points for a weight stream they consume in address
// order: the line of the next 32 KB window that the current line maps to when that window
// is walked page-interleaved (line j of its page p is issued at window position 8 j + p).
// One prefetch per consumed line touches every line of the next window once, as a fixed
// lead would, but keeps 8 pages in flight instead of one: the hardware streamer works
// within a 4 KB page, and on this 2-vCPU VM reading 8 pages at a time streams 13-14 GB/s
// per core where one sequential stream with a fixed 4 KB lead gets ~10 (STREAM-like read,
// 256 MiB). Prefetches never fault, so targets past the end of a buffer are harmless.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace specsweep {

constexpr uintptr_t kPrefetchPages = 8;                        // pages per window
constexpr uintptr_t kPrefetchWindowLines = 64 * kPrefetchPages;  // 64-byte lines per window

inline const char* PrefetchTarget(const void* consumed) {
  const uintptr_t line = reinterpret_cast<uintptr_t>(consumed) >> 6;
  const uintptr_t k = line % kPrefetchWindowLines;  // position in the current window
  const uintptr_t next = line - k + kPrefetchWindowLines;
  return reinterpret_cast<const char*>((next + (k % kPrefetchPages) * 64 + k / kPrefetchPages) << 6);
}

// The kernels' prefetch for a weight line they are consuming: its target, into L2.
// 134M bench-forward, 2 threads, T(1) medians of 3 alternating runs against a fixed lead
// into L1 (8 KB for the quantized kernels, 4 rows for the float ones): F32 21.2-22.0 ->
// 17.6-20.1 ms, F16 12.6-12.7 -> 10.7-12.6, Q8_0 7.1-7.4 -> 5.3-6.0, Q4_0 4.4-4.8 ->
// 3.1-3.8; n = 8: F32 27.9-28.8 -> 20.0-24.3, the other formats within the noise.
// Into L1 (T0) the window's lead (up to 64 KB) evicts lines before use when the kernel is
// compute-bound (n = 8 up to 40% slower). Cost: the target takes ~10 scalar operations,
// which compete with the vector work when the weights are already in L2 (768x768 F16,
// one thread: ~2x slower); issuing the targets in bursts of 8 fixed that but lost the
// n = 8 gains, and the real tinystories models decode at the same speed either way.
inline void PrefetchWeights(const void* consumed) { _mm_prefetch(PrefetchTarget(consumed), _MM_HINT_T1); }

}  // namespace specsweep
