#include "harness/bench/bench_forward.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "decoders/sampler.h"
#include "base/build_info.h"
#include "harness/bench/bench_compare.h"
#include "harness/bench/bench_llama.h"
#include "harness/bench/bench_decode.h"
#include "harness/bench/memory_phase.h"
#include "harness/measure/context.h"
#include "harness/measure/process_runtime.h"
#include "harness/store/results.h"
#include "harness/report/statistics.h"
#include "base/error.h"
#include "base/status_line.h"
#include "models/forward.h"
#include "models/loader.h"
#include "quant/bandwidth.h"
#include "quant/kernel_choice.h"
#include "quant/matmul.h"
#include "quant/qmatrix.h"

namespace fs = std::filesystem;

namespace specsweep {

// The same bench-forward for each --compare variant, as child processes.
void RunBenchForwardCompare(const BenchForwardArgs& a) {
  CompareArgs c;
  for (const std::string& s : a.compare) c.variants.push_back(ParseCompareSpec(s, "--compare"));
  for (const std::string& s : a.compare_bin) SetCompareBinary(c.variants, s, "--compare-bin");
  c.rounds = a.rounds;
  c.model = a.model;
  c.json = a.json;
  auto join = [](const auto& v) { return fmt::format("{}", fmt::join(v, ",")); };
  if (a.threads > 0) c.bench_args = {"--threads", std::to_string(a.threads)};
  if (!a.models_dir.empty()) c.bench_args.insert(c.bench_args.end(), {"--models", a.models_dir});
  c.bench_args.insert(c.bench_args.end(),
                      {"bench-forward", a.model, "--n", join(a.ns), "--reps", std::to_string(a.reps), "--ctx",
                       std::to_string(a.ctx), "--kv-type", join(a.kv_types)});
  if (!a.quants.empty()) c.bench_args.insert(c.bench_args.end(), {"--quant", join(a.quants)});
  if (a.teams != BenchForwardArgs().teams) c.bench_args.insert(c.bench_args.end(), {"--team", join(a.teams)});
  if (a.loop) c.bench_args.push_back("--loop");
  LlamaBenchPlan llama;
  if (!a.compare_llama_bench.empty()) AddLlamaBenchVariants(a, c, llama);
  RunCompare(c);
}

namespace {

std::string CpuName() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  return "unknown";
}

std::string IsoDate() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", std::localtime(&t));
  return buf;
}

TeamPolicy ParseTeamPolicy(const std::string& s) {
  if (s == "auto") return TeamPolicy::kAuto;
  if (s == "serial") return TeamPolicy::kSerial;
  if (s == "full") return TeamPolicy::kFull;
  Fail("--team: '{}' is not a team policy (auto, serial, full)", s);
}
const char* TeamPolicyName(TeamPolicy t) {
  return t == TeamPolicy::kSerial ? "serial" : t == TeamPolicy::kFull ? "full" : "auto";
}

// What a decoder does on one thread between two Forward calls: the draft policy's
// softmax maximum and the argmax, per logits row.
void SamplerWork(std::span<const float> logits, int vocab) {
  int sink = 0;
  for (size_t r = 0; r + vocab <= logits.size(); r += vocab) {
    std::span<const float> row = logits.subspan(r, vocab);
    sink += Argmax(row) + (MaxSoftmaxProb(row) > 0.5f);
  }
  asm volatile("" : : "r"(sink));
}

// One weight format of the model under test, with its own cache and timings.
struct Variant {
  std::string label;   // "f32", "q4_0", ...; "q4_0/kv:f16" when KV cache types are compared
  std::string format;  // weight format
  std::shared_ptr<const Model> model;
  std::unique_ptr<KVCache> cache;
  TeamPolicy team = TeamPolicy::kAuto;
  Runtime rt;                             // the process's, with `team`
  std::vector<int> team_size;             // [ns] threads Forward uses under `team`
  std::vector<std::vector<double>> secs;  // [ns][reps] seconds per Forward call
  double StreamedBytes() const {
    // The embedding table is only gathered from (one row per token): a token streams
    // every other weight byte once.
    return static_cast<double>(model->WeightBytes() - model->tok_embeddings.bytes());
  }
  // Float multiply-adds per token in the float-typed streamed matrices (the integer dot
  // products of quantized ones have no single-instruction ceiling and are not counted).
  double FloatMacs() const {
    double macs = 0;
    ForEachMatrix(*model, [&](const std::string& name, const QMatrix& W) {
      if (name != "tok_embeddings" && !IsQuantized(W.type)) macs += double(W.rows) * W.cols;
    });
    return macs;
  }
  // Keys and values a token attending `positions` positions reads (not in the floor).
  double KvBytes(int positions) const { return static_cast<double>(cache->bytes_per_position()) * positions; }
  // Roofline time of an n-token call: every streamed byte read once at full bandwidth,
  // or every float multiply-add at the FMA peak, whichever takes longer (perfect overlap).
  struct Floor {
    double secs;
    const char* bound;  // "memory" or "compute"
  };
  Floor FloorAt(int n, double bw_gbs, double fma_gmacs) const {
    const double mem = StreamedBytes() / (bw_gbs * 1e9), fma = n * FloatMacs() / (fma_gmacs * 1e9);
    return fma > mem ? Floor{fma, "compute"} : Floor{mem, "memory"};
  }
};

