#include "harness/measure/context.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "base/build_info.h"
#include "models/forward.h"
#include "quant/huge_pages.h"
#include "quant/kernel_choice.h"
#include "quant/matmul.h"
#include "quant/qmatrix.h"

using nlohmann::json;

namespace specsweep {

namespace {
std::string CpuInfoField(const std::string& field) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field, 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}
}  // namespace

std::string CpuModelName() { return CpuInfoField("model name"); }

std::string LocalIsoDate() {
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", std::localtime(&now));
  return date;
}

json MachineContext(const Runtime& rt) {
  json c;
  c["schema_version"] = kResultsSchemaVersion;
  c["date"] = LocalIsoDate();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  c["host_name"] = host;
  struct utsname u;
  if (uname(&u) == 0) c["os"] = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  c["git_revision"] = GitRev();
  c["compiler"] = CompilerId();
#ifdef NDEBUG
  c["library_build_type"] = "release";
#else
  c["library_build_type"] = "debug";
#endif
  c["cpu_model"] = CpuModelName();
  c["cpu_flags"] = CpuInfoField("flags");
  c["num_cpus"] = int(std::thread::hardware_concurrency());
  c["threads"] = rt.threads;
  c["kernel_isa"] = rt.kernel_isa();
  c["kernels"] = DescribeChoice(rt.kernels);  // the family per format where it differs
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) c["load_avg"] = {load[0], load[1], load[2]};
  AddRuntimeSettings(c);
  return c;
}

void AddRuntimeSettings(json& c) {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "default");
  };
  c["omp_wait_policy"] = env("OMP_WAIT_POLICY");
  c["gomp_spincount"] = env("GOMP_SPINCOUNT");
  c["glibc_tunables"] = env("GLIBC_TUNABLES");
  c["transparent_hugepages"] = TransparentHugePageMode();
}

HostSample SampleHost() {
  HostSample s;
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0)
    s.own_cpu_s =
        double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) s.load1 = load[0];
  std::ifstream f("/proc/stat");  // "cpu  user nice system idle iowait irq softirq steal ..."
  std::string line;
  if (std::getline(f, line) && line.rfind("cpu ", 0) == 0) {
    std::istringstream in(line.substr(4));
    uint64_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (auto& x : v) in >> x;
    s.busy = v[0] + v[1] + v[2] + v[5] + v[6];
    s.steal = v[7];
    s.total = s.busy + v[3] + v[4] + v[7];
  }
  return s;
}

HostLoad HostLoadBetween(const HostSample& a, const HostSample& b) {
  HostLoad h;
  h.load_before = a.load1;
  h.load_after = b.load1;
  const double total = double(b.total - a.total);
  if (total > 0) {
    const double jiffy = 1.0 / double(sysconf(_SC_CLK_TCK));
    const double cores_s = total * jiffy;  // all cores' time between the samples
    const double others = double(b.busy - a.busy) * jiffy - (b.own_cpu_s - a.own_cpu_s);
    h.other_cpu = std::max(0.0, others / cores_s);
    h.steal = double(b.steal - a.steal) / total;
  }
  h.busy = h.other_cpu > kBusyOtherCpu || h.steal > kBusySteal;
  return h;
}

}  // namespace specsweep
