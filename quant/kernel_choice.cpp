#include "quant/kernel_choice.h"

#include <cpuid.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string_view>

#include <fmt/format.h>

#include "base/build_info.h"
#include "base/error.h"
#include "quant/qmatrix.h"

namespace specsweep {
namespace {

using json = nlohmann::json;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A `rows` x `cols` matrix of `type` whose rows repeat a 16-row sample of
// random weights: quantizing 4 MB into K-quants would take longer than timing it.
QMatrix CalibrationMatrix(QType type, int rows, int cols) {
  constexpr int kSample = 16;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> w(size_t(kSample) * cols);  // [16][cols]
  for (float& v : w) v = dist(rng);
  const QMatrix sample = Quantize(w.data(), kSample, cols, type);
  QMatrix m = MakeQMatrix(type, rows, cols);
  for (int r = 0; r < rows; ++r) std::copy_n(sample.Row(r % kSample), m.row_bytes, m.Row(r));
  return m;
}

// The calling thread's CPU time: on a shared host a descheduled pass would count the
// other processes' time (load average 19: a family measured 2.7x slower than itself).
double WallSeconds() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}
double ThreadSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

KernelChoice UniformChoice(const KernelFamily& k, std::string source) {
  KernelChoice c;
  c.base = &k;
  c.per_type.fill(&k);
  c.source = std::move(source);
  return c;
}

std::vector<const KernelFamily*> CandidateFamilies() {
  std::vector<const KernelFamily*> v;
  for (const char* isa : {"avx512", "avx2vnni", "avx2"})
    if (const KernelFamily* k = FindKernelFamily(isa)) v.push_back(k);
  return v;
}

// The formats whose entry says so (quant/qtype.h, with why the others are left out).
std::vector<QType> CalibratedTypes() {
  std::vector<QType> v;
  for (const QTypeTraits& f : kQTypes)
    if (f.calibrated) v.push_back(f.type);
  return v;
}

namespace {

// Decode (n = 1) streams the weights from memory: a matrix twice a 32 MB L3. Verify
// (n = 8) is bound by the kernels' arithmetic: 4 MB (beyond L2) keeps its passes short.
// The regimes disagree: on Zen 4 the avx512 Q4_K kernel was 1.2x faster than avx2's
// from L3 and 1.15x slower from memory (its prefetch pacing, since fixed).
// Decode runs on the whole team (omp_get_max_threads), as the forward pass does: on
// Zen 4 two threads sharing the memory ranked Q4_K's families the other way round from
// one thread alone (bench-forward Q4_K T(1), avx2 / avx512: 0.83 with two threads,
// while one thread from memory gave 1.06). Its wall time is taken, the minimum over
// rounds; verify's single thread counts its CPU time only.
struct CalibrationRun {
  int n;
  size_t bytes;
  bool team;
};
constexpr int kCalibrationCols = 2048;
constexpr CalibrationRun kDecodeRun = {1, size_t{64} << 20, true}, kVerifyRun = {8, size_t{4} << 20, false};

// Per variant the best seconds per weight row of `run` over the rounds (round -1 warms
// caches, pages and frequency; the order of the variants alternates). pass(j, x, y)
// multiplies variant j's matrix of `rows` rows by x ([run.n][kCalibrationCols]) into y.
template <class Pass>
std::vector<double> BestSecondsPerRow(const CalibrationRun& run, int rows, size_t variants, int rounds, Pass pass) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(size_t(run.n) * kCalibrationCols);  // [n][cols]
  for (float& v : x) v = dist(rng);
  std::vector<float> y(size_t(run.n) * rows);  // [n][rows]
  std::vector<double> best(variants, 1e30);  // [variant] seconds per row
  for (int r = -1; r < rounds; ++r) {
    for (size_t i = 0; i < variants; ++i) {
      const size_t j = r % 2 ? variants - 1 - i : i;
      const double t0 = run.team ? WallSeconds() : ThreadSeconds();
      pass(j, x.data(), y.data());
      const double t = (run.team ? WallSeconds() : ThreadSeconds()) - t0;
      if (r >= 0) best[j] = std::min(best[j], t / rows);
    }
  }
  return best;
}

int CalibrationRows(QType t, const CalibrationRun& run) {
  const size_t row_bytes = MakeQMatrix(t, 1, kCalibrationCols).row_bytes;
  return std::max<int>(16, int(run.bytes / row_bytes) / 16 * 16);
}

}  // namespace