// Median, min and max of the per-repetition ratios num[i] / den[i].
Spread PerRepRatio(const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> r(num.size());  // [reps]
  for (size_t i = 0; i < num.size(); ++i) r[i] = num[i] / den[i];
  return Summarize(r);
}

// The lists of the options, parsed.
struct Plan {
  std::vector<int> ns;              // batch sizes, 1 among them
  std::vector<std::string> quants;  // "none" = as loaded
  std::vector<TeamPolicy> teams;
  std::vector<KvType> kvs;
};

// Every option is checked before anything is timed: a mistake found after minutes of
// measuring loses them.
Plan CheckOptions(const BenchForwardArgs& a) {
  if (a.reps < 1) FailUsage("--reps: {} must be at least 1", a.reps);
  if (a.ctx < 0) FailUsage("--ctx: {} must not be negative", a.ctx);
  Plan p;
  p.ns = a.ns;
  for (int n : p.ns)
    if (n < 1) FailUsage("--n: {} must be at least 1", n);
  // T(n)/T(1), the roofline and the cost ratios need n=1.
  if (std::find(p.ns.begin(), p.ns.end(), 1) == p.ns.end()) p.ns.insert(p.ns.begin(), 1);
  p.quants = a.quants;
  if (p.quants.empty()) p.quants = {"none"};
  for (const std::string& t : a.teams) {
    p.teams.push_back(AsUsage([&] { return ParseTeamPolicy(t); }));
    if (std::count(p.teams.begin(), p.teams.end(), p.teams.back()) > 1) FailUsage("--team: {} listed twice", t);
  }
  for (const std::string& k : a.kv_types) {
    p.kvs.push_back(AsUsage([&] { return ParseKvType(k, "--kv-type"); }));
    if (std::count(p.kvs.begin(), p.kvs.end(), p.kvs.back()) > 1) FailUsage("--kv-type: {} listed twice", k);
  }
  for (int k : a.decode_ks)
    if (k < 1) FailUsage("--decode-k: {} must be at least 1", k);
  if (!a.decode_ks.empty() && a.decode_tokens < 1) FailUsage("--decode-tokens: {} must be at least 1", a.decode_tokens);
  for (const std::string& q : a.quants)
    if (q != "none") AsUsage([&] { return ParseQuantizeTarget(q, "--quant"); });
  if (!a.json.empty()) {
    const fs::path dir = fs::path(a.json).has_parent_path() ? fs::path(a.json).parent_path() : fs::path(".");
    if (!fs::is_directory(dir)) Fail("--json: {}: the folder {} does not exist", a.json, dir.string());
    if (access(dir.c_str(), W_OK) != 0 || (fs::exists(a.json) && access(a.json.c_str(), W_OK) != 0))
      Fail("--json: {}: cannot write: {}", a.json, std::strerror(errno));
  }
  return p;
}

// The options that depend on the loaded model's context length.
void CheckContext(const BenchForwardArgs& a, const ModelConfig& c, int max_n) {
  if (a.ctx + max_n > c.max_seq_len)
    Fail("--ctx: {} + n {} exceeds the model's context length {}", a.ctx, max_n, c.max_seq_len);
  if (!a.decode_ks.empty()) {
    if (a.ctx < 1) Fail("--ctx: the decode loop needs a prompt of at least 1 token");
    if (int64_t(a.ctx) + a.decode_tokens + *std::max_element(a.decode_ks.begin(), a.decode_ks.end()) > c.max_seq_len)
      Fail("--decode-tokens: {} after --ctx {} with --decode-k up to {} exceed the context length {}", a.decode_tokens,
           a.ctx, *std::max_element(a.decode_ks.begin(), a.decode_ks.end()), c.max_seq_len);
  }
}

