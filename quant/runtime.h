// What a forward pass or a matrix product runs on: the thread bound, how a forward pass
// sizes its team, and the kernel family of each weight format. The caller builds it (the
// harness once at the process edge, from --threads and the environment: harness/measure/
// process_runtime.h; tests for themselves) and passes it down; a record states the
// runtime it ran with. Nothing below the harness keeps one of its own.
#pragma once
#include "quant/kernel_choice.h"

namespace specsweep {

// How Forward sizes its thread team. kAuto: Runtime::threads when a layer's work for the
// call is at least kTeamLayerMacs multiply-adds (models/forward.h), else one thread (no
// OpenMP region); kSerial / kFull: always one / Runtime::threads (tests and
// bench-forward's comparisons). The team size never changes a result, only the time.
enum class TeamPolicy { kAuto, kSerial, kFull };

struct Runtime {
  int threads = 1;  // the most threads a call may use (>= 1)
  TeamPolicy team = TeamPolicy::kAuto;
  KernelChoice kernels = DefaultKernels();
  // The family of the activations and of most formats ("avx512", ...), as records state it.
  const char* kernel_isa() const { return kernels.base->name; }
};

// The largest thread count a runtime takes: 4 x the cores, at least 64, at most 1024
// (libgomp crashes creating 100000 threads and takes 48 s for 20000).
int MaxThreads();
// --threads n as a thread count: n for 1..MaxThreads(), the cores for 0; Error outside.
int ResolveThreads(int n);

}  // namespace specsweep
