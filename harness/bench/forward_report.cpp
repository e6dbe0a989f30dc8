// bench-forward's output (forward_timing.h): the preamble, the T(n) table and its records,
// the timings per memory phase, the cost ratios and the JSON file.
#include <algorithm>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "base/build_info.h"
#include "base/error.h"
#include "harness/bench/forward_timing.h"
#include "harness/measure/context.h"
#include "harness/store/results.h"
#include "quant/kernel_choice.h"
#include "quant/matmul.h"

namespace specsweep::forward_bench {
namespace {

// Median, min and max of the per-repetition ratios num[i] / den[i].
Spread PerRepRatio(const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> r(num.size());  // [reps]
  for (size_t i = 0; i < num.size(); ++i) r[i] = num[i] / den[i];
  return Summarize(r);
}

// The memory phases of the readings during the timings (memory_phase.h).
void PrintPhases(const MachineReadings& m) {
  const PhaseSplit& s = m.phases;
  if (!s.two_phases) {
    fmt::print(
        "memory phase: one ({:.1f}..{:.1f} GB/s over {} readings; two phases need a gap of {:.2f}x between two "
        "groups)\n",
        s.slow.min_gbs, s.slow.max_gbs, s.slow.readings, kPhaseGapRatio);
    return;
  }
  fmt::print(
      "memory phases: two, slow {:.1f}..{:.1f} GB/s ({} readings) and fast {:.1f}..{:.1f} GB/s ({} readings), "
      "split at {:.1f} GB/s; repetitions: {} slow, {} fast, {} across a switch\n",
      s.slow.min_gbs, s.slow.max_gbs, s.slow.readings, s.fast.min_gbs, s.fast.max_gbs, s.fast.readings, s.split_gbs,
      m.Repetitions(MemoryPhase::kSlow), m.Repetitions(MemoryPhase::kFast), m.Repetitions(MemoryPhase::kMixed));
}

// The phases a run reports on: slow and fast, or the one.
std::vector<MemoryPhase> ReportedPhases(const MachineReadings& m) {
  if (m.phases.two_phases) return {MemoryPhase::kSlow, MemoryPhase::kFast};
  return {MemoryPhase::kOne};
}

// Variant v's timings at ns[j] in the repetitions of one phase, with that phase's roofline.
struct PhaseTiming {
  int reps = 0;
  Spread t, rel;  // T(n) and T(n)/T(1) (per-repetition ratios)
  double bw_gbs = 0;
  Variant::Floor floor{0, "memory"};
  double roof = 0;
};
PhaseTiming TimingInPhase(const Variant& v, size_t j, size_t j1, int n, const MachineReadings& m, MemoryPhase p) {
  PhaseTiming pt;
  std::vector<double> t, t1;
  for (size_t r = 0; r < m.rep_phase.size(); ++r)
    if (m.rep_phase[r] == p) t.push_back(v.secs[j][r]), t1.push_back(v.secs[j1][r]);
  pt.reps = static_cast<int>(t.size());
  if (t.empty()) return pt;
  pt.t = Summarize(t), pt.rel = PerRepRatio(t, t1);
  pt.bw_gbs = m.PhaseBandwidth(p);
  pt.floor = v.FloorAt(n, pt.bw_gbs, m.fma_gmacs);
  pt.roof = pt.floor.secs / pt.t.median;
  return pt;
}

// Each repetition's time and readings, and the medians per phase, for a timing record.
void AddPhaseFields(const Variant& v, size_t j, size_t j1, int n, const MachineReadings& m, nlohmann::json& rec) {
  nlohmann::json reps = nlohmann::json::array(), phases = nlohmann::json::object();
  for (size_t r = 0; r < m.rep_phase.size(); ++r)
    reps.push_back({{"ms", v.secs[j][r] * 1e3},
                    {"read_gbs_before", m.readings[r]},
                    {"read_gbs_after", m.readings[r + 1]},
                    {"phase", MemoryPhaseName(m.rep_phase[r])}});
  for (MemoryPhase p : ReportedPhases(m)) {
    const PhaseTiming pt = TimingInPhase(v, j, j1, n, m, p);
    if (pt.reps == 0) continue;
    phases[MemoryPhaseName(p)] = {{"repetitions", pt.reps},          {"real_time", pt.t.median * 1e3},
                                  {"min_ms", pt.t.min * 1e3},        {"max_ms", pt.t.max * 1e3},
                                  {"t_over_t1", pt.rel.median},      {"read_bandwidth_gbs", pt.bw_gbs},
                                  {"floor_ms", pt.floor.secs * 1e3}, {"floor_bound", pt.floor.bound},
                                  {"roofline_fraction", pt.roof}};
  }
  rec["per_repetition"] = reps;
  rec["phases"] = phases;
}

// With two phases, T(n) and the roofline of each phase per variant and n: a roofline
// from one phase's times and that phase's bandwidth, never a mix.
void PrintPhaseTimings(const std::vector<Variant>& vs, const std::vector<int>& ns, size_t j1, int lw,
                       const MachineReadings& m) {
  if (!m.phases.two_phases) return;
  fmt::print(
      "per memory phase (repetitions whose readings before and after agree; roofline at the phase's bandwidth, "
      "slow {:.2f} GB/s, fast {:.2f} GB/s):\n",
      m.PhaseBandwidth(MemoryPhase::kSlow), m.PhaseBandwidth(MemoryPhase::kFast));
  for (const Variant& v : vs)
    for (size_t j = 0; j < ns.size(); ++j) {
      fmt::print("{:>{}} {:>4}  T({})", v.label, lw, ns[j], ns[j]);
      const char* sep = "";
      for (MemoryPhase p : ReportedPhases(m)) {
        const PhaseTiming pt = TimingInPhase(v, j, j1, ns[j], m, p);
        if (pt.reps == 0)
          fmt::print("{} {} - (0 reps)", sep, MemoryPhaseName(p));
        else
          fmt::print("{} {} {:.3f} ms ({} reps, roofline {:.3f})", sep, MemoryPhaseName(p), pt.t.median * 1e3, pt.reps,
                     pt.roof);
        sep = " |";
      }
      fmt::print("\n");
    }
}

}  // namespace

// The run's setting and the machine's readings, above the table.
void PrintPreamble(const Runtime& rt, const BenchForwardArgs& a, const LoadedModel& lm, double load_s,
                   const std::vector<int>& ns, const MachineReadings& m) {
  fmt::print(
      "model {} ({}), {:.1f}M params, loaded in {:.2f}s; ctx {}, {} interleaved repetitions, threads {}, "
      "kernels {} ({}; prefetch {}), {}\n",
      lm.name, lm.model->source.format, lm.model->ParameterCount() / 1e6, load_s, a.ctx, a.reps, rt.threads,
      DescribeChoice(rt.kernels), rt.kernels.source, rt.kernels.prefetch_source,
      a.loop ? "decode loop (sampler work between calls)" : "back-to-back calls");
  fmt::print("team size under --team auto per n:");
  for (int n : ns) fmt::print(" {}:{}", n, ForwardTeamSize(rt, *lm.model, n, a.ctx));
  fmt::print(" (a layer of {:.2g} multiply-adds or more runs as a team)\n", kTeamLayerMacs);
  fmt::print(
      "read bandwidth {:.2f} GB/s during the timings (median of one reading before and after each repetition, "
      "{:.2f}..{:.2f}), "
      "{:.2f} before, {:.2f} after (roofline uses {:.2f})\n",
      m.bw.median, m.bw.min, m.bw.max, m.bw_before, m.bw_after, m.bw_gbs);
  PrintPhases(m);
  if (m.bw.median < 0.85 * std::max(m.bw_before, m.bw_after))
    fmt::print(
        "warning: the machine was busier during the timings than when probed before/after; the timings and "
        "the rooflines below understate it\n");
  fmt::print(
      "FMA peak {:.1f} GMAC/s before, {:.1f} GMAC/s after ({} threads, {} multiply-adds; roofline uses {:.1f})\n",
      m.fma_before, m.fma_after, rt.threads, rt.kernel_isa(), m.fma_gmacs);
}

namespace {

// The record of variant v at batch size ns[j].
nlohmann::json TimingRecord(const BenchForwardArgs& a, const Variant& v, int n, int team_size, const Spread& t,
                            const Spread& rel, const Variant::Floor& floor, double roof) {
  return {{"name", fmt::format("bench_forward/{}/n:{}", v.label, n)},
          {"run_type", "aggregate"},
          {"aggregate_name", "median"},
          {"format", v.format},
          {"kv_type", KvTypeName(v.cache->type())},
          {"team", TeamPolicyName(v.team)},
          {"team_size", team_size},
          {"kv_bytes_last_token", v.KvBytes(a.ctx + n)},
          {"n", n},
          {"repetitions", a.reps},
          {"real_time", t.median * 1e3},
          {"time_unit", "ms"},
          {"min_ms", t.min * 1e3},
          {"max_ms", t.max * 1e3},
          {"rel_spread", (t.max - t.min) / t.median},
          {"t_over_t1", rel.median},
          {"t_over_t1_min", rel.min},
          {"t_over_t1_max", rel.max},
          {"tokens_per_s", n / t.median},
          {"weight_bytes", v.model->WeightBytes()},
          {"streamed_bytes", v.StreamedBytes()},
          {"float_macs_per_token", v.FloatMacs()},
          {"floor_ms", floor.secs * 1e3},
          {"floor_bound", floor.bound},
          {"roofline_fraction", roof}};
}

}  // namespace

// The table of T(n) per variant and n, one record per row.
void PrintTimings(const BenchForwardArgs& a, const std::vector<Variant>& vs, const std::vector<int>& ns, size_t j1,
                  int lw, const MachineReadings& m, nlohmann::json& recs) {
  fmt::print("{:>{}} {:>4} {:>10} {:>10} {:>10} {:>10} {:>18} {:>16} {:>9}\n", "format", lw, "n", "T(n) ms", "min ms",
             "max ms", "tokens/s", "T(n)/T(1) (range)", "floor ms (bound)", "roofline");
  for (const Variant& v : vs) {
    for (size_t j = 0; j < ns.size(); ++j) {
      const Spread t = Summarize(v.secs[j]);
      const Spread rel = PerRepRatio(v.secs[j], v.secs[j1]);
      const Variant::Floor floor = v.FloorAt(ns[j], m.bw_gbs, m.fma_gmacs);
      const double roof = floor.secs / t.median;
      fmt::print("{:>{}} {:>4} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.1f} {:>6.3f} ({:.2f}..{:.2f}) {:>16} {:>9.3f}\n",
                 v.label, lw, ns[j], t.median * 1e3, t.min * 1e3, t.max * 1e3, ns[j] / t.median, rel.median, rel.min,
                 rel.max, fmt::format("{:.3f} ({})", floor.secs * 1e3, floor.bound), roof);
      recs.push_back(TimingRecord(a, v, ns[j], v.team_size[j], t, rel, floor, roof));
      AddPhaseFields(v, j, j1, ns[j], m, recs.back());
    }
  }
  fmt::print(
      "floor = max(streamed weight bytes / bandwidth, n x float multiply-adds per token / FMA peak), "
      "roofline = floor / T(n); streamed = all weights except the embedding table, which is only gathered "
      "from; quantized matrices count toward memory only\n");
  PrintPhaseTimings(vs, ns, j1, lw, m);
}

// T_row(1) / T_col(1) for every pair of variants.
void PrintCostRatios(const std::vector<Variant>& vs, size_t j1, int lw, nlohmann::json& recs) {
  fmt::print("cost ratios T_row(1) / T_col(1), median of per-repetition ratios (range):\n{:>{}}", "", lw);
  for (const Variant& col : vs) fmt::print(" {:>20}", col.label);
  fmt::print("\n");
  for (const Variant& row : vs) {
    fmt::print("{:>{}}", row.label, lw);
    for (const Variant& col : vs) {
      const Spread r = PerRepRatio(row.secs[j1], col.secs[j1]);
      fmt::print(" {:>20}", fmt::format("{:.3f} ({:.2f}..{:.2f})", r.median, r.min, r.max));
      if (&row != &col)
        recs.push_back({{"name", fmt::format("bench_forward/cost_ratio/{}:{}", row.label, col.label)},
                        {"run_type", "aggregate"},
                        {"aggregate_name", "median"},
                        {"n", 1},
                        {"ratio", r.median},
                        {"ratio_min", r.min},
                        {"ratio_max", r.max}});
    }
    fmt::print("\n");
  }
}

namespace {

nlohmann::json PhasesContext(const MachineReadings& m) {
  auto group = [](const PhaseGroup& g) {
    return nlohmann::json{{"readings", g.readings},
                          {"min_gbs", g.min_gbs},
                          {"median_gbs", g.median_gbs},
                          {"max_gbs", g.max_gbs}};
  };
  nlohmann::json c = {{"two_phases", m.phases.two_phases},
                      {"gap_ratio", kPhaseGapRatio},
                      {"readings_gbs", m.readings},
                      {"repetition_phases", nlohmann::json::array()}};
  for (MemoryPhase p : m.rep_phase) c["repetition_phases"].push_back(MemoryPhaseName(p));
  if (m.phases.two_phases) {
    c["split_gbs"] = m.phases.split_gbs;
    c["slow"] = group(m.phases.slow);
    c["fast"] = group(m.phases.fast);
  } else {
    c["one"] = group(m.phases.slow);
  }
  return c;
}

}  // namespace

void WriteJson(const Runtime& rt, const BenchForwardArgs& a, const LoadedModel& lm, double load_s,
               const MachineReadings& m, const nlohmann::json& recs) {
  nlohmann::json ctx = {
      {"schema_version", 7},  // 7: per_repetition and phases per record, memory_phases in the context
      {"date", LocalIsoDate()},
      {"executable", "specsweep bench-forward"},
      {"cpu", CpuModelName()},
      {"num_cpus", std::thread::hardware_concurrency()},
      {"threads", rt.threads},
      {"kernel_isa", rt.kernel_isa()},
      {"kernels", DescribeChoice(rt.kernels)},
      {"git_rev", GitRev()},
      {"compiler", CompilerId()},
      {"model", lm.name},
      {"model_format", lm.model->source.format},
      {"params", lm.model->ParameterCount()},
      {"load_s", load_s},
      {"ctx", a.ctx},
      {"kv_types", a.kv_types},
      {"loop", a.loop},
      {"team_layer_macs", kTeamLayerMacs},
      {"repetitions", a.reps},
      {"read_bandwidth_gbs", m.bw_gbs},  // the roofline's: max of the three below
      {"read_bandwidth_during_gbs", m.bw.median},
      {"read_bandwidth_during_min_gbs", m.bw.min},
      {"read_bandwidth_during_max_gbs", m.bw.max},
      {"read_bandwidth_before_gbs", m.bw_before},
      {"read_bandwidth_after_gbs", m.bw_after},
      {"memory_phases", PhasesContext(m)},
      {"fma_peak_gmacs", m.fma_gmacs},
      {"fma_peak_before_gmacs", m.fma_before},
      {"fma_peak_after_gmacs", m.fma_after},
  };
  AddRuntimeSettings(ctx);
  std::ofstream f(a.json);
  f << DumpJson({{"context", ctx}, {"benchmarks", recs}}, 2) << "\n";
  if (!f) Fail("--json: {}: cannot write", a.json);
}

const char* TeamPolicyName(TeamPolicy t) {
  return t == TeamPolicy::kSerial ? "serial" : t == TeamPolicy::kFull ? "full" : "auto";
}

}  // namespace specsweep::forward_bench