// One variant per format x KV type x team policy, each cache filled with the context.
std::vector<Variant> MakeVariants(const Runtime& rt, const BenchForwardArgs& a, const LoadedModel& lm, const Plan& p,
                                  const std::vector<int>& toks, int max_n) {
  const ModelConfig& c = lm.model->config;
  std::vector<Variant> vs;
  const std::string loaded_type(QTypeName(lm.model->layers.at(0).wq.type));
  for (const std::string& q : p.quants) {
    std::shared_ptr<const Model> model = lm.model;
    const std::string format = q == "none" ? loaded_type : q;
    if (q != "none") model = std::make_shared<Model>(QuantizeModel(*lm.model, ParseQuantizeTarget(q, "--quant")));
    for (const Variant& o : vs)
      if (o.format == format) Fail("--quant: format {} listed twice (the loaded model is {})", format, loaded_type);
    for (KvType kv : p.kvs)
      for (TeamPolicy team : p.teams) {  // the weights are shared, each variant has its own cache
        Variant v;
        v.model = model;
        v.format = format;
        v.team = team;
        v.rt = rt;
        v.rt.team = team;
        v.label = p.kvs.size() == 1 && kv == KvType::F32 ? format : fmt::format("{}/kv:{}", format, KvTypeName(kv));
        if (p.teams.size() > 1) v.label += fmt::format("/team:{}", TeamPolicyName(team));
        v.cache = std::make_unique<KVCache>(c, 0, a.ctx + max_n, kv);
        v.cache->Reserve(a.ctx + max_n);  // no storage growth inside the timed calls
        if (a.ctx > 0) Forward(v.rt, *v.model, std::span<const int>(toks.data(), a.ctx), 0, *v.cache, false);
        v.secs.assign(p.ns.size(), {});
        for (int n : p.ns) v.team_size.push_back(ForwardTeamSize(v.rt, *model, n, a.ctx));
        vs.push_back(std::move(v));
      }
  }
  return vs;
}

// The machine's read bandwidth and multiply-add peak around and during the timings.
struct MachineReadings {
  double bw_before = 0, bw_after = 0, fma_before = 0, fma_after = 0;
  std::vector<double> readings;        // [reps + 1] GB/s: after the warm-up, then after each repetition
  Spread bw;                           // of `readings`
  double bw_gbs = 0;                   // the roofline's
  double fma_gmacs = 0;                // the roofline's
  PhaseSplit phases;                   // of `readings`
  std::vector<MemoryPhase> rep_phase;  // [reps] repetition r between readings[r] and readings[r + 1]
  // The roofline's bandwidth in phase p: the fastest credible reading of that phase (the
  // median of its readings during, or a full probe before or after that falls into it).
  double PhaseBandwidth(MemoryPhase p) const {
    std::vector<double> mine;
    for (double g : readings)
      if (PhaseOf(phases, g) == p) mine.push_back(g);
    double bw = mine.empty() ? 0.0 : Median(mine);
    for (double g : {bw_before, bw_after})
      if (PhaseOf(phases, g) == p) bw = std::max(bw, g);
    return bw;
  }
  int Repetitions(MemoryPhase p) const { return static_cast<int>(std::count(rep_phase.begin(), rep_phase.end(), p)); }
};

// One repetition over every variant and n (r = -1: the warm-up round, not recorded).
void TimeRepetition(const BenchForwardArgs& a, int r, std::vector<Variant>& vs, const std::vector<int>& ns,
                    const std::vector<int>& toks, int vocab, long& timed, long timings) {
  using Clock = std::chrono::steady_clock;
  for (Variant& v : vs) {
    for (size_t j = 0; j < ns.size(); ++j) {
      std::span<const int> batch(toks.data() + a.ctx, ns[j]);
      if (a.loop) {  // the step before, as in a decoding loop: caches warm, then the sampler's serial work
        v.cache->Truncate(a.ctx);
        SamplerWork(Forward(v.rt, *v.model, batch, a.ctx, *v.cache, true), vocab);
      }
      v.cache->Truncate(a.ctx);
      const auto t0 = Clock::now();
      std::span<const float> logits = Forward(v.rt, *v.model, batch, a.ctx, *v.cache, true);
      const double t = std::chrono::duration<double>(Clock::now() - t0).count();
      if (r >= 0) v.secs[j].push_back(t);
      if (a.loop) SamplerWork(logits, vocab);
      ReportProgress("timing forward passes", ++timed, timings, "");
    }
  }
}