json CalibrateKernels(const std::vector<const KernelFamily*>& candidates, int rounds) {
  const int team = omp_get_max_threads();
  json out = json::object();
  for (QType t : CalibratedTypes()) {
    std::vector<double> log_sum(candidates.size(), 0.0);  // [candidate] sum over runs of log(best seconds)
    for (const CalibrationRun& run : {kDecodeRun, kVerifyRun}) {
      const int rows = CalibrationRows(t, run);
      // Per candidate its matrix; the 32-value types pack alike for every family (one copy).
      std::vector<QMatrix> packed;
      {
        const QMatrix rowwise = CalibrationMatrix(t, rows, kCalibrationCols);
        for (const KernelFamily* k : candidates)
          if (packed.empty() || !IsLegacyQuant(t)) packed.push_back(PackFor(*k, rowwise));
      }
      const std::vector<double> best = BestSecondsPerRow(run, rows, candidates.size(), rounds, [&](size_t j, const float* x, float* y) {
        MatMulWith(*candidates[j], packed[std::min(j, packed.size() - 1)], x, run.n, y, run.team ? team : 1);
      });
      for (size_t j = 0; j < candidates.size(); ++j) log_sum[j] += std::log(best[j]);
    }
    json& e = out[std::string(QTypeName(t))];
    for (size_t j = 0; j < candidates.size(); ++j) e[candidates[j]->name] = 1e9 * std::exp(log_sum[j] / 2);
  }
  return out;
}

PrefetchPattern PrefetchRule(const std::string& cpu) {
  return cpu.rfind("AMD", 0) == 0 ? PrefetchPattern::kLead : PrefetchPattern::kWindow;
}

KernelChoice ChooseKernels(const json& timings, const std::vector<const KernelFamily*>& candidates, double margin) {
  if (candidates.empty()) return UniformChoice(ScalarKernels(), "default");
  KernelChoice c = UniformChoice(*candidates[0], "");
  for (int t = 0; t < kQTypeCount; ++t) {
    const std::string type(QTypeName(static_cast<QType>(t)));
    if (!timings.is_object() || !timings.contains(type) || !timings[type].is_object()) continue;
    const json& e = timings[type];
    auto score = [&](const KernelFamily* k) {
      return e.contains(k->name) && e[k->name].is_number() ? e[k->name].get<double>() : -1.0;
    };
    const double def = score(candidates[0]);
    if (!(def > 0)) continue;
    double best = def;
    for (const KernelFamily* k : candidates) {
      const double s = score(k);
      if (s > 0 && s < def * (1 - margin) && s < best) best = s, c.per_type[t] = k;
    }
  }
  return c;
}

