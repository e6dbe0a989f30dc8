#include "harness/bench/bench_generate.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/bench/bench_compare.h"
#include "harness/store/results.h"
#include "harness/report/statistics.h"
#include "base/build_info.h"
#include "base/error.h"

extern char** environ;

namespace specsweep {

std::vector<double> GenerateVsForwardRound::Readings() const {
  std::vector<double> v = {bw_before, bw_after};
  if (bench_readings.empty()) v.push_back(bw_during);
  v.insert(v.end(), bench_readings.begin(), bench_readings.end());
  return v;
}

MemoryPhase RoundPhase(const GenerateVsForwardRound& r, const PhaseSplit& s) {
  const std::vector<double> v = r.Readings();
  const MemoryPhase first = PhaseOf(s, v.front());
  for (double x : v)
    if (PhaseOf(s, x) != first) return MemoryPhase::kMixed;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  if (first == MemoryPhase::kOne && *hi >= kPhaseGapRatio * *lo) return MemoryPhase::kMixed;
  return first;
}

GenerateVsForwardRound ReadGenerateVsForward(const nlohmann::json& generate, const nlohmann::json& bench) {
  GenerateVsForwardRound r;
  const nlohmann::json& stats = generate.at("stats");
  if (!stats.contains("per_token")) Fail("--vs-generate: generate reported no per-token split (no decode calls)");
  const nlohmann::json& p = stats.at("per_token");
  r.prompt_tokens = stats.at("prompt_tokens").get<int>();
  r.forward_calls = p.at("forward_calls").get<int>();
  r.forward_ms = p.at("forward_s").get<double>() * 1e3;
  r.forward_median_ms = p.at("forward_median_s").get<double>() * 1e3;
  r.outside_ms = p.at("outside_s").get<double>() * 1e3;
  r.total_ms = p.at("total_s").get<double>() * 1e3;
  r.bw_before = generate.at("read_bandwidth").at("before_gbs").get<double>();
  r.bw_after = generate.at("read_bandwidth").at("after_gbs").get<double>();
  r.ready_s = generate.at("startup").at("ready_s").get<double>();
  const nlohmann::json& ctx = bench.at("context");
  r.bench_ctx = ctx.at("ctx").get<int>();
  r.bw_during = ctx.at("read_bandwidth_during_gbs").get<double>();
  if (ctx.contains("memory_phases") && ctx.at("memory_phases").contains("readings_gbs"))
    r.bench_readings = ctx.at("memory_phases").at("readings_gbs").get<std::vector<double>>();
  r.load_s = ctx.at("load_s").get<double>();
  for (const nlohmann::json& rec : bench.at("benchmarks"))
    if (rec.contains("format") && rec.value("n", 0) == 1) {
      r.t1_ms = rec.at("real_time").get<double>();
      break;
    }
  if (r.t1_ms <= 0) Fail("--vs-generate: bench-forward reported no T(1)");
  return r;
}

namespace {

Spread SpreadOf(const std::vector<GenerateVsForwardRound>& rounds, double (*f)(const GenerateVsForwardRound&)) {
  std::vector<double> v;
  for (const GenerateVsForwardRound& r : rounds) v.push_back(f(r));
  return Summarize(v);
}

// The options every child shares: the globals, then the model's format and cache type.
struct ChildPlan {
  std::vector<std::string> globals, quant;
  std::string binary, dir;
  std::vector<std::string> env;
};

// A child's JSON file, read and then removed.
nlohmann::json TakeChildJson(const std::string& path, const char* command) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(Slurp(path));
  } catch (const std::exception& e) {
    Fail("--vs-generate: {}: {}: not {}'s JSON ({})", command, path, command, e.what());
  }
  std::remove(path.c_str());
  return j;
}