// Repetitions interleave the formats and batch sizes, so a slow spell of this shared
// machine hits every variant alike and the per-repetition ratios stay comparable. After
// the warm-up and after each repetition the probe buffer is read once per prefetch
// pattern (the fastest counts), the bandwidth of the same minutes as the timings:
// readings taken only before and after can miss a neighbour's busy spell in between.
// Each repetition so has a reading right before and right after it, which give its
// memory phase (memory_phase.h).
MachineReadings TimeVariants(const Runtime& rt, const BenchForwardArgs& a, std::vector<Variant>& vs,
                             const std::vector<int>& ns, const std::vector<int>& toks, int vocab) {
  MachineReadings m;
  m.bw_before = MeasureReadBandwidthGBs(), m.fma_before = MeasureFmaPeakGmacs(*rt.kernels.base);
  AlignedBuffer probe = MakeReadProbeBuffer();
  const long timings = long(a.reps + 1) * long(vs.size() * ns.size());  // the warm-up round too
  long timed = 0;
  for (int r = -1; r < a.reps; ++r) {  // r = -1: warm-up (scratch growth, caches)
    TimeRepetition(a, r, vs, ns, toks, vocab, timed, timings);
    double best = 0;
    for (int pattern = 0; pattern < kReadProbePatterns; ++pattern)
      best = std::max(best, ReadPassGBs(probe.data(), kReadProbeBytes, pattern));
    m.readings.push_back(best);
  }
  m.bw_after = MeasureReadBandwidthGBs(), m.fma_after = MeasureFmaPeakGmacs(*rt.kernels.base);
  m.bw = Summarize(m.readings);
  m.phases = SplitPhases(m.readings);
  for (int r = 0; r < a.reps; ++r) m.rep_phase.push_back(RepetitionPhase(m.phases, m.readings[r], m.readings[r + 1]));
  // The roofline divides by the fastest credible reading (the median during, or a full
  // probe before or after), so a slow reading never flatters it (docs/measurements.md,
  // "bench-forward: the roofline's bandwidth").
  m.bw_gbs = std::max({m.bw.median, m.bw_before, m.bw_after}), m.fma_gmacs = std::max(m.fma_before, m.fma_after);
  return m;
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

void WriteJson(const Runtime& rt, const BenchForwardArgs& a, const LoadedModel& lm, double load_s,
               const MachineReadings& m, const nlohmann::json& recs) {
  nlohmann::json ctx = {
      {"schema_version", 7},  // 7: per_repetition and phases per record, memory_phases in the context
      {"date", IsoDate()},
      {"executable", "specsweep bench-forward"},
      {"cpu", CpuName()},
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

}  // namespace

void RunBenchForward(const BenchForwardArgs& a) {
  const Plan p = CheckOptions(a);
  const std::vector<int>& ns = p.ns;
  using Clock = std::chrono::steady_clock;
  const Runtime rt = ProcessRuntime(a.threads);  // before loading: weights are packed for its kernels
  const auto t_load0 = Clock::now();
  LoadedModel lm = LoadModel(a.model, a.models_dir);
  const double load_s = std::chrono::duration<double>(Clock::now() - t_load0).count();
  const ModelConfig& c = lm.model->config;
  const int max_n = *std::max_element(ns.begin(), ns.end());
  CheckContext(a, c, max_n);

  // Fixed pseudo-random tokens: timing does not depend on which ids are used.
  std::vector<int> toks(a.ctx + max_n);  // [ctx + max_n]
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int>((i * 7919 + 3) % c.vocab_size);

  std::vector<Variant> vs = MakeVariants(rt, a, lm, p, toks, max_n);
  const MachineReadings m = TimeVariants(rt, a, vs, ns, toks, c.vocab_size);

  const size_t j1 = std::find(ns.begin(), ns.end(), 1) - ns.begin();
  int lw = 8;  // label column width
  for (const Variant& v : vs) lw = std::max(lw, static_cast<int>(v.label.size()));
  PrintPreamble(rt, a, lm, load_s, ns, m);
  nlohmann::json recs = nlohmann::json::array();
  PrintTimings(a, vs, ns, j1, lw, m, recs);
  if (vs.size() > 1) PrintCostRatios(vs, j1, lw, recs);

  if (!a.decode_ks.empty()) {
    RunDecodeLoopBench(rt, lm, std::vector<int>(toks.begin(), toks.begin() + a.ctx), a.decode_ks, a.decode_tokens,
                       a.reps, recs);
  }
  if (!a.json.empty()) WriteJson(rt, a, lm, load_s, m, recs);
}

}  // namespace specsweep
