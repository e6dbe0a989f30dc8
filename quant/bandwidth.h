// The two ceilings of the roofline model for decoding: STREAM-like memory read bandwidth
// (memory-bound decode, n = 1) and the float multiply-add peak (compute-bound batches).
#pragma once
#include <cstddef>

#include "quant/kernels.h"
#include "quant/qmatrix.h"

namespace specsweep {

constexpr size_t kReadProbeBytes = size_t{256} << 20;  // far beyond any last-level cache
constexpr int kReadProbePatterns = 5;                  // ReadPassGBs patterns

// The probe's 256 MiB, written (its pages faulted in) and on transparent huge pages where
// the kernel gives them, as the weights quantized or packed in memory are: huge pages
// stream faster (docs/kernels.md), and the probe is the ceiling.
AlignedBuffer MakeReadProbeBuffer();

// Reads a 256 MiB buffer with all OpenMP threads (NumThreads) several times with each
// software prefetch pattern (ReadPassGBs) and returns the fastest pattern's median pass in
// GB/s (1e9 bytes/s): a kernel that streamed faster than the probe would make the
// roofline flatter it. Takes about a second.
double MeasureReadBandwidthGBs();

// One timed pass over `bytes` (rounded down to 64) of `buf`; returns GB/s. The buffer
// must be 64-byte aligned. Prefetch `pattern`: 0 = a fixed 4 KB lead, 1 = the
// page-interleaved window of quant/prefetch.h into L1, 2 = the same into L2 in bursts
// (the kernels' window pattern), 3 = their lead pattern (kLeadBytes ahead, into L2 in bursts),
// 4 = none (the hardware prefetchers alone). Exposed for the microbenchmark.
double ReadPassGBs(const void* buf, size_t bytes, int pattern);

// Runs family k's FmaProbe (a runtime's kernels.base) on all OpenMP threads at once and
// returns the median of several passes in GMAC/s (1e9 multiply-adds/s, all threads).
// Takes ~0.2 s.
double MeasureFmaPeakGmacs(const KernelFamily& k);

}  // namespace specsweep
