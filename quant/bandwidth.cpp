#include "quant/bandwidth.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "quant/kernels.h"
#include "quant/prefetch.h"
#include "quant/qmatrix.h"

namespace specsweep {
namespace {

// Read patterns of the probe: a fixed 4 KB lead into L1 (one prefetch per line), the
// page-interleaved window (quant/prefetch.h) into L1 (per line), the kernels' two patterns
// into L2 in bursts of 8 (window, and the lead of quant/prefetch.h), and no software prefetch:
// a probe without the faster ones understated the ceiling and flattered the rooflines
// (docs/kernels.md, "Software prefetch patterns").
enum Pattern { kLead4K, kWindowL1, kWindowL2, kLeadL2, kNone, kPatterns };

// Sum of 64-byte lines of [p, p + lines*64): eight independent integer adds per line
// (vectorized by the compiler), so the loop is bound by loads, not by a dependency
// chain. The result is consumed to keep the loads.
template <Pattern kPattern>
uint64_t ReadLines(const uint8_t* p, size_t lines) {
  const auto* q = reinterpret_cast<const uint64_t*>(p);  // [lines][8]
  uint64_t a[8] = {};
  BasicPrefetcher<PrefetchBinding::kWindow> window(p);
  BasicPrefetcher<PrefetchBinding::kLead> lead(p);
  for (size_t i = 0; i < lines; ++i) {
    if constexpr (kPattern == kLead4K) _mm_prefetch(reinterpret_cast<const char*>(p) + 64 * (i + 64), _MM_HINT_T0);
    if constexpr (kPattern == kWindowL1) _mm_prefetch(PrefetchTarget(p + 64 * i), _MM_HINT_T0);
    if constexpr (kPattern == kWindowL2) window.Reach(p + 64 * i);
    if constexpr (kPattern == kLeadL2) lead.Reach(p + 64 * i);
    for (int k = 0; k < 8; ++k) a[k] += q[8 * i + k];
  }
  uint64_t s = 0;
  for (uint64_t v : a) s += v;
  return s;
}

uint64_t ReadLines(int pattern, const uint8_t* p, size_t lines) {
  switch (pattern) {
    case kLead4K: return ReadLines<kLead4K>(p, lines);
    case kWindowL1: return ReadLines<kWindowL1>(p, lines);
    case kWindowL2: return ReadLines<kWindowL2>(p, lines);
    case kLeadL2: return ReadLines<kLeadL2>(p, lines);
    default: return ReadLines<kNone>(p, lines);
  }
}

volatile uint64_t g_sink;

}  // namespace

double ReadPassGBs(const void* buf, size_t bytes, int pattern) {
  const size_t lines = bytes / 64;
  const auto* p = static_cast<const uint8_t*>(buf);
  uint64_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel reduction(+ : sink)
  {
    const size_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const size_t begin = lines * t / nt, end = lines * (t + 1) / nt;
    sink += ReadLines(pattern, p + 64 * begin, end - begin);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g_sink = sink;
  return static_cast<double>(lines * 64) / s / 1e9;
}

namespace {

// Median of `passes` calls of pass() after one warm-up call.
template <class Pass>
double MedianPass(int passes, Pass pass) {
  pass();                 // warm-up (TLB, frequency)
  std::vector<double> v;  // [passes]
  for (int i = 0; i < passes; ++i) v.push_back(pass());
  std::sort(v.begin(), v.end());
  return v[passes / 2];
}

}  // namespace

AlignedBuffer MakeReadProbeBuffer() {
  AlignedBuffer buf = AlignedBuffer::Uninitialized(kReadProbeBytes);
  std::memset(buf.data(), 1, kReadProbeBytes);
  return buf;
}

double MeasureReadBandwidthGBs() {
  static_assert(kPatterns == kReadProbePatterns);
  AlignedBuffer buf = MakeReadProbeBuffer();
  double best = 0;
  for (int pattern = 0; pattern < kPatterns; ++pattern)
    best = std::max(best, MedianPass(7, [&] { return ReadPassGBs(buf.data(), kReadProbeBytes, pattern); }));
  return best;
}

double MeasureFmaPeakGmacs(const KernelFamily& k) {
  const FmaProbeFn probe = k.fma_probe;
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