nlohmann::json RunGenerateChild(const BenchForwardArgs& a, const ChildPlan& c, int round) {
  std::vector<std::string> args = c.globals;
  args.insert(args.end(), {"generate", "-m", a.model, "-n", std::to_string(a.vs_generate), "--no-eos", "--json",
                           "--bandwidth", "--kv-type", a.kv_types.at(0)});
  args.insert(args.end(), c.quant.begin(), c.quant.end());
  const std::string out = fmt::format("{}/generate-{}.json", c.dir, round), err = c.dir + "/generate.log";
  RunCompareChild(c.binary, args, c.env, out, err, "generate");
  return TakeChildJson(out, "generate");
}

nlohmann::json RunBenchChild(const BenchForwardArgs& a, const ChildPlan& c, int round, int ctx) {
  const std::string out = fmt::format("{}/bench-{}.json", c.dir, round), log = c.dir + "/bench.log";
  std::vector<std::string> args = c.globals;
  args.insert(args.end(), {"bench-forward", a.model, "--n", "1", "--loop", "--ctx", std::to_string(ctx), "--reps",
                           std::to_string(a.reps), "--kv-type", a.kv_types.at(0), "--json", out});
  args.insert(args.end(), c.quant.begin(), c.quant.end());
  RunCompareChild(c.binary, args, c.env, log, log, "bench-forward");
  return TakeChildJson(out, "bench-forward");
}

void PrintRound(int k, const GenerateVsForwardRound& r) {
  fmt::print(
      "round {} ({} first): generate {:.3f} ms/token = forward {:.3f} + outside {:.4f} (read {:.1f}/{:.1f} GB/s, "
      "ready {:.2f} s); bench-forward T(1) {:.3f} ms at ctx {} (read {:.1f} GB/s, loaded in {:.2f} s); "
      "generate/T(1) {:.3f}\n",
      k + 1, r.generate_first ? "generate" : "bench-forward", r.total_ms, r.forward_ms, r.outside_ms, r.bw_before,
      r.bw_after, r.ready_s, r.t1_ms, r.bench_ctx, r.bw_during, r.load_s, r.total_ms / r.t1_ms);
  std::fflush(stdout);
}

using Figure = double (*)(const GenerateVsForwardRound&);
struct Row {
  const char* name;
  Figure f;
};
const Row kRows[] = {
    {"generate ms per token", [](const GenerateVsForwardRound& r) { return r.total_ms; }},
    {"  its Forward ms", [](const GenerateVsForwardRound& r) { return r.forward_ms; }},
    {"  outside Forward ms", [](const GenerateVsForwardRound& r) { return r.outside_ms; }},
    {"bench-forward T(1) ms", [](const GenerateVsForwardRound& r) { return r.t1_ms; }},
    {"generate / T(1)", [](const GenerateVsForwardRound& r) { return r.total_ms / r.t1_ms; }},
    {"generate's Forward / T(1)", [](const GenerateVsForwardRound& r) { return r.forward_ms / r.t1_ms; }},
    {"its median Forward / T(1)", [](const GenerateVsForwardRound& r) { return r.forward_median_ms / r.t1_ms; }},
    {"outside / T(1) %", [](const GenerateVsForwardRound& r) { return 100 * r.outside_ms / r.t1_ms; }},
    {"generate tokens/s", [](const GenerateVsForwardRound& r) { return 1e3 / r.total_ms; }},
    {"1 / T(1) tokens/s", [](const GenerateVsForwardRound& r) { return 1e3 / r.t1_ms; }},
    {"generate ready s", [](const GenerateVsForwardRound& r) { return r.ready_s; }},
    {"bench-forward load s", [](const GenerateVsForwardRound& r) { return r.load_s; }},
};

