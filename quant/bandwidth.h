// STREAM-like memory read bandwidth, the roofline for memory-bound decoding.
#pragma once
#include <cstddef>

namespace specsweep {

// Reads a 256 MiB buffer with all OpenMP threads (NumThreads) several times and returns
// the median pass in GB/s (1e9 bytes/s). Takes about a second.
double MeasureReadBandwidthGBs();

// One timed pass over `bytes` (rounded down to 64) of `buf`; returns GB/s. The buffer
// must be 64-byte aligned. Exposed for the microbenchmark.
double ReadPassGBs(const void* buf, size_t bytes);

}  // namespace specsweep
