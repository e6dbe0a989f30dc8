// bench-forward --compare (harness/bench/bench_compare.h): one child bench-forward per variant
// and round, each writing its JSON to a temporary file that this process reads back.
#include "harness/bench/bench_compare.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/bench/bench_llama.h"
#include "harness/bench/compare_phases.h"
#include "harness/measure/context.h"
#include "harness/store/results.h"
#include "harness/report/statistics.h"
#include "base/build_info.h"
#include "base/error.h"

extern char** environ;

namespace specsweep {

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) Fail("--compare: cannot find this executable (/proc/self/exe)");
  return std::string(buf, n);
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void RunCompareChild(const std::string& binary, const std::vector<std::string>& args,
                     const std::vector<std::string>& env, const std::string& out, const std::string& err,
                     const std::string& label) {
  std::vector<char*> argv, envp;  // NULL-terminated views, built before fork
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  for (const std::string& s : env) envp.push_back(const_cast<char*>(s.c_str()));
  envp.push_back(nullptr);
  const bool one_file = err == out;
  const pid_t pid = fork();
  if (pid < 0) Fail("--compare: fork failed for variant {}", label);
  if (pid == 0) {  // only async-signal-safe calls until execve
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 1);
    const int fe = one_file ? fd : open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fe >= 0) dup2(fe, 2);
    execve(binary.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string tail = Slurp(err);
    if (tail.size() > 600) tail = "..." + tail.substr(tail.size() - 600);
    Fail("--compare: variant {}: {} exited with status {}: {}", label, binary,
         WIFEXITED(status) ? WEXITSTATUS(status) : -1, tail);
  }
}

namespace {

// Runs `binary args...` with environment `env`, stdout and stderr into `log`; throws
// with the log's tail if it does not exit 0.
void RunChild(const std::string& binary, const std::vector<std::string>& args, const std::vector<std::string>& env,
              const std::string& log, const std::string& label) {
  RunCompareChild(binary, args, env, log, log, label);
}

ChildRun ReadChild(const std::string& path, const std::string& label) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(Slurp(path));
  } catch (const std::exception& e) {
    Fail("--compare: variant {}: {}: not bench-forward JSON ({})", label, path, e.what());
  }
  ChildRun r;
  r.context = j.value("context", nlohmann::json::object());
  for (const auto& rec : j.value("benchmarks", nlohmann::json::array())) {
    const std::string name = rec.value("name", "");
    if (!rec.contains("format") || name.rfind("bench_forward/", 0) != 0) continue;  // cost ratios etc.
    const std::string key = name.substr(std::string("bench_forward/").size());
    r.ms[key] = rec.value("real_time", 0.0);
    r.roofline[key] = rec.value("roofline_fraction", 0.0);
    for (const auto& rep : rec.value("per_repetition", nlohmann::json::array())) r.rep_ms[key].push_back(rep.at("ms"));
  }
  const nlohmann::json phases = r.context.value("memory_phases", nlohmann::json::object());
  if (phases.contains("readings_gbs")) {
    r.readings = phases.at("readings_gbs").get<std::vector<double>>();
    for (const auto& [key, ms] : r.rep_ms)
      if (ms.size() + 1 != r.readings.size())
        Fail("--compare: variant {}: {}: record {} has {} repetitions for {} readings", label, path, key, ms.size(),
             r.readings.size());
  } else {  // an older build: the whole run is one unit, its phase from the extreme readings
    r.rep_ms.clear();
    r.readings = {r.context.value("read_bandwidth_during_min_gbs", 0.0),
                  r.context.value("read_bandwidth_during_max_gbs", 0.0)};
  }
  if (r.ms.empty()) Fail("--compare: variant {}: {}: no bench_forward records", label, path);
  return r;
}

}  // namespace