std::string CpuIdentity() {
  unsigned r[12] = {};
  std::string brand;
  if (__get_cpuid(0x80000000, &r[0], &r[1], &r[2], &r[3]) && r[0] >= 0x80000004) {
    for (unsigned leaf = 0; leaf < 3; ++leaf) __get_cpuid(0x80000002 + leaf, &r[4 * leaf], &r[4 * leaf + 1], &r[4 * leaf + 2], &r[4 * leaf + 3]);
    brand.assign(reinterpret_cast<const char*>(r), sizeof r);
    brand = brand.c_str();  // up to the first NUL
    brand.erase(0, brand.find_first_not_of(' '));
  }
  unsigned a = 0, b, c, d;
  __get_cpuid(1, &a, &b, &c, &d);
  const unsigned base_family = (a >> 8) & 0xF, base_model = (a >> 4) & 0xF;
  const unsigned family = base_family == 0xF ? base_family + ((a >> 20) & 0xFF) : base_family;
  const unsigned model = base_family == 0x6 || base_family == 0xF ? base_model | (((a >> 16) & 0xF) << 4) : base_model;
  return fmt::format("{} (family {} model {} stepping {})", brand.empty() ? "unknown CPU" : brand, family, model, a & 0xF);
}

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
  if (const std::string xdg = Env("XDG_CACHE_HOME"); !xdg.empty()) dir = xdg;
  else if (const std::string home = Env("HOME"); !home.empty()) dir = std::filesystem::path(home) / ".cache";
  else return {};
  return dir / "specsweep" / fmt::format("kernels-{:016x}.json", Fnv1a(CpuIdentity() + "\n" + BuildIdentity()));
}

namespace {

// The cache file's contents when it belongs to this CPU, build and thread count, else null.
json ReadCache(const std::filesystem::path& path) {
  if (path.empty()) return nullptr;
  std::ifstream f(path);
  json cached = json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (cached.is_object() && cached.value("cpu", "") == CpuIdentity() && cached.value("build", "") == BuildIdentity() &&
      cached.value("threads", 0) == omp_get_max_threads())
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

}  // namespace

KernelChoice DefaultKernelChoice() {
  const std::string isa = Env("SPECSWEEP_KERNEL_ISA"), prefetch = Env("SPECSWEEP_PREFETCH"),
                    mode = Env("SPECSWEEP_KERNEL_CALIBRATION");
  const KernelFamily* forced = nullptr;
  if (!isa.empty() && !(forced = FindKernelFamily(isa.c_str())))
    Fail("SPECSWEEP_KERNEL_ISA: '{}' is not a kernel family this CPU supports (scalar, avx2, avx2vnni, avx512)", isa);
  if (!prefetch.empty() && prefetch != "window" && prefetch != "lead")
    Fail("SPECSWEEP_PREFETCH: '{}' (expected window or lead)", prefetch);
  if (!mode.empty() && mode != "off" && mode != "redo" && mode != "on")
    Fail("SPECSWEEP_KERNEL_CALIBRATION: '{}' (expected on, off or redo)", mode);
  const std::vector<const KernelFamily*> candidates = CandidateFamilies();
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
  const bool choose_families = !forced && candidates.size() > 1 && mode != "off";
  if (!choose_families) return c;

  const std::filesystem::path path = KernelCachePath();
  json cache = mode == "redo" ? json(nullptr) : ReadCache(path);
  if (!cache.is_object()) cache = {{"cpu", CpuIdentity()}, {"build", BuildIdentity()}, {"threads", omp_get_max_threads()}};
  // The families are timed under the pattern they will run with; timings cached under
  // another pattern (SPECSWEEP_PREFETCH) are measured again.
  const std::string pattern = PrefetchPatternName(c.prefetch);
  const bool measure = !cache.contains("timings") || !cache.contains("prefetch") || cache["prefetch"] != pattern;
  if (measure) {
    const PrefetchPattern before = ActivePrefetchPattern();
    SetPrefetchPattern(c.prefetch);
    cache["timings"] = CalibrateKernels(candidates);
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

std::string DescribeChoice(const KernelChoice& c) {
  std::map<std::string, std::string> others;  // family -> its formats
  for (int t = 0; t < kQTypeCount; ++t)
    if (c.per_type[t] != c.base) {
      std::string& s = others[c.per_type[t]->name];
      s += (s.empty() ? "" : ", ") + std::string(QTypeName(static_cast<QType>(t)));
    }
  std::string out = c.base->name;
  std::string list;
  for (const auto& [family, types] : others) list += (list.empty() ? "" : "; ") + types + ": " + family;
  if (!list.empty()) out += " (" + list + ")";
  return out + ", prefetch " + PrefetchPatternName(c.prefetch);
}

}  // namespace specsweep
