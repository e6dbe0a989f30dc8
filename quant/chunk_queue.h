// Work-stealing split of chunks [0, n) over T threads, for MatMuls' row chunks.
//
// Thread t owns the static range [n t / T, n (t+1) / T) and claims it front to back, so
// each thread streams one contiguous stretch of weights and its software prefetch runs
// ahead into its own next chunk, as with schedule(static). A thread whose range is empty
// steals the back half of the largest remaining range and walks it front to back too.
// Static splits leave one vCPU idle at every join when the two run at different speeds
// or one starts late (measured: docs/kernels.md, "Work stealing between threads").
//
// Each range is one 64-bit word (next | end << 32) changed only by compare-exchange, so
// a chunk is handed out exactly once; which thread computes it never changes a result
// (every chunk computes whole dot products).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace specsweep {

class ChunkQueue {
 public:
  ChunkQueue() = default;
  ChunkQueue(int n, int threads) { Reset(n, threads); }

  // Hands out [0, n) afresh. Not thread-safe: call it before the team takes chunks.
  void Reset(int n, int threads) {
    threads_ = std::max(threads, 1);
    if (threads_ > kInline && heap_size_ < threads_) {
      heap_ = std::make_unique<Range[]>(threads_);
      heap_size_ = threads_;
    }
    for (int t = 0; t < threads_; ++t)
      At(t).v.store(Pack(int64_t(n) * t / threads_, int64_t(n) * (t + 1) / threads_), std::memory_order_relaxed);
  }

  // Next chunk for thread t (0 <= t < threads), or -1 when every chunk is taken.
  int Next(int t) {
    for (;;) {
      std::atomic<uint64_t>& own = At(t).v;
      uint64_t cur = own.load(std::memory_order_relaxed);
      while (Begin(cur) < End(cur))
        if (own.compare_exchange_weak(cur, Pack(Begin(cur) + 1, End(cur)), std::memory_order_relaxed))
          return Begin(cur);
      if (!Steal(t)) return -1;
    }
  }

 private:
  static constexpr int kInline = 16;
  struct alignas(64) Range {  // one cache line each: owners never share a line
    std::atomic<uint64_t> v{0};
  };
  static uint64_t Pack(int64_t begin, int64_t end) { return uint64_t(begin) | uint64_t(end) << 32; }
  static uint32_t Begin(uint64_t v) { return uint32_t(v); }
  static uint32_t End(uint64_t v) { return uint32_t(v >> 32); }
  Range& At(int t) { return threads_ > kInline ? heap_[t] : inline_[t]; }

  // Moves the back half (rounded up) of the largest other range into t's own; false if
  // nothing is left anywhere. Only t writes its own range while it is empty, and other
  // threads never take from an empty range, so the plain store cannot lose a claim.
  bool Steal(int t) {
    for (;;) {
      int victim = -1;
      uint64_t seen = 0;
      uint32_t most = 0;
      for (int u = 0; u < threads_; ++u) {
        const uint64_t v = At(u).v.load(std::memory_order_relaxed);
        if (u != t && Begin(v) < End(v) && End(v) - Begin(v) > most) {
          victim = u, seen = v, most = End(v) - Begin(v);
        }
      }
      if (victim < 0) return false;
      const uint32_t cut = End(seen) - (most + 1) / 2;
      if (At(victim).v.compare_exchange_strong(seen, Pack(Begin(seen), cut), std::memory_order_relaxed)) {
        At(t).v.store(Pack(cut, End(seen)), std::memory_order_relaxed);
        return true;
      }
    }
  }

  int threads_ = 1;
  Range inline_[kInline];
  std::unique_ptr<Range[]> heap_;
  int heap_size_ = 0;
};

}  // namespace specsweep
