#include "quant/runtime.h"

#include <omp.h>

#include <algorithm>

#include "base/error.h"

namespace specsweep {

int MaxThreads() { return std::min(1024, std::max(64, 4 * omp_get_num_procs())); }

int ResolveThreads(int n) {
  if (n < 0 || n > MaxThreads())
    Fail("threads: {} is out of range 0..{} (0: all cores; the limit is 4 x {} cores, at least 64)", n, MaxThreads(),
         omp_get_num_procs());
  return n > 0 ? n : omp_get_num_procs();
}

}  // namespace specsweep
