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

// The kernels' prefetch: the window targets (PrefetchTarget below) into L2, issued in
// bursts for a buffer consumed in address order. When consumption reaches a 512-byte slot
// (lines 8 j .. 8 j + 7 of its window), the 8 lines they map to (line j of each page of
// the next window) are prefetched at once: one address computation per 8 lines. Computing every line's target
// took the scalar ports from the vector work: 768x768 F16 in L2, one thread, ran at
// 11-12 GB/s per line against 19-22 in bursts (28 with a fixed lead into L1).
// 134M bench-forward, 2 threads, T(1) medians of 4 alternating runs, per-line targets ->
// bursts: F32 19.4-23.1 -> 16.5-18.8 ms, F16 11.1-15.0 -> 8.9-10.5, Q8_0 5.7-6.6 ->
// 5.3-6.1, Q4_0 3.8-4.4 -> 3.4-4.0; n = 8 within the noise. Against the fixed lead into L1
// of earlier versions (8 KB for the quantized kernels, 4 rows for the float ones), per-line
// targets were already faster: F32 21.2-22.0 -> 17.6-20.1 ms, F16 12.6-12.7 -> 10.7-12.6,
// Q8_0 7.1-7.4 -> 5.3-6.0, Q4_0 4.4-4.8 -> 3.1-3.8, F32 n = 8 27.9-28.8 -> 20.0-24.3.
// Into L1 (T0) the window's lead (up to 64 KB) evicts lines before use when the kernel is
// compute-bound (n = 8 up to 40% slower).
class WindowPrefetcher {
 public:
  explicit WindowPrefetcher(const void* start) : next_(reinterpret_cast<uintptr_t>(start) & ~kSlotMask) {}
  // Consumption has reached `consumed`: bursts for every slot it entered.
  void Reach(const void* consumed) {
    for (const uintptr_t a = reinterpret_cast<uintptr_t>(consumed); next_ <= a; next_ += kSlotMask + 1) {
      const char* base = BurstBase(next_);
      #pragma GCC unroll 8
      for (uintptr_t p = 0; p < kPrefetchPages; ++p) _mm_prefetch(base + 4096 * p, _MM_HINT_T1);
    }
  }
  // The burst of the slot at `slot` (512-byte aligned, lines 8 j .. 8 j + 7 of its window)
  // prefetches BurstBase + 4096 p for p < 8: line j of page p of the next window.
  static const char* BurstBase(uintptr_t slot) {
    constexpr uintptr_t kWindow = 64 * kPrefetchWindowLines;  // bytes
    return reinterpret_cast<const char*>((slot & ~(kWindow - 1)) + kWindow + ((slot & (kWindow - 1)) >> 9) * 64);
  }

 private:
  static constexpr uintptr_t kSlotMask = 64 * kPrefetchPages - 1;
  uintptr_t next_;  // start of the next slot to burst
};

// The target of one consumed line (the mapping described at the top): its slot's burst
// entry for the line's position in the slot.
inline const char* PrefetchTarget(const void* consumed) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(consumed);
  return WindowPrefetcher::BurstBase(a & ~uintptr_t(511)) + 4096 * ((a >> 6) % kPrefetchPages);
}

}  // namespace specsweep