CompareVariant ParseCompareSpec(const std::string& spec, const char* option) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    Fail("{}: '{}': expected LABEL=VAR=VALUE ... (e.g. 'avx2=SPECSWEEP_KERNEL_ISA=avx2', or 'base=')", option, spec);
  CompareVariant v;
  v.label = spec.substr(0, eq);
  std::istringstream rest(spec.substr(eq + 1));
  for (std::string tok; rest >> tok;) {
    const size_t e = tok.find('=');
    if (e == std::string::npos || e == 0) Fail("{}: '{}': setting '{}' is not VAR=VALUE", option, spec, tok);
    v.env.emplace_back(tok.substr(0, e), tok.substr(e + 1));
  }
  return v;
}

void SetCompareBinary(std::vector<CompareVariant>& variants, const std::string& spec, const char* option) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) Fail("{}: '{}': expected LABEL=PATH", option, spec);
  const std::string label = spec.substr(0, eq), path = spec.substr(eq + 1);
  if (access(path.c_str(), X_OK) != 0) Fail("{}: '{}': {} is not an executable file", option, spec, path);
  auto it = std::find_if(variants.begin(), variants.end(), [&](const CompareVariant& v) { return v.label == label; });
  if (it == variants.end()) {  // a build alone, in this environment: a variant of its own
    CompareVariant v;
    v.label = label;
    variants.push_back(std::move(v));
    it = variants.end() - 1;
  }
  it->binary = path;
}

std::vector<std::string> ChildEnvironment(const std::vector<std::string>& base, const CompareVariant& v) {
  auto sets = [&](const std::string& var) {
    return std::any_of(v.env.begin(), v.env.end(), [&](const auto& kv) { return kv.first == var; });
  };
  std::vector<std::string> drop;
  for (const auto& kv : v.env) drop.push_back(kv.first);
  if (sets("OMP_WAIT_POLICY") || sets("GOMP_SPINCOUNT")) {
    drop.push_back("OMP_WAIT_POLICY");
    drop.push_back("GOMP_SPINCOUNT");
  }
  std::vector<std::string> out;
  for (const std::string& e : base) {
    const std::string var = e.substr(0, e.find('='));
    if (std::find(drop.begin(), drop.end(), var) == drop.end()) out.push_back(e);
  }
  for (const auto& [var, value] : v.env)
    if (!value.empty()) out.push_back(var + "=" + value);
  return out;
}

