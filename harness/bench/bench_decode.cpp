#include "harness/bench/bench_decode.h"

#include <ctime>

#include <algorithm>

#include <fmt/format.h>

#include "decoders/decoder.h"
#include "harness/store/results.h"
#include "harness/report/statistics.h"
#include "base/error.h"

namespace specsweep {
namespace {

// CPU seconds of the whole process (every thread): on a loaded host a loop that runs on
// one thread is preempted for as long as its neighbours run, which wall time counts and
// CPU time does not (spinning workers count, though: compare it only between loops that
// run on the same team sizes).
double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

std::string RatioText(const std::vector<double>& v, const std::vector<double>& base, double& median, double& lo,
                      double& hi) {
  std::vector<double> r(v.size());  // [reps] ratio to the base run of the same round
  for (size_t i = 0; i < r.size(); ++i) r[i] = v[i] / base[i];
  median = Median(r);
  const auto [a, b] = std::minmax_element(r.begin(), r.end());
  lo = *a, hi = *b;
  return fmt::format("{:.3f} ({:.2f}..{:.2f})", median, lo, hi);
}

}  // namespace

void RunDecodeLoopBench(const Runtime& rt, const LoadedModel& target, const std::vector<int>& prompt,
                        const std::vector<int>& ks, int tokens, int reps, nlohmann::json& records) {
  if (tokens < 2) Fail("--decode-tokens: {} must be at least 2", tokens);
  struct Loop {
    std::string label;
    int k = 0;  // 0: autoregressive
    std::unique_ptr<Decoder> decoder;
    std::vector<double> per_token;      // [reps] seconds per emitted token (prefill excluded)
    std::vector<double> cpu_per_token;  // [reps] process CPU seconds per emitted token (prefill included)
    double accepted_length = 0;         // of the last run (greedy: the same every run)
  };
  std::vector<Loop> loops;
  DecoderOptions o;
  o.max_new_tokens = tokens;
  o.stop_at_eos = false;
  loops.push_back({"ar", 0, MakeDecoder(target, o, DecoderEnv{rt}), {}, {}, 0});
  for (int k : ks) {
    if (k < 1) Fail("--decode-k: {} must be at least 1", k);
    DecoderOptions so = o;
    so.kind = DecoderKind::Speculative;  // draft = the target's own Model, its own cache
    so.k = k;
    loops.push_back(
        {fmt::format("spec_same_weights/k:{}", k), k, MakeDecoder(target, so, target, DecoderEnv{rt}), {}, {}, 0});
  }
  const size_t nl = loops.size();
  for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
    for (size_t j = 0; j < nl; ++j) {
      Loop& l = loops[(j + size_t(r + 1)) % nl];  // rotating order: A B C, B C A, ...
      const double cpu0 = ProcessCpuSeconds();
      const GenerationResult g = l.decoder->Generate(prompt);
      const double cpu = ProcessCpuSeconds() - cpu0;
      if (g.stats.generated_tokens < 1) Fail("decode loop: {} generated nothing", l.label);
      if (r >= 0) {
        l.per_token.push_back((g.stats.total_s - g.stats.prefill_s) / g.stats.generated_tokens);
        l.cpu_per_token.push_back(cpu / g.stats.generated_tokens);
      }
      l.accepted_length = g.stats.mean_accepted_length();
    }
  }
  fmt::print(
      "decode loop: {} greedy tokens after a {}-token prompt, {} rotating repetitions; speculative loops "
      "draft with the target's own weights (acceptance 1.0)\n",
      tokens, prompt.size(), reps);
  fmt::print("{:>24} {:>14} {:>10} {:>24} {:>14} {:>24} {:>16}\n", "decoder", "ms per token", "tokens/s",
             "ratio to ar (range)", "cpu ms/token", "cpu ratio to ar (range)", "accepted length");
  for (const Loop& l : loops) {
    double rm, lo, hi, cm, clo, chi;
    const std::string rt = RatioText(l.per_token, loops[0].per_token, rm, lo, hi);
    const std::string ct = RatioText(l.cpu_per_token, loops[0].cpu_per_token, cm, clo, chi);
    const double t = Median(l.per_token), tc = Median(l.cpu_per_token);
    fmt::print("{:>24} {:>14.4f} {:>10.1f} {:>24} {:>14.4f} {:>24} {:>16.2f}\n", l.label, t * 1e3, 1.0 / t, rt,
               tc * 1e3, ct, l.accepted_length);
    records.push_back({{"name", fmt::format("bench_forward/decode_loop/{}", l.label)},
                       {"run_type", "aggregate"},
                       {"aggregate_name", "median"},
                       {"decoder", l.k ? "speculative" : "ar"},
                       {"draft", l.k ? "same_weights" : "-"},  // the target's own Model, its own cache
                       {"k", l.k},
                       {"tokens", tokens},
                       {"repetitions", reps},
                       {"ms_per_token", t * 1e3},
                       {"ratio_to_ar", rm},
                       {"ratio_to_ar_min", lo},
                       {"ratio_to_ar_max", hi},
                       {"cpu_ms_per_token", tc * 1e3},
                       {"cpu_ratio_to_ar", cm},
                       {"cpu_ratio_to_ar_min", clo},
                       {"cpu_ratio_to_ar_max", chi},
                       {"mean_accepted_length", l.accepted_length}});
  }
}

}  // namespace specsweep
