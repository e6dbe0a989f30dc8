// Where the kernels' software prefetch points for a weight stream they consume in address
// order. Two patterns, one per kind of memory system, chosen per CPU by measurement
// (quant/kernel_choice.h, DefaultPrefetchPattern):
//  - window: the line of the next 32 KB window that the current line maps to when that
//    window is walked page-interleaved (line j of its page p is issued at window position
//    8 j + p). One prefetch per consumed line touches every line of the next window once, as
//    a fixed lead would, but keeps 8 pages in flight instead of one: the hardware streamer
//    works within a 4 KB page: faster on Intel (Sapphire Rapids).
//  - lead: the line 8 KB ahead, into L2: faster on AMD Zen 4, where the window was the
//    slowest way to read. 8 KB (kLeadBytes) because the K-quant pair kernels consume two
//    rows at once, so 4 KB left the second row ~3 KB of lead.
// Measurements of both: docs/kernels.md, "Software prefetch patterns".
// Prefetches never fault, so targets past the end of a buffer are harmless.
#pragma once
#include <immintrin.h>

#include <atomic>
#include <cstdint>

namespace specsweep {

enum class PrefetchPattern : uint8_t { kWindow, kLead };

constexpr uintptr_t kPrefetchPages = 8;                          // pages per window
constexpr uintptr_t kPrefetchWindowLines = 64 * kPrefetchPages;  // 64-byte lines per window
constexpr uintptr_t kPrefetchWindowBytes = 64 * kPrefetchWindowLines;
constexpr uintptr_t kLeadBytes = 8192;  // the lead pattern's distance

// The process-wide pattern, set once with the kernel choice before kernels run. Both
// patterns are one formula: the burst of the 512-byte slot s prefetches
// (s & keep) + ahead + ((s & ~keep) >> 9) * 64 + stride * p for p < 8; the window pattern
// is line j of each page of the next window (BurstBase below), the lead pattern the slot's
// own lines kLeadBytes ahead. The three numbers are read by each burst as relaxed atomics (a
// pattern held in the prefetcher, as members, made the AVX-512 F16 16-row tile 2.4x
// slower).
struct PrefetchFormula {
  std::atomic<uintptr_t> keep{~(kPrefetchWindowBytes - 1)}, ahead{kPrefetchWindowBytes}, stride{4096};
};
inline PrefetchFormula g_prefetch_formula;
inline std::atomic<PrefetchPattern> g_prefetch_pattern{PrefetchPattern::kWindow};
inline PrefetchPattern ActivePrefetchPattern() { return g_prefetch_pattern.load(std::memory_order_relaxed); }
inline void SetPrefetchPattern(PrefetchPattern p) {
  const bool lead = p == PrefetchPattern::kLead;
  g_prefetch_formula.keep.store(lead ? ~uintptr_t(0) : ~(kPrefetchWindowBytes - 1), std::memory_order_relaxed);
  g_prefetch_formula.ahead.store(lead ? kLeadBytes : kPrefetchWindowBytes, std::memory_order_relaxed);
  g_prefetch_formula.stride.store(lead ? 64 : 4096, std::memory_order_relaxed);
  g_prefetch_pattern.store(p, std::memory_order_relaxed);
}
inline const char* PrefetchPatternName(PrefetchPattern p) { return p == PrefetchPattern::kLead ? "lead" : "window"; }

// The kernels' prefetch into L2, issued in bursts for a buffer consumed in address order.
// When consumption reaches a 512-byte slot, 8 lines are prefetched at once (one address
// computation per 8 lines): under the window pattern the lines the slot's lines 8 j .. 8 j
// + 7 of its window map to (line j of each page of the next window, PrefetchTarget below),
// under the lead pattern the slot kLeadBytes ahead. Computing every line's target took
// the scalar ports from the vector work (docs/kernels.md, "Software prefetch patterns").
// Into L1 (T0) the window's lead (up to 64 KB) evicts lines before use when the kernel is
// compute-bound (n = 8 up to 40% slower).
// Pattern kActive reads the process-wide formula in each burst; kWindow and kLead are
// fixed at compile time, for kernels that dispatch on ActivePrefetchPattern() once per
// call (the AVX-512 float tiles, whose loops slowed 2.2-2.5x around the atomic loads).
enum class PrefetchBinding : uint8_t { kActive, kWindow, kLead };

// The burst of a 512-byte slot: base + stride * p for p < 8.
struct PrefetchBurst {
  const char* base;
  uintptr_t stride;
};

template <PrefetchBinding kBinding>
class BasicPrefetcher {
 public:
  explicit BasicPrefetcher(const void* start) : next_(reinterpret_cast<uintptr_t>(start) & ~kSlotMask) {}
  // Consumption has reached `consumed`: bursts for every slot it entered.
  void Reach(const void* consumed) {
    for (const uintptr_t a = reinterpret_cast<uintptr_t>(consumed); next_ <= a; next_ += kSlotMask + 1) {
      const Burst b = BurstOf(next_);
#pragma GCC unroll 8
      for (uintptr_t p = 0; p < kPrefetchPages; ++p) _mm_prefetch(b.base + b.stride * p, _MM_HINT_T1);
    }
  }
  using Burst = PrefetchBurst;
  static Burst BurstOf(uintptr_t slot) {
    if constexpr (kBinding == PrefetchBinding::kWindow) {
      return {BurstBase(slot), 4096};
    } else if constexpr (kBinding == PrefetchBinding::kLead) {
      return {reinterpret_cast<const char*>(slot + kLeadBytes), 64};
    } else {
      const PrefetchFormula& f = g_prefetch_formula;
      const uintptr_t keep = f.keep.load(std::memory_order_relaxed);
      return {reinterpret_cast<const char*>((slot & keep) + f.ahead.load(std::memory_order_relaxed) +
                                            ((slot & ~keep) >> 9) * 64),
              f.stride.load(std::memory_order_relaxed)};
    }
  }
  // The burst of the slot at `slot` (512-byte aligned, lines 8 j .. 8 j + 7 of its window)
  // under the window pattern prefetches BurstBase + 4096 p for p < 8: line j of page p of
  // the next window.
  static const char* BurstBase(uintptr_t slot) {
    constexpr uintptr_t kWindow = kPrefetchWindowBytes;
    return reinterpret_cast<const char*>((slot & ~(kWindow - 1)) + kWindow + ((slot & (kWindow - 1)) >> 9) * 64);
  }

 private:
  static constexpr uintptr_t kSlotMask = 64 * kPrefetchPages - 1;
  uintptr_t next_;  // start of the next slot to burst
};
using WindowPrefetcher = BasicPrefetcher<PrefetchBinding::kActive>;

// The target of one consumed line (the mapping described at the top): its slot's burst
// entry for the line's position in the slot.
inline const char* PrefetchTarget(const void* consumed) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(consumed);
  return WindowPrefetcher::BurstBase(a & ~uintptr_t(511)) + 4096 * ((a >> 6) % kPrefetchPages);
}

}  // namespace specsweep
