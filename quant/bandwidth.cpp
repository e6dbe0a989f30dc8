#include "quant/bandwidth.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/kernels.h"
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

namespace {

// Median of `passes` calls of pass() after one warm-up call.
template <class Pass>
double MedianPass(int passes, Pass pass) {
  pass();  // warm-up (TLB, frequency)
  std::vector<double> v;  // [passes]
  for (int i = 0; i < passes; ++i) v.push_back(pass());
  std::sort(v.begin(), v.end());
  return v[passes / 2];
}

}  // namespace

double MeasureReadBandwidthGBs() {
  constexpr size_t kBytes = size_t{256} << 20;  // far beyond any last-level cache
  AlignedBuffer buf(kBytes);                    // zeroed: pages are touched
  return MedianPass(7, [&] { return ReadPassGBs(buf.data(), kBytes); });
}

double MeasureFmaPeakGmacs() {
  const FmaProbeFn probe = ActiveKernels().fma_probe;
  constexpr long kSteps = 1 << 20;  // ~20 ms per pass at 16-lane widths
  return MedianPass(7, [&] {
    double macs = 0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel reduction(+ : macs)
    macs += probe(kSteps);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return macs / s / 1e9;
  });
}

}  // namespace specsweep