// The rounds of each phase, and the line that names the split and every round's phase.
std::map<MemoryPhase, std::vector<GenerateVsForwardRound>> ByPhase(const std::vector<GenerateVsForwardRound>& rounds,
                                                                   const PhaseSplit& s) {
  std::map<MemoryPhase, std::vector<GenerateVsForwardRound>> by;
  std::string names;
  for (const GenerateVsForwardRound& r : rounds) {
    const MemoryPhase p = RoundPhase(r, s);
    by[p].push_back(r);
    names += fmt::format("{}{}", names.empty() ? "" : ", ", MemoryPhaseName(p));
  }
  if (s.two_phases)
    fmt::print(
        "memory phases over all rounds' readings: two, slow {:.1f}..{:.1f} GB/s and fast {:.1f}..{:.1f} GB/s; "
        "rounds: {}\n",
        s.slow.min_gbs, s.slow.max_gbs, s.fast.min_gbs, s.fast.max_gbs, names);
  else
    fmt::print("memory phase over all rounds' readings: one ({:.1f}..{:.1f} GB/s); rounds: {}\n", s.slow.min_gbs,
               s.slow.max_gbs, names);
  const auto mixed = by.find(MemoryPhase::kMixed);
  if (mixed != by.end())
    fmt::print(
        "{} of {} rounds mixed: their readings fall in two phases or, with one phase, differ by {}x or more "
        "(the bandwidth changed within the round); only the other rounds are compared per phase\n",
        mixed->second.size(), rounds.size(), kPhaseGapRatio);
  return by;
}

nlohmann::json PrintSummary(const std::vector<GenerateVsForwardRound>& rounds, const PhaseSplit& s) {
  const auto by = ByPhase(rounds, s);
  std::vector<std::pair<std::string, std::vector<GenerateVsForwardRound>>> cols = {
      {fmt::format("all {} rounds", rounds.size()), rounds}};
  for (const auto& [phase, rs] : by)  // a phase's rounds, unless they are all the rounds
    if (phase != MemoryPhase::kMixed && rs.size() < rounds.size())
      cols.emplace_back(fmt::format("{} {} rounds", rs.size(), MemoryPhaseName(phase)), rs);
  fmt::print("{:<28}", "");
  for (const auto& col : cols) fmt::print(" {:>28}", col.first);
  fmt::print("\n");
  nlohmann::json out = nlohmann::json::object();
  for (const Row& row : kRows) {
    fmt::print("{:<28}", row.name);
    for (const auto& col : cols) {
      const Spread sp = SpreadOf(col.second, row.f);
      fmt::print(" {:>28}", fmt::format("{:.4g} ({:.4g}..{:.4g})", sp.median, sp.min, sp.max));
    }
    fmt::print("\n");
    const Spread all = SpreadOf(rounds, row.f);
    out[row.name] = {{"median", all.median}, {"min", all.min}, {"max", all.max}};
  }
  fmt::print(
      "median (range) over rounds; outside = generate's decode time per token less its Forward call (sampling, "
      "the logits check, statistics, output); its Forward: the mean of its calls, median: their median (as "
      "T(1) is); a phase's rounds: every probe reading of the round (generate's before and after, bench-forward's "
      "around its repetitions) in that phase\n");
  return out;
}

void WriteJson(const BenchForwardArgs& a, const std::vector<GenerateVsForwardRound>& rounds, const PhaseSplit& s,
               const nlohmann::json& summary) {
  nlohmann::json rs = nlohmann::json::array();
  for (const GenerateVsForwardRound& r : rounds)
    rs.push_back({{"generate_first", r.generate_first},
                  {"prompt_tokens", r.prompt_tokens},
                  {"forward_calls", r.forward_calls},
                  {"generate_ms_per_token", r.total_ms},
                  {"generate_forward_ms", r.forward_ms},
                  {"generate_forward_median_ms", r.forward_median_ms},
                  {"generate_outside_ms", r.outside_ms},
                  {"generate_bandwidth_before_gbs", r.bw_before},
                  {"generate_bandwidth_after_gbs", r.bw_after},
                  {"generate_ready_s", r.ready_s},
                  {"bench_ctx", r.bench_ctx},
                  {"t1_ms", r.t1_ms},
                  {"bench_bandwidth_during_gbs", r.bw_during},
                  {"bench_load_s", r.load_s},
                  {"bench_readings_gbs", r.bench_readings},
                  {"phase", MemoryPhaseName(RoundPhase(r, s))}});
  const nlohmann::json ctx = {{"executable", "specsweep bench-forward --vs-generate"},
                              {"git_rev", GitRev()},
                              {"model", a.model},
                              {"tokens", a.vs_generate},
                              {"rounds", a.rounds},
                              {"threads", a.threads},
                              {"schema_version", 2},  // 2: a phase per round from the classifier, not same_phase
                              {"memory_phases",
                               {{"two_phases", s.two_phases},
                                {"split_gbs", s.split_gbs},
                                {"slow", {{"min_gbs", s.slow.min_gbs}, {"max_gbs", s.slow.max_gbs}}},
                                {"fast", {{"min_gbs", s.fast.min_gbs}, {"max_gbs", s.fast.max_gbs}}}}}};
  std::ofstream f(a.json);
  f << DumpJson({{"context", ctx}, {"rounds", rs}, {"summary", summary}}, 2) << "\n";
  if (!f) Fail("--json: {}: cannot write", a.json);
}

