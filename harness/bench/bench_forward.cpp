#include "harness/bench/bench_forward.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "decoders/sampler.h"
#include "harness/bench/bench_compare.h"
#include "harness/bench/bench_llama.h"
#include "harness/bench/bench_decode.h"
#include "harness/bench/forward_timing.h"
#include "harness/bench/memory_phase.h"
#include "harness/measure/process_runtime.h"
#include "harness/report/statistics.h"
#include "base/error.h"
#include "base/status_line.h"
#include "models/forward.h"
#include "models/loader.h"
#include "quant/bandwidth.h"
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

using forward_bench::MachineReadings;
using forward_bench::TeamPolicyName;
using forward_bench::Variant;

TeamPolicy ParseTeamPolicy(const std::string& s) {
  if (s == "auto") return TeamPolicy::kAuto;
  if (s == "serial") return TeamPolicy::kSerial;
  if (s == "full") return TeamPolicy::kFull;
  Fail("--team: '{}' is not a team policy (auto, serial, full)", s);
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
  forward_bench::PrintPreamble(rt, a, lm, load_s, ns, m);
  nlohmann::json recs = nlohmann::json::array();
  forward_bench::PrintTimings(a, vs, ns, j1, lw, m, recs);
  if (vs.size() > 1) forward_bench::PrintCostRatios(vs, j1, lw, recs);

  if (!a.decode_ks.empty()) {
    RunDecodeLoopBench(rt, lm, std::vector<int>(toks.begin(), toks.begin() + a.ctx), a.decode_ks, a.decode_tokens,
                       a.reps, recs);
  }
  if (!a.json.empty()) forward_bench::WriteJson(rt, a, lm, load_s, m, recs);
}

}  // namespace specsweep
