#include "harness/measure/process_runtime.h"

#include <omp.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
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

// The cache file as read: its contents (null when there is none to use) and, when a file
// is there but cannot be used, why ("a directory", "not JSON", "field 'cpu' is not a
// string", ...). A cache of another CPU, build or thread count is no problem: it is
// replaced.
struct CacheRead {
  json contents;
  std::string problem;
};

// "" when the fields this file reads have their types, else which one does not.
std::string CacheFieldProblem(const json& j) {
  if (!j.is_object()) return "not a JSON object";
  for (const char* f : {"cpu", "build", "prefetch"})
    if (j.contains(f) && !j[f].is_string()) return fmt::format("field '{}' is not a string", f);
  if (j.contains("threads") && !j["threads"].is_number_integer()) return "field 'threads' is not an integer";
  if (j.contains("chosen") && !j["chosen"].is_object()) return "field 'chosen' is not an object";
  if (j.contains("timings")) {
    if (!j["timings"].is_object()) return "field 'timings' is not an object";
    for (const auto& [type, scores] : j["timings"].items()) {
      if (!scores.is_object()) return fmt::format("field 'timings.{}' is not an object", type);
      for (const auto& [family, score] : scores.items())
        if (!score.is_number()) return fmt::format("field 'timings.{}.{}' is not a number", type, family);
    }
  }
  return "";
}

CacheRead ReadCache(const std::filesystem::path& path, int threads) {
  if (path.empty()) return {};
  std::error_code ec;
  const bool there = std::filesystem::exists(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    return {nullptr, "cannot be read: " + ec.message()};
  if (!there) return {};
  if (std::filesystem::is_directory(path, ec)) return {nullptr, "a directory"};
  // stat, not open: opening a FIFO blocks until a writer comes.
  if (!std::filesystem::is_regular_file(path, ec)) return {nullptr, "not a regular file (a FIFO, socket or device)"};
  std::ifstream f(path);
  if (!f) return {nullptr, fmt::format("cannot be read: {}", std::strerror(errno))};
  json cached = json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (cached.is_discarded()) return {nullptr, "not JSON"};
  if (std::string problem = CacheFieldProblem(cached); !problem.empty()) return {nullptr, std::move(problem)};
  if (cached.value("cpu", "") == CpuIdentity() && cached.value("build", "") == BuildIdentity() &&
      cached.value("threads", 0) == threads)
    return {std::move(cached), ""};
  return {};
}

// Best effort (without a cache the next process measures again): "" when written, else why not.
std::string WriteCache(const std::filesystem::path& path, const json& j) {
  if (path.empty()) return "no cache directory (neither XDG_CACHE_HOME nor HOME is set)";
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const std::filesystem::path tmp = path.string() + fmt::format(".{}.part", ::getpid());
  std::string problem;
  if (std::ofstream out(tmp); out << j.dump(2) << '\n') {
    out.close();
    std::filesystem::rename(tmp, path, ec);
    if (ec) problem = ec.message();
  } else {
    problem = std::strerror(errno);
  }
  std::filesystem::remove(tmp, ec);
  return problem;
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

// One line for every calibration: it takes seconds, and a cache that cannot be read or
// written would otherwise have every process pay them in silence.
std::string CalibrationNotice(const std::filesystem::path& path, const std::string& unreadable, int threads,
                              double seconds, const std::string& unwritten) {
  std::string line = "notice: ";
  if (!unreadable.empty()) line += fmt::format("kernel cache {} is unreadable ({}); ", path.string(), unreadable);
  line +=
      fmt::format("calibrating kernels for {} thread{}, took {:.1f} s, ", threads, threads == 1 ? "" : "s", seconds);
  if (unwritten.empty()) return line + "cached at " + path.string();
  if (path.empty()) return line + "not cached: " + unwritten + "; every process calibrates again";
  return line +
         fmt::format("could not write the cache {} ({}); every process calibrates again", path.string(), unwritten);
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
  const CacheRead read = mode == "redo" ? CacheRead{} : ReadCache(path, threads);
  json cache = read.contents.is_object()
                   ? read.contents
                   : json{{"cpu", CpuIdentity()}, {"build", BuildIdentity()}, {"threads", threads}};
  // The families are timed under the pattern they will run with; timings cached under
  // another pattern (SPECSWEEP_PREFETCH) are measured again.
  const std::string pattern = PrefetchPatternName(c.prefetch);
  const bool measure = !cache.contains("timings") || !cache.contains("prefetch") || cache["prefetch"] != pattern;
  if (measure) {
    const auto t0 = std::chrono::steady_clock::now();
    const PrefetchPattern before = ActivePrefetchPattern();
    SetPrefetchPattern(c.prefetch);
    cache["timings"] = CalibrateKernels(candidates, threads);
    cache["prefetch"] = pattern;
    SetPrefetchPattern(before);
    c.calibration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const KernelChoice f = ChooseKernels(cache["timings"], candidates);
  c.base = f.base, c.per_type = f.per_type;
  if (!measure) {
    c.source = "cached in " + path.string();
    return c;
  }
  for (QType t : CalibratedTypes()) cache["chosen"][std::string(QTypeName(t))] = c.per_type[int(t)]->name;
  const std::string unwritten = WriteCache(path, cache);
  c.source = unwritten.empty() ? "calibrated now, cached in " + path.string() : "calibrated now";
  fmt::print(stderr, "{}\n", CalibrationNotice(path, read.problem, threads, c.calibration_s, unwritten));
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
