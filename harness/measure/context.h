// The "context" block of results (Google Benchmark style): machine, build and process
// settings; and samples of what else the machine was doing while we measured.
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

namespace specsweep {

// 3: one speculative decoder (2 named it assisted/self-spec; still read, UpgradeRecord).
inline constexpr int kResultsSchemaVersion = 3;

// Schema version, date, host, OS, git revision, compiler, CPU model and flags, cores,
// threads, active kernel family, load average and the runtime settings below.
nlohmann::json MachineContext();

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

// What the machine did between two samples besides this process.
struct HostLoad {
  double load_before = 0, load_after = 0;  // 1-minute load average
  double other_cpu = 0;  // fraction of all cores' time used by other processes
  double steal = 0;      // fraction of all cores' time taken by the hypervisor
  bool busy = false;     // other_cpu > kBusyOtherCpu or steal > kBusySteal
  nlohmann::json ToJson() const;
};
inline constexpr double kBusyOtherCpu = 0.10, kBusySteal = 0.05;
HostLoad HostLoadBetween(const HostSample& before, const HostSample& after);

}  // namespace specsweep
