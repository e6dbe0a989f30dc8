// `specsweep bench-forward MODEL --n 1,2,4,8,16`: time of one Forward call on n tokens
// at a fixed context position, the quantity speculative verification pays per step.
// Reports tokens/s, T(n), T(n)/T(1) and, in the same run, the machine's read bandwidth
// with the memory roofline at n=1 (every weight byte read once per token).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness/commands.h"
#include "models/error.h"
#include "models/forward.h"
#include "models/loader.h"
#include "quant/bandwidth.h"
#include "quant/matmul.h"

namespace specsweep {
namespace {

struct BenchArgs {
  std::string model, quant, json;
  std::vector<int> ns = {1, 2, 4, 8, 16};
  int reps = 10;
  int ctx = 64;
};

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

struct Timing {
  int n = 0;
  double median = 0, min = 0, max = 0;  // seconds per Forward call
};

void RunBench(const BenchArgs& a) {
  if (a.reps < 1) Fail("--reps: {} must be at least 1", a.reps);
  if (a.ctx < 0) Fail("--ctx: {} must not be negative", a.ctx);
  std::vector<int> ns = a.ns;
  for (int n : ns)
    if (n < 1) Fail("--n: {} must be at least 1", n);
  // T(n)/T(1) and the roofline need n=1.
  if (std::find(ns.begin(), ns.end(), 1) == ns.end()) ns.insert(ns.begin(), 1);

  using Clock = std::chrono::steady_clock;
  auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
  const auto t_load0 = Clock::now();
  LoadedModel lm = LoadModel(a.model, Globals().models_dir);
  const double load_s = secs(Clock::now() - t_load0);
  std::shared_ptr<const Model> model = lm.model;
  if (!a.quant.empty())
    model = std::make_shared<Model>(QuantizeModel(*model, ParseQType(a.quant, "--quant")));
  const ModelConfig& c = model->config;
  const int max_n = *std::max_element(ns.begin(), ns.end());
  if (a.ctx + max_n > c.max_seq_len)
    Fail("--ctx: {} + n {} exceeds the model's context length {}", a.ctx, max_n, c.max_seq_len);

  KVCache cache(c, 0, a.ctx + max_n);
  // Fixed pseudo-random tokens: timing does not depend on which ids are used.
  std::vector<int> toks(a.ctx + max_n);  // [ctx + max_n]
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int>((i * 7919 + 3) % c.vocab_size);
  if (a.ctx > 0) Forward(*model, std::span<const int>(toks.data(), a.ctx), 0, cache, false);

  std::vector<Timing> timings;
  for (int n : ns) {
    std::span<const int> batch(toks.data() + a.ctx, n);
    std::vector<double> t;  // [reps] seconds per call
    for (int r = -1; r < a.reps; ++r) {  // r = -1: warm-up (scratch growth, caches)
      cache.Truncate(a.ctx);
      auto t0 = Clock::now();
      Forward(*model, batch, a.ctx, cache, true);
      auto t1 = Clock::now();
      if (r >= 0) t.push_back(secs(t1 - t0));
    }
    std::sort(t.begin(), t.end());
    const size_t m = t.size();
    double median = m % 2 ? t[m / 2] : 0.5 * (t[m / 2 - 1] + t[m / 2]);
    timings.push_back({n, median, t.front(), t.back()});
  }
  cache.Truncate(a.ctx);

  // Measured after the forward runs, in the same process and thread setting.
  const double bw_gbs = MeasureReadBandwidthGBs();
  const double wbytes = static_cast<double>(model->WeightBytes());
  // The embedding table is only gathered from (one row per token), so the bytes a
  // token really streams exclude it; both roofline variants are reported.
  const double streamed = wbytes - static_cast<double>(model->tok_embeddings.bytes());
  double t1 = 0;
  for (auto& t : timings)
    if (t.n == 1) t1 = t.median;
  const double roof = bw_gbs * 1e9 / wbytes;  // tokens/s if weights stream at full bandwidth
  const double roof_streamed = bw_gbs * 1e9 / streamed;
  const double tps1 = 1.0 / t1;

  std::printf("model %s (%s%s), %.1fM params, %.1f MiB weights, loaded in %.2fs; ctx %d, reps %d, threads %d, "
              "kernels %s\n",
              lm.name.c_str(), model->source.format.c_str(), a.quant.empty() ? "" : (", quant " + a.quant).c_str(),
              model->ParameterCount() / 1e6, wbytes / 1048576.0, load_s, a.ctx, a.reps, NumThreads(),
              ActiveKernelIsa());
  std::printf("%4s %12s %12s %12s %9s %10s\n", "n", "T(n) ms", "min ms", "max ms", "T(n)/T(1)", "tokens/s");
  for (auto& t : timings)
    std::printf("%4d %12.3f %12.3f %12.3f %9.3f %10.1f\n", t.n, t.median * 1e3, t.min * 1e3, t.max * 1e3,
                t.median / t1, t.n / t.median);
  std::printf("read bandwidth %.2f GB/s; roofline at n=1: %.1f tokens/s (all weights), %.1f (without embedding); "
              "achieved %.1f tokens/s = %.3f of roofline (%.3f without embedding)\n",
              bw_gbs, roof, roof_streamed, tps1, tps1 / roof, tps1 / roof_streamed);

  if (!a.json.empty()) {
    nlohmann::json ctx = {
        {"schema_version", 1},
        {"date", IsoDate()},
        {"executable", "specsweep bench-forward"},
        {"cpu", CpuName()},
        {"num_cpus", std::thread::hardware_concurrency()},
        {"threads", NumThreads()},
        {"kernel_isa", ActiveKernelIsa()},
        {"git_rev", SPECSWEEP_GIT_REV},
        {"compiler", SPECSWEEP_COMPILER},
        {"model", lm.name},
        {"model_format", model->source.format},
        {"quant", a.quant.empty() ? "as-loaded" : a.quant},
        {"params", model->ParameterCount()},
        {"weight_bytes", model->WeightBytes()},
        {"load_s", load_s},
        {"ctx", a.ctx},
        {"repetitions", a.reps},
        {"read_bandwidth_gbs", bw_gbs},
        {"roofline_tokens_per_s", roof},
        {"roofline_fraction", tps1 / roof},
        {"roofline_fraction_without_embedding", tps1 / roof_streamed},
    };
    nlohmann::json recs = nlohmann::json::array();
    for (auto& t : timings)
      recs.push_back({{"name", "bench_forward/n:" + std::to_string(t.n)},
                      {"run_type", "aggregate"},
                      {"aggregate_name", "median"},
                      {"n", t.n},
                      {"repetitions", a.reps},
                      {"real_time", t.median * 1e3},
                      {"time_unit", "ms"},
                      {"min_ms", t.min * 1e3},
                      {"max_ms", t.max * 1e3},
                      {"rel_spread", (t.max - t.min) / t.median},
                      {"t_over_t1", t.median / t1},
                      {"tokens_per_s", t.n / t.median}});
    std::ofstream f(a.json);
    f << nlohmann::json{{"context", ctx}, {"benchmarks", recs}}.dump(2) << "\n";
    if (!f) Fail("--json: {}: cannot write", a.json);
  }
}

const CommandRegistrar kRegister(62, [](CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench-forward", "Time Forward on n tokens at a context position (T(n), roofline)");
  cmd->add_option("model", args->model, "Model (path or name in the models directory)")->required();
  cmd->add_option("--n", args->ns, "Batch sizes (comma separated)")->delimiter(',');
  cmd->add_option("--quant", args->quant, "Quantize matrices in memory first (f16, bf16, q8_0, q4_0, q4_g64, ...)");
  cmd->add_option("--reps", args->reps, "Timed calls per n (median, min, max)");
  cmd->add_option("--ctx", args->ctx, "Context position of the timed tokens (after a prefill)");
  cmd->add_option("--json", args->json, "Write Google-Benchmark-like JSON here");
  cmd->callback([args] { RunBench(*args); });
});

}  // namespace
}  // namespace specsweep