namespace {

void CheckCompareArgs(const CompareArgs& a) {
  const auto& vs = a.variants;
  if (vs.size() < 2) Fail("--compare: {} variant(s); give at least two", vs.size());
  for (size_t i = 0; i < vs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (vs[i].label == vs[j].label) Fail("--compare: label {} given twice", vs[i].label);
  if (a.rounds < 1) Fail("--rounds: {} must be at least 1", a.rounds);
}

// Every variant once per round, the order alternating per round; [variant][round].
std::vector<std::vector<ChildRun>> RunRounds(const CompareArgs& a, const std::string& self) {
  const auto& vs = a.variants;
  std::vector<std::string> base;
  for (char** e = environ; *e; ++e) base.emplace_back(*e);
  const std::vector<std::string> foreign = ForeignEnvironment(base);  // for llama-bench

  char dir_tmpl[] = "/tmp/specsweep-compare-XXXXXX";
  if (!mkdtemp(dir_tmpl)) Fail("--compare: cannot create a temporary directory in /tmp");
  const std::string dir = dir_tmpl;

  std::vector<std::vector<ChildRun>> runs(vs.size());  // [variant][round]
  fmt::print("compare: {} variants x {} rounds of `bench-forward {}`, order alternating per round\n", vs.size(),
             a.rounds, a.model);
  for (int r = 0; r < a.rounds; ++r) {
    for (size_t k = 0; k < vs.size(); ++k) {
      const size_t i = r % 2 == 0 ? k : vs.size() - 1 - k;
      const CompareVariant& v = vs[i];
      if (v.llama_bench) {
        runs[i].push_back(RunLlamaBenchRound(v.binary, *a.llama, ChildEnvironment(foreign, v), dir, v.label));
      } else {
        const std::string json = fmt::format("{}/{}-{}.json", dir, i, r), log = fmt::format("{}/{}-{}.log", dir, i, r);
        std::vector<std::string> args = a.bench_args;
        args.push_back("--json");
        args.push_back(json);
        RunChild(v.binary.empty() ? self : v.binary, args, ChildEnvironment(base, v), log, v.label);
        runs[i].push_back(ReadChild(json, v.label));
        std::remove(json.c_str());
        std::remove(log.c_str());
      }
      fmt::print("  round {} {}: done\n", r + 1, v.label);
      std::fflush(stdout);
    }
  }
  rmdir(dir.c_str());
  for (size_t i = 0; i < vs.size(); ++i)  // the first variant is bench-forward (RunBenchForwardCompare)
    if (vs[i].llama_bench)
      for (size_t r = 0; r < runs[i].size(); ++r) MatchLlamaKeys(runs[0][r], runs[i][r]);
  return runs;
}

// Records every variant and round reported, in the first run's order.
std::vector<std::string> CommonKeys(const std::vector<std::vector<ChildRun>>& runs) {
  std::vector<std::string> keys;
  for (const auto& [key, ms] : runs[0][0].ms) {
    bool everywhere = true;
    for (const auto& rv : runs)
      for (const ChildRun& c : rv) everywhere &= c.ms.count(key) > 0;
    if (everywhere) keys.push_back(key);
  }
  if (keys.empty()) Fail("--compare: the variants report no record in common");
  return keys;
}

void PrintVariants(const std::vector<CompareVariant>& vs, const std::vector<std::vector<ChildRun>>& runs,
                   const std::string& self) {
  for (size_t i = 0; i < vs.size(); ++i) {
    const nlohmann::json& c = runs[i][0].context;
    std::string env;
    for (const auto& [var, value] : vs[i].env) env += fmt::format(" {}={}", var, value.empty() ? "(unset)" : value);
    fmt::print("variant {}:{} binary {} (git {}, kernels {}, threads {})\n", vs[i].label,
               env.empty() ? " (as is)" : env, vs[i].binary.empty() ? self : vs[i].binary, c.value("git_rev", "?"),
               c.value("kernel_isa", "?"), c.value("threads", 0));
  }
}

// One row of the table: each variant's ms over the rounds, then each one's ratio to the
// first per memory phase; a record for each.
void CompareRecord(const CompareArgs& a, const std::string& key, int kw, const std::vector<std::vector<ChildRun>>& runs,
                   const PooledPhases& p, nlohmann::json& recs) {
  const auto& vs = a.variants;
  fmt::print("{:>{}}", key, kw);
  std::vector<std::vector<double>> ms(vs.size());  // [variant][round]
  for (size_t i = 0; i < vs.size(); ++i) {
    std::vector<double> roof;  // none from llama-bench
    for (const ChildRun& c : runs[i]) {
      ms[i].push_back(c.ms.at(key));
      if (c.roofline.count(key)) roof.push_back(c.roofline.at(key));
    }
    const Spread t = Summarize(ms[i]);
    const nlohmann::json roof_median = roof.empty() ? nlohmann::json(nullptr) : nlohmann::json(Median(roof));
    fmt::print(" {:>26}", fmt::format("{:.3f} ({:.2f}..{:.2f}) {}", t.median, t.min, t.max,
                                      roof.empty() ? std::string("-") : fmt::format("{:.2f}", Median(roof))));
    recs.push_back({{"name", fmt::format("bench_forward_compare/{}/{}", vs[i].label, key)},
                    {"run_type", "aggregate"},
                    {"aggregate_name", "median"},
                    {"variant", vs[i].label},
                    {"record", key},
                    {"rounds", a.rounds},
                    {"real_time", t.median},
                    {"time_unit", "ms"},
                    {"min_ms", t.min},
                    {"max_ms", t.max},
                    {"roofline_fraction", roof_median},
                    {"phases", PhaseTimes(key, i, runs, p)}});
  }
  for (size_t i = 1; i < vs.size(); ++i) {
    const PhasePairs pp = PairsOf(key, i, runs, p);
    PrintRatioCells(pp, p);
    recs.push_back(RatioRecord(a, key, i, pp, p));
  }
  fmt::print("\n");
}

nlohmann::json CompareTable(const CompareArgs& a, const std::vector<std::string>& keys,
                            const std::vector<std::vector<ChildRun>>& runs, const PooledPhases& p) {
  const auto& vs = a.variants;
  int kw = 6;
  for (const std::string& k : keys) kw = std::max(kw, static_cast<int>(k.size()));
  fmt::print("{:>{}}", "record", kw);
  for (const CompareVariant& v : vs) fmt::print(" {:>26}", v.label + " ms (range) roof");
  for (size_t i = 1; i < vs.size(); ++i)
    for (MemoryPhase ph : p.reported)
      fmt::print(" {:>28}", fmt::format("{}/{} {} (range) pairs", vs[i].label, vs[0].label, MemoryPhaseName(ph)));
  fmt::print("\n");
  nlohmann::json recs = nlohmann::json::array();
  for (const std::string& key : keys) CompareRecord(a, key, kw, runs, p, recs);
  PrintPairing(a, keys.front(), runs, p);
  fmt::print(
      "ms = median over rounds of each round's median T(n), all phases; ratio = median over pairs of the same "
      "memory phase, {} (rounds alternate the order, so drift of a shared machine hits both sides); roof = "
      "median roofline fraction\n",
      p.per_rep ? "the k-th repetition of a phase in a round with the k-th of that phase in the same round of "
                  "the first variant"
                : "a round's median with the first variant's in the same round when both met one phase");
  if (std::any_of(vs.begin(), vs.end(), [](const CompareVariant& v) { return v.llama_bench; }))
    fmt::print(
        "llama-bench: T(1) = its generation test per token ({} single-token calls from the position), T(n) = its "
        "prompt test of n tokens; its ratio to {} is llama.cpp's time over specsweep's, i.e. specsweep tokens/s "
        "over llama.cpp tokens/s\n",
        kLlamaGenTokens, vs[0].label);
  return recs;
}

void WriteCompareJson(const CompareArgs& a, const std::string& self, const std::vector<std::vector<ChildRun>>& runs,
                      const PooledPhases& p, const nlohmann::json& recs) {
  const auto& vs = a.variants;
  nlohmann::json variants = nlohmann::json::array();
  for (size_t i = 0; i < vs.size(); ++i) {
    nlohmann::json env = nlohmann::json::object();
    for (const auto& [var, value] : vs[i].env)
      env[var] = value.empty() ? nlohmann::json(nullptr) : nlohmann::json(value);
    variants.push_back({{"label", vs[i].label},
                        {"program", vs[i].llama_bench ? "llama-bench" : "specsweep"},
                        {"binary", vs[i].binary.empty() ? self : vs[i].binary},
                        {"env", env},
                        {"child_context", runs[i][0].context}});
  }
  nlohmann::json ctx = {{"schema_version", 2},  // 2: ratios per memory phase, memory_phases
                        {"date", LocalIsoDate()},
                        {"executable", "specsweep bench-forward --compare"},
                        {"cpu", CpuModelName()},
                        {"num_cpus", std::thread::hardware_concurrency()},
                        {"git_rev", GitRev()},
                        {"compiler", CompilerId()},
                        {"model", a.model},
                        {"rounds", a.rounds},
                        {"memory_phases", PooledPhasesJson(p)},
                        {"child_args", a.bench_args},
                        {"variants", variants}};
  std::ofstream f(a.json);
  f << DumpJson({{"context", ctx}, {"benchmarks", recs}}, 2) << "\n";
  if (!f) Fail("--json: {}: cannot write", a.json);
}

}  // namespace

void RunCompare(const CompareArgs& a) {
  CheckCompareArgs(a);
  const std::string self = SelfExe();
  const std::vector<std::vector<ChildRun>> runs = RunRounds(a, self);
  const std::vector<std::string> keys = CommonKeys(runs);
  const PooledPhases phases = PoolPhases(runs, keys);
  PrintVariants(a.variants, runs, self);
  PrintPooledPhases(phases);
  const nlohmann::json recs = CompareTable(a, keys, runs, phases);
  if (!a.json.empty()) WriteCompareJson(a, self, runs, phases, recs);
}

}  // namespace specsweep
