// Which kernel family runs each weight format, chosen by measurement on this CPU.
//
// Every family gives the scalar reference's bits for every format (quant/kernels.h), so
// the choice changes speed only. The widest family is not always the fastest: on AMD Zen 4
// (AVX-512 on 256-bit units) the avx2 Q4_K kernel beat the avx512 one (issue #32). So the
// families are timed once per CPU model and build (CalibrateKernels), the fastest is kept
// per format (ChooseKernels) and the timings are cached as JSON under the user's cache
// directory (KernelCachePath), keyed by the CPU and the binary (and valid for one
// thread count).
//
// The kernels' software prefetch pattern (quant/prefetch.h), one for all formats, comes
// from a rule by CPU vendor (PrefetchRule): the 8-page window was tuned on Sapphire Rapids
// and is slower than a fixed lead on Zen 4 (issue #32).
//
// SPECSWEEP_KERNEL_ISA=F forces family F for every format (no family calibration).
// SPECSWEEP_PREFETCH=window|lead forces the prefetch pattern.
// SPECSWEEP_KERNEL_CALIBRATION=off keeps the widest family for every format and the window
// pattern without measuring; =redo measures again and rewrites the cache.
#pragma once
#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/kernels.h"
#include "quant/prefetch.h"
#include "quant/qtype.h"

namespace specsweep {

struct KernelChoice {
  const KernelFamily* base = nullptr;  // activation quantization, FMA probe, the name
  std::array<const KernelFamily*, kQTypeCount> per_type{};  // the family per weight format
  std::string source;  // "forced", "default", "calibrated", "cached <path>"
  PrefetchPattern prefetch = PrefetchPattern::kWindow;  // of every kernel
  std::string prefetch_source;  // "forced", "default", "rule for this CPU's vendor"
};

// Every format on one family.
KernelChoice UniformChoice(const KernelFamily& k, std::string source);

// The SIMD families this CPU runs, widest first (the default order).
std::vector<const KernelFamily*> CandidateFamilies();

// The formats the calibration times (those with a SIMD kernel in some family).
std::vector<QType> CalibratedTypes();

// Times every candidate family on every calibrated format: n = 1 on a 64 MB matrix on
// the whole team (omp_get_max_threads; decode streams from memory on every thread), n = 8
// on 4 MB on one thread (verify, bound by arithmetic), rounds interleaving the families;
// the minimum of the wall time (team) or thread CPU time (one thread) per family and run.
// Result: {"<type>": {"<family>": score}}, score = the geometric mean over the two runs
// of the nanoseconds per weight row.
nlohmann::json CalibrateKernels(const std::vector<const KernelFamily*>& candidates, int rounds = 5);

// The kernels' prefetch pattern for a CPU (CpuIdentity), a rule from measurements: the
// lead pattern on AMD, the window elsewhere. On Zen 4 (family 25 model 17, 2 vCPUs) the
// 1.1B model's decode under lead took 0.87-0.89 of the window's time for Q4_K, 0.92 for
// Q4_0, 0.96 for F16, 0.99 for Q8_0 (bench-forward --compare, docs/performance.md); the
// window was tuned on Sapphire Rapids. Timing the patterns on synthetic matrices here
// ranked them within 2%, against the model's 12%, so the rule is not calibrated.
PrefetchPattern PrefetchRule(const std::string& cpu);

// Per format the candidate with the lowest score; a family that is not at least
// `margin` faster than the first candidate (the default) does not replace it, so noise
// never moves a format off the widest family. The margin is above the calibration's
// run-to-run noise: on Zen 4 (2026-11-26) the avx2/avx512 score ratio of F16 ranged
// 0.93-1.21 over the builds of one session, and at 5% F16 went to avx2 in some of them,
// while the model's own F16 ran 1.2x (n = 1) and 2.0x (n = 8) slower on avx2
// (bench-forward --compare, docs/performance.md). Q4_K's 1.33-1.49 under the window
// pattern cleared it. Formats or families missing from the timings keep the first candidate.
KernelChoice ChooseKernels(const nlohmann::json& timings, const std::vector<const KernelFamily*>& candidates,
                           double margin = 0.15);

// The CPU model (cpuid brand string, family, model, stepping) and the build the timings
// belong to (git revision, compiler, the executable's size and modification time).
std::string CpuIdentity();
std::string BuildIdentity();
// $XDG_CACHE_HOME/specsweep (else $HOME/.cache/specsweep)/kernels-<hash of CPU and build>.json;
// empty when neither variable is set.
std::filesystem::path KernelCachePath();

// The process's choice: forced, from the cache, or calibrated now (and cached).
KernelChoice DefaultKernelChoice();

// The choice MatMul uses (set on first use from DefaultKernelChoice), and replacing it
// (tests; ForceKernelIsa sets a uniform one). Matrices packed before keep their layout.
const KernelChoice& ActiveKernelChoice();
void SetKernelChoice(const KernelChoice& c);

// "avx512" or e.g. "avx512 (q4_k, q5_k: avx2), prefetch lead".
std::string DescribeChoice(const KernelChoice& c);

}  // namespace specsweep
