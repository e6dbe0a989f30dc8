#include "harness/bench/bench_llama.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/bench/bench_compare.h"
#include "harness/report/statistics.h"
#include "models/loader.h"
#include "quant/bandwidth.h"
#include "base/error.h"

namespace specsweep {

std::vector<std::string> LlamaBenchArgs(const LlamaBenchPlan& p) {
  std::vector<int> prompt;
  for (int n : p.ns)
    if (n > 1) prompt.push_back(n);
  const bool gen = std::find(p.ns.begin(), p.ns.end(), 1) != p.ns.end();
  return {"-m",   p.model_file,
          "-t",   std::to_string(p.threads),
          "-d",   std::to_string(p.ctx),
          "-p",   prompt.empty() ? "0" : fmt::format("{}", fmt::join(prompt, ",")),
          "-n",   std::to_string(gen ? kLlamaGenTokens : 0),
          "-ctk", p.kv_type,
          "-ctv", p.kv_type,
          "-r",   "1",
          "-o",   "json"};
}

namespace {

// A test's n (1 for a generation test) and its time per call, from one of its samples.
std::pair<int, double> TestTime(const nlohmann::json& t) {
  const int n_prompt = t.at("n_prompt").get<int>(), n_gen = t.at("n_gen").get<int>();
  const double ns = t.at("samples_ns").at(0).get<double>();
  if (n_gen > 0 && n_prompt == 0) return {1, ns / 1e6 / n_gen};
  if (n_prompt > 0 && n_gen == 0) return {n_prompt, ns / 1e6};
  return {0, 0};
}

}  // namespace

std::map<int, double> ReadLlamaBenchJson(const std::string& text, const LlamaBenchPlan& p, const std::string& label,
                                         nlohmann::json& context) {
  std::map<int, double> ms;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    for (const nlohmann::json& t : j) {
      const auto [n, t_ms] = TestTime(t);
      if (n > 0) ms[n] = t_ms;
      if (!context.empty()) continue;  // the build and host fields: the same in every test
      context = {{"git_rev", fmt::format("{} (build {})", t.value("build_commit", "?"), t.value("build_number", 0))},
                 {"kernel_isa", "llama.cpp " + t.value("backends", std::string("?"))},
                 {"threads", t.value("n_threads", 0)},
                 {"cpu_info", t.value("cpu_info", "")},
                 {"model_type", t.value("model_type", "")},
                 {"type_k", t.value("type_k", "")},
                 {"type_v", t.value("type_v", "")},
                 {"flash_attn", t.value("flash_attn", nlohmann::json())},
                 {"llama_gen_tokens", kLlamaGenTokens}};
    }
  } catch (const nlohmann::json::exception& e) {
    Fail("--compare-llama-bench: variant {}: not llama-bench's JSON ({})", label, e.what());
  }
  for (int n : p.ns)
    if (!ms.count(n)) Fail("--compare-llama-bench: variant {}: llama-bench reported no test for n = {}", label, n);
  return ms;
}

ChildRun RunLlamaBenchRound(const std::string& binary, const LlamaBenchPlan& p, const std::vector<std::string>& env,
                            const std::string& dir, const std::string& label) {
  ChildRun r;
  const std::string out = dir + "/llama-bench.json", log = dir + "/llama-bench.log";
  r.readings.push_back(MeasureReadBandwidthGBs());
  for (int rep = 0; rep < p.reps; ++rep) {
    RunCompareChild(binary, LlamaBenchArgs(p), env, out, log, label);
    for (const auto& [n, t] : ReadLlamaBenchJson(Slurp(out), p, label, r.context))
      r.rep_ms[fmt::format("llama/n:{}", n)].push_back(t);
    r.readings.push_back(MeasureReadBandwidthGBs());
  }
  std::remove(out.c_str());
  std::remove(log.c_str());
  for (const auto& [key, ms] : r.rep_ms) r.ms[key] = Median(ms);
  return r;
}

