#include "harness/measure/process_runtime.h"

#include <omp.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/build_info.h"
#include "base/error.h"
#include "quant/matmul.h"

namespace specsweep {
namespace {

using json = nlohmann::json;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The cache file's contents when it belongs to this CPU, build and thread count, else null.
json ReadCache(const std::filesystem::path& path, int threads) {
  if (path.empty()) return nullptr;
  std::ifstream f(path);
  json cached = json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (cached.is_object() && cached.value("cpu", "") == CpuIdentity() && cached.value("build", "") == BuildIdentity() &&
      cached.value("threads", 0) == threads)
    return cached;
  return nullptr;
}

// Best effort (without a cache the next process measures again); true when written.
bool WriteCache(const std::filesystem::path& path, const json& j) {
  if (path.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const std::filesystem::path tmp = path.string() + fmt::format(".{}.part", ::getpid());
  bool ok = false;
  if (std::ofstream out(tmp); out << j.dump(2) << '\n') {
    out.close();
    std::filesystem::rename(tmp, path, ec);
    ok = !ec;
  }
  std::filesystem::remove(tmp, ec);
  return ok;
}

// The forced family, the prefetch pattern and its source, before any family is timed.
KernelChoice ChoiceBeforeCalibration(const std::string& isa, const std::string& prefetch, const std::string& mode,
                                     const std::vector<const KernelFamily*>& candidates) {
  const KernelFamily* forced = nullptr;
  if (!isa.empty() && !(forced = FindKernelFamily(isa.c_str())))
    Fail("SPECSWEEP_KERNEL_ISA: '{}' is not a kernel family this CPU supports (scalar, avx2, avx2vnni, avx512)", isa);
  if (!prefetch.empty() && prefetch != "window" && prefetch != "lead")
    Fail("SPECSWEEP_PREFETCH: '{}' (expected window or lead)", prefetch);
  if (!mode.empty() && mode != "off" && mode != "redo" && mode != "on")
    Fail("SPECSWEEP_KERNEL_CALIBRATION: '{}' (expected on, off or redo)", mode);
  KernelChoice c = forced ? UniformChoice(*forced, "forced")
                          : UniformChoice(candidates.empty() ? ScalarKernels() : *candidates[0], "default");
  if (!prefetch.empty()) {
    c.prefetch = prefetch == "lead" ? PrefetchPattern::kLead : PrefetchPattern::kWindow;
    c.prefetch_source = "forced";
  } else if (mode == "off" || candidates.empty()) {
    c.prefetch_source = "default";
  } else {
    c.prefetch = PrefetchRule(CpuIdentity());
    c.prefetch_source = "rule for this CPU's vendor";
  }
  return c;
}

}  // namespace

// The git revision is the one at configure time: a rebuild from an edited tree keeps it,
// so the executable's size and modification time stand for the code itself.
std::string BuildIdentity() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto size = ec ? 0 : std::filesystem::file_size(exe, ec);
  const auto mtime = ec ? 0 : std::filesystem::last_write_time(exe, ec).time_since_epoch().count();
  return fmt::format("{} {}, executable of {} bytes modified at {}", *GitRev() ? GitRev() : "unknown revision",
                     CompilerId(), ec ? 0 : size, ec ? 0 : mtime);
}

std::filesystem::path KernelCachePath() {
  std::filesystem::path dir;
  if (const std::string xdg = Env("XDG_CACHE_HOME"); !xdg.empty())
    dir = xdg;
  else if (const std::string home = Env("HOME"); !home.empty())
    dir = std::filesystem::path(home) / ".cache";
  else
    return {};
  return dir / "specsweep" / fmt::format("kernels-{:016x}.json", Fnv1a(CpuIdentity() + "\n" + BuildIdentity()));
}

KernelChoice KernelChoiceFromEnvironment(int threads) {
  const std::string isa = Env("SPECSWEEP_KERNEL_ISA"), mode = Env("SPECSWEEP_KERNEL_CALIBRATION");
  const std::vector<const KernelFamily*> candidates = CandidateFamilies();
  KernelChoice c = ChoiceBeforeCalibration(isa, Env("SPECSWEEP_PREFETCH"), mode, candidates);
  const bool choose_families = c.source != "forced" && candidates.size() > 1 && mode != "off";
  if (!choose_families) return c;

  const std::filesystem::path path = KernelCachePath();
  json cache = mode == "redo" ? json(nullptr) : ReadCache(path, threads);
  if (!cache.is_object()) cache = {{"cpu", CpuIdentity()}, {"build", BuildIdentity()}, {"threads", threads}};
  // The families are timed under the pattern they will run with; timings cached under
  // another pattern (SPECSWEEP_PREFETCH) are measured again.
  const std::string pattern = PrefetchPatternName(c.prefetch);
  const bool measure = !cache.contains("timings") || !cache.contains("prefetch") || cache["prefetch"] != pattern;
  if (measure) {
    const PrefetchPattern before = ActivePrefetchPattern();
    SetPrefetchPattern(c.prefetch);
    cache["timings"] = CalibrateKernels(candidates, threads);
    cache["prefetch"] = pattern;
    SetPrefetchPattern(before);
  }
  const KernelChoice f = ChooseKernels(cache["timings"], candidates);
  c.base = f.base, c.per_type = f.per_type;
  if (!measure) {
    c.source = "cached in " + path.string();
    return c;
  }
  for (QType t : CalibratedTypes()) cache["chosen"][std::string(QTypeName(t))] = c.per_type[int(t)]->name;
  c.source = WriteCache(path, cache) ? "calibrated now, cached in " + path.string() : "calibrated now";
  return c;
}

Runtime ProcessRuntime(int threads, TeamPolicy team) {
  // The environment and the timings do not change while the process runs: calibrate once.
  static std::mutex mu;
  static std::optional<KernelChoice> kernels;
  Runtime rt;
  rt.threads = ResolveThreads(threads);
  rt.team = team;
  {
    std::lock_guard lock(mu);
    if (!kernels) kernels = KernelChoiceFromEnvironment(rt.threads);
    rt.kernels = *kernels;
  }
  ApplyRuntime(rt);
  return rt;
}

void ApplyThreads(int threads) { omp_set_num_threads(ResolveThreads(threads)); }

void ApplyRuntime(const Runtime& rt) {
  omp_set_num_threads(rt.threads);
  SetPrefetchPattern(rt.kernels.prefetch);
  SetLoadLayoutKernels(rt.kernels);
}

}  // namespace specsweep
