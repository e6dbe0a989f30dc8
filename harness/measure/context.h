// The "context" block of results (Google Benchmark style): machine, build and process
// settings; and samples of what else the machine was doing while we measured.
#pragma once
#include <cstdint>

#include <string>

#include <nlohmann/json.hpp>

#include "harness/store/results.h"
#include "quant/runtime.h"

namespace specsweep {

// Schema version, date, host, OS, git revision, compiler, CPU model and flags, cores,
// the threads and kernels of `rt` (the runtime the run used), load average and the
// runtime settings below.
nlohmann::json MachineContext(const Runtime& rt);
// /proc/cpuinfo's "model name" ("" when absent) and the local time as ISO 8601 with its
// offset: the `cpu`/`cpu_model` and `date` of every context block.
std::string CpuModelName();
std::string LocalIsoDate();

// Process settings that change timings: libgomp's wait settings and glibc's malloc
// tunables (main() sets GOMP_SPINCOUNT and the huge-page tunable unless given), and the
// kernel's transparent huge page mode.
void AddRuntimeSettings(nlohmann::json& context);

// CPU time of the whole machine (/proc/stat) and of this process at one instant.
struct HostSample {
  double wall_s = 0, own_cpu_s = 0, load1 = 0;
  uint64_t busy = 0, steal = 0, total = 0;  // jiffies over all CPUs
};
HostSample SampleHost();

HostLoad HostLoadBetween(const HostSample& before, const HostSample& after);

}  // namespace specsweep