namespace {

// The GGUF file bench-forward's children load for `model`: a path, or a file in the models
// directory.
std::string LlamaModelFile(const BenchForwardArgs& a) {
  namespace fs = std::filesystem;
  std::string path = a.model;
  if (!fs::is_regular_file(path)) path = ResolveModelsDir(a.models_dir) + "/" + a.model;
  if (!fs::is_regular_file(path) || fs::path(path).extension() != ".gguf")
    FailUsage(
        "--compare-llama-bench: model '{}': llama-bench needs a .gguf file (a path, or a file in the models "
        "directory)",
        a.model);
  return path;
}

}  // namespace

void AddLlamaBenchVariants(const BenchForwardArgs& a, CompareArgs& c, LlamaBenchPlan& plan) {
  const char* opt = "--compare-llama-bench";
  if (!a.quants.empty() && !(a.quants.size() == 1 && a.quants[0] == "none"))
    FailUsage("{}: llama-bench times the file as it is: give no --quant (or none), and a file per format", opt);
  if (a.kv_types != std::vector<std::string>{"f16"})
    FailUsage("{}: give --kv-type f16 (llama-bench's KV cache types have no f32)", opt);
  if (a.teams != BenchForwardArgs().teams) FailUsage("{}: not with --team (llama-bench has its own threads)", opt);
  if (a.loop) FailUsage("{}: not with --loop (llama-bench's tests run no sampler)", opt);
  plan.model_file = LlamaModelFile(a);
  plan.ns = a.ns, plan.ctx = a.ctx, plan.reps = a.reps, plan.kv_type = a.kv_types[0];
  plan.threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const std::string& spec : a.compare_llama_bench) {
    SetCompareBinary(c.variants, spec, opt);
    const std::string label = spec.substr(0, spec.find('='));
    for (CompareVariant& v : c.variants)
      if (v.label == label) v.llama_bench = true;
  }
  if (std::all_of(c.variants.begin(), c.variants.end(), [](const CompareVariant& v) { return v.llama_bench; }))
    c.variants.insert(c.variants.begin(), {.label = "specsweep", .binary = "", .llama_bench = false, .env = {}});
  std::stable_partition(c.variants.begin(), c.variants.end(), [](const CompareVariant& v) { return !v.llama_bench; });
  c.llama = &plan;
}

void MatchLlamaKeys(const ChildRun& bench_forward, ChildRun& llama) {
  ChildRun renamed = llama;
  renamed.ms.clear(), renamed.rep_ms.clear();
  for (const auto& [key, ms] : bench_forward.ms) {
    const size_t at = key.rfind("/n:");
    const std::string own = "llama" + (at == std::string::npos ? key : key.substr(at));
    if (!llama.ms.count(own)) continue;
    renamed.ms[key] = llama.ms.at(own);
    renamed.rep_ms[key] = llama.rep_ms.at(own);
  }
  llama = std::move(renamed);
}

std::vector<std::string> ForeignEnvironment(const std::vector<std::string>& base) {
  auto value = [&](const std::string& var) -> const std::string* {
    for (const std::string& e : base)
      if (e.compare(0, var.size() + 1, var + "=") == 0) return &e;
    return nullptr;
  };
  const bool set_spin = value(kSetSpinCountVar) != nullptr;
  const std::string* user_tunables = value(kUserTunablesVar);
  std::vector<std::string> out;
  for (const std::string& e : base) {
    const std::string var = e.substr(0, e.find('='));
    if (var == kSetSpinCountVar || var == kUserTunablesVar) continue;
    if (var == "GOMP_SPINCOUNT" && set_spin) continue;
    if (var == "GLIBC_TUNABLES" && user_tunables) {
      const std::string user = user_tunables->substr(std::string(kUserTunablesVar).size() + 1);
      if (!user.empty()) out.push_back("GLIBC_TUNABLES=" + user);
      continue;
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace specsweep
