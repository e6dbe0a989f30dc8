// The process edge of the runtime (quant/runtime.h): the kernel choice the environment
// asks for, its calibration cache file, and the Runtime a command runs on.
//
// The kernel families are timed once per CPU model and build (CalibrateKernels), the
// fastest kept per format (ChooseKernels), and the timings cached as JSON under the
// user's cache directory (KernelCachePath), keyed by the CPU and the binary (and valid for
// one thread count).
//
// SPECSWEEP_KERNEL_ISA=F forces family F for every format (no family calibration).
// SPECSWEEP_PREFETCH=window|lead forces the prefetch pattern.
// SPECSWEEP_KERNEL_CALIBRATION=off keeps the widest family for every format and the window
// pattern without measuring; =redo measures again and rewrites the cache.
//
// Every calibration prints one line on stderr (its thread count, seconds and cache file,
// with why a cache present could not be read, or why it could not be written); a cache
// that cannot be used is calibrated again, never an error.
#pragma once
#include <filesystem>
#include <string>

#include "quant/runtime.h"

namespace specsweep {

// The build the timings belong to (git revision, compiler, the executable's size and
// modification time).
std::string BuildIdentity();
// $XDG_CACHE_HOME/specsweep (else $HOME/.cache/specsweep)/kernels-<hash of CPU and build>.json;
// empty when neither variable is set.
std::filesystem::path KernelCachePath();

// The choice the environment asks for: forced, from the cache, or calibrated now on
// `threads` threads (and cached). Each call reads the environment and the cache again.
KernelChoice KernelChoiceFromEnvironment(int threads);

// The process's runtime for --threads `threads` (0: all cores; Error outside
// 0..MaxThreads()): its kernels are KernelChoiceFromEnvironment's, taken on the first
// call (which calibrates when needed) and kept for the process. Applies it (ApplyRuntime).
Runtime ProcessRuntime(int threads, TeamPolicy team = TeamPolicy::kAuto);

// --threads `threads` as OpenMP's default team (Error outside 0..MaxThreads()), before a
// command builds its runtime: the CLI checks the flag as it parses it.
void ApplyThreads(int threads);

// What the kernels and OpenMP keep process-wide, set from `rt`: the default OpenMP team
// (the library's own parallel loops: loading, packing, quantizing), the kernels'
// prefetch pattern (quant/prefetch.h) and the layout loaders pack weights in
// (SetLoadLayoutKernels). The one place they are set outside tests.
void ApplyRuntime(const Runtime& rt);

}  // namespace specsweep
