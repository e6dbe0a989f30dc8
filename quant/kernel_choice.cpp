#include "quant/kernel_choice.h"

#include <cpuid.h>

#include <algorithm>
#include <ctime>
#include <cmath>
#include <map>
#include <random>

#include <fmt/format.h>

#include "quant/qmatrix.h"

namespace specsweep {
namespace {

using json = nlohmann::json;

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

}  // namespace

KernelChoice UniformChoice(const KernelFamily& k, std::string source) {
  KernelChoice c;
  c.base = &k;
  c.per_type.fill(&k);
  c.source = std::move(source);
  return c;
}

KernelChoice DefaultKernels() {
  const std::vector<const KernelFamily*> candidates = CandidateFamilies();
  KernelChoice c = UniformChoice(candidates.empty() ? ScalarKernels() : *candidates[0], "default");
  c.prefetch_source = "default";
  return c;
}

bool ForceKernelIsa(KernelChoice& c, const char* isa) {
  const KernelFamily* k = FindKernelFamily(isa);
  if (!k) return false;
  KernelChoice f = UniformChoice(*k, "forced");
  f.prefetch = c.prefetch, f.prefetch_source = c.prefetch_source;  // the family alone changes
  c = std::move(f);
  return true;
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

// Decode (n = 1) streams the weights from memory: a matrix twice a 32 MB L3, on the
// whole team as the forward pass runs it, its wall time. Verify (n = 8) is bound by the
// kernels' arithmetic: 4 MB (beyond L2) keeps its passes short, one thread, its CPU time.
// Why both regimes and the team: docs/measurements.md, "Kernel choice".
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
  std::vector<double> best(variants, 1e30);    // [variant] seconds per row
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

json CalibrateKernels(const std::vector<const KernelFamily*>& candidates, int team, int rounds) {
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
      const std::vector<double> best =
          BestSecondsPerRow(run, rows, candidates.size(), rounds, [&](size_t j, const float* x, float* y) {
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
    for (unsigned leaf = 0; leaf < 3; ++leaf)
      __get_cpuid(0x80000002 + leaf, &r[4 * leaf], &r[4 * leaf + 1], &r[4 * leaf + 2], &r[4 * leaf + 3]);
    brand.assign(reinterpret_cast<const char*>(r), sizeof r);
    brand = brand.c_str();  // up to the first NUL
    brand.erase(0, brand.find_first_not_of(' '));
  }
  unsigned a = 0, b, c, d;
  __get_cpuid(1, &a, &b, &c, &d);
  const unsigned base_family = (a >> 8) & 0xF, base_model = (a >> 4) & 0xF;
  const unsigned family = base_family == 0xF ? base_family + ((a >> 20) & 0xFF) : base_family;
  const unsigned model = base_family == 0x6 || base_family == 0xF ? base_model | (((a >> 16) & 0xF) << 4) : base_model;
  return fmt::format("{} (family {} model {} stepping {})", brand.empty() ? "unknown CPU" : brand, family, model,
                     a & 0xF);
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
