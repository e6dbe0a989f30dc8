#include "quant/bandwidth.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/qmatrix.h"

namespace specsweep {
namespace {

// Sum of 64-byte lines of [p, p + lines*64): eight independent integer adds per line
// (vectorized by the compiler), so the loop is bound by loads, not by a dependency
// chain. The result is consumed to keep the loads. Software prefetch 4 KB ahead, as the
// kernels do: without it the probe reads ~5% less than the F32 kernel streams, and the
// roofline would flatter every format.
uint64_t ReadLines(const uint8_t* p, size_t lines) {
  const auto* q = reinterpret_cast<const uint64_t*>(p);  // [lines][8]
  constexpr size_t kAheadLines = 64;
  uint64_t a[8] = {};
  for (size_t i = 0; i < lines; ++i) {
    __builtin_prefetch(p + 64 * (i + kAheadLines));  // past the end: harmless, never faults
    for (int k = 0; k < 8; ++k) a[k] += q[8 * i + k];
  }
  uint64_t s = 0;
  for (uint64_t v : a) s += v;
  return s;
}

volatile uint64_t g_sink;

}  // namespace

double ReadPassGBs(const void* buf, size_t bytes) {
  const size_t lines = bytes / 64;
  const auto* p = static_cast<const uint8_t*>(buf);
  uint64_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel reduction(+ : sink)
  {
    const size_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const size_t begin = lines * t / nt, end = lines * (t + 1) / nt;
    sink += ReadLines(p + 64 * begin, end - begin);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g_sink = sink;
  return static_cast<double>(lines * 64) / s / 1e9;
}

double MeasureReadBandwidthGBs() {
  constexpr size_t kBytes = size_t{256} << 20;  // far beyond any last-level cache
  AlignedBuffer buf(kBytes);                    // zeroed: pages are touched
  std::vector<double> passes;                   // [kPasses] GB/s
  constexpr int kPasses = 7;
  ReadPassGBs(buf.data(), kBytes);  // warm-up (TLB, frequency)
  for (int i = 0; i < kPasses; ++i) passes.push_back(ReadPassGBs(buf.data(), kBytes));
  std::sort(passes.begin(), passes.end());
  return passes[kPasses / 2];
}

}  // namespace specsweep
