// Which kernel family runs each weight format, chosen by measurement on this CPU.
//
// Every family gives the scalar reference's bits for every format (quant/kernels.h), so
// the choice changes speed only. The widest family is not always the fastest: on AMD Zen 4
// (AVX-512 on 256-bit units) the avx2 Q4_K kernel beat the avx512 one (issue #32). So the
// families can be timed (CalibrateKernels) and the fastest kept per format (ChooseKernels).
// The kernels' software prefetch pattern (quant/prefetch.h), one for all formats, comes
// from a rule by CPU vendor (PrefetchRule): the 8-page window was tuned on Sapphire Rapids
// and is slower than a fixed lead on Zen 4 (issue #32).
//
// This file is pure: the environment variables that force or skip the choice and the
// cache file of the timings belong to the process edge (harness/measure/process_runtime.h).
#pragma once
#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/kernels.h"
#include "quant/prefetch.h"
#include "quant/qtype.h"

namespace specsweep {

struct KernelChoice {
  const KernelFamily* base = nullptr;                       // activation quantization, FMA probe, the name
  std::array<const KernelFamily*, kQTypeCount> per_type{};  // the family per weight format
  std::string source;                                       // "forced", "default", "calibrated", "cached <path>"
  PrefetchPattern prefetch = PrefetchPattern::kWindow;      // of every kernel
  std::string prefetch_source;                              // "forced", "default", "rule for this CPU's vendor"
  // Seconds the process spent timing the families for this choice (0: none), which no
  // timed figure may include.
  double calibration_s = 0;
};

// Every format on one family.
KernelChoice UniformChoice(const KernelFamily& k, std::string source);
// The choice without measuring: every format on the widest family this CPU runs (the
// first of CandidateFamilies, else scalar), the window prefetch pattern; source "default".
KernelChoice DefaultKernels();
// `c` with every format on family `isa` (its prefetch pattern kept, source "forced");
// false, and `c` unchanged, when this CPU lacks the family.
bool ForceKernelIsa(KernelChoice& c, const char* isa);

// The SIMD families this CPU runs, widest first (the default order).
std::vector<const KernelFamily*> CandidateFamilies();

// The formats the calibration times (those with a SIMD kernel in some family).
std::vector<QType> CalibratedTypes();

// Times every candidate family on every calibrated format: n = 1 on a 64 MB matrix on
// `threads` threads (the whole team: decode streams from memory on every thread), n = 8
// on 4 MB on one thread (verify, bound by arithmetic), rounds interleaving the families;
// the minimum of the wall time (team) or thread CPU time (one thread) per family and run.
// Result: {"<type>": {"<family>": score}}, score = the geometric mean over the two runs
// of the nanoseconds per weight row.
nlohmann::json CalibrateKernels(const std::vector<const KernelFamily*>& candidates, int threads, int rounds = 5);

// The kernels' prefetch pattern for a CPU (CpuIdentity), a rule from measurements
// (docs/measurements.md, "Kernel choice"): the lead pattern on AMD, the window elsewhere.
PrefetchPattern PrefetchRule(const std::string& cpu);

// Per format the candidate with the lowest score; a family that is not at least
// `margin` faster than the first candidate (the default) does not replace it, so noise
// never moves a format off the widest family (the margin is above the calibration's
// run-to-run noise: docs/measurements.md, "Kernel choice"). Formats or families missing
// from the timings keep the first candidate.
KernelChoice ChooseKernels(const nlohmann::json& timings, const std::vector<const KernelFamily*>& candidates,
                           double margin = 0.15);

// The CPU model (cpuid brand string, family, model, stepping).
std::string CpuIdentity();

// "avx512" or e.g. "avx512 (q4_k, q5_k: avx2), prefetch lead".
std::string DescribeChoice(const KernelChoice& c);

}  // namespace specsweep