void CheckVsGenerate(const BenchForwardArgs& a) {
  if (a.vs_generate < 2) FailUsage("--vs-generate: {} tokens: give at least 2 (decode calls to time)", a.vs_generate);
  if (a.rounds < 1) FailUsage("--rounds: {} must be at least 1", a.rounds);
  if (a.reps < 1) FailUsage("--reps: {} must be at least 1", a.reps);
  if (a.quants.size() > 1) FailUsage("--vs-generate: one --quant at most (generate runs one format)");
  if (a.kv_types.size() != 1) FailUsage("--vs-generate: one --kv-type (generate runs one)");
  if (!a.compare.empty() || !a.compare_bin.empty() || !a.compare_llama_bench.empty())
    FailUsage("--vs-generate: not with --compare");
}

}  // namespace

void RunGenerateVsForward(const BenchForwardArgs& a) {
  CheckVsGenerate(a);
  ChildPlan c;
  c.binary = SelfExe();
  if (a.threads > 0) c.globals = {"--threads", std::to_string(a.threads)};
  if (!a.models_dir.empty()) c.globals.insert(c.globals.end(), {"--models", a.models_dir});
  if (!a.quants.empty()) c.quant = {"--quant", a.quants[0]};
  for (char** e = environ; *e; ++e) c.env.emplace_back(*e);
  char dir_tmpl[] = "/tmp/specsweep-vs-generate-XXXXXX";
  if (!mkdtemp(dir_tmpl)) Fail("--vs-generate: cannot create a temporary directory in /tmp");
  c.dir = dir_tmpl;
  fmt::print(
      "vs-generate: {} rounds of `generate -n {} --no-eos` against `bench-forward --loop --n 1 --reps {}` at "
      "generate's mean context position, order alternating per round\n",
      a.rounds, a.vs_generate, a.reps);
  std::vector<GenerateVsForwardRound> rounds;
  int ctx = 0;  // generate's mean decode position, from the first round (generate runs first)
  for (int k = 0; k < a.rounds; ++k) {
    nlohmann::json g, b;
    if (k % 2 == 0) g = RunGenerateChild(a, c, k);
    if (k == 0) ctx = g.at("stats").at("prompt_tokens").get<int>() + (a.vs_generate - 2) / 2;
    b = RunBenchChild(a, c, k, ctx);
    if (k % 2 == 1) g = RunGenerateChild(a, c, k);
    rounds.push_back(ReadGenerateVsForward(g, b));
    rounds.back().generate_first = k % 2 == 0;
    PrintRound(k, rounds.back());
  }
  for (const char* log : {"/generate.log", "/bench.log"}) std::remove((c.dir + log).c_str());
  rmdir(c.dir.c_str());
  std::vector<double> readings;
  for (const GenerateVsForwardRound& r : rounds) {
    const std::vector<double> v = r.Readings();
    readings.insert(readings.end(), v.begin(), v.end());
  }
  const PhaseSplit split = SplitPhases(readings);
  const nlohmann::json summary = PrintSummary(rounds, split);
  if (!a.json.empty()) WriteJson(a, rounds, split, summary);
}

}  // namespace specsweep
