#include "harness/bench_decode.h"

#include <algorithm>

#include <fmt/format.h>

#include "decoders/decoder.h"
#include "harness/results.h"
#include "models/error.h"

namespace specsweep {

void RunDecodeLoopBench(const LoadedModel& target, const std::vector<int>& prompt, const std::vector<int>& ks,
                        int tokens, int reps, nlohmann::json& records) {
  if (tokens < 2) Fail("--decode-tokens: {} must be at least 2", tokens);
  struct Loop {
    std::string label;
    int k = 0;  // 0: autoregressive
    std::unique_ptr<Decoder> decoder;
    std::vector<double> per_token;  // [reps] seconds per emitted token (prefill excluded)
    double accepted_length = 0;     // of the last run (greedy: the same every run)
  };
  std::vector<Loop> loops;
  DecoderOptions o;
  o.max_new_tokens = tokens;
  o.stop_at_eos = false;
  loops.push_back({"ar", 0, MakeDecoder(target, o), {}, 0});
  for (int k : ks) {
    if (k < 1) Fail("--decode-k: {} must be at least 1", k);
    DecoderOptions so = o;
    so.kind = DecoderKind::Assisted;  // draft = the target's own Model, its own cache
    so.k = k;
    loops.push_back({fmt::format("spec_same_weights/k:{}", k), k, MakeDecoder(target, so, target), {}, 0});
  }
  const size_t nl = loops.size();
  for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
    for (size_t j = 0; j < nl; ++j) {
      Loop& l = loops[(j + size_t(r + 1)) % nl];  // rotating order: A B C, B C A, ...
      const GenerationResult g = l.decoder->Generate(prompt);
      if (g.stats.generated_tokens < 1) Fail("decode loop: {} generated nothing", l.label);
      if (r >= 0) l.per_token.push_back((g.stats.total_s - g.stats.prefill_s) / g.stats.generated_tokens);
      l.accepted_length = g.stats.mean_accepted_length();
    }
  }
  fmt::print("decode loop: {} greedy tokens after a {}-token prompt, {} rotating repetitions; speculative loops "
             "draft with the target's own weights (acceptance 1.0)\n",
             tokens, prompt.size(), reps);
  fmt::print("{:>24} {:>14} {:>10} {:>24} {:>16}\n", "decoder", "ms per token", "tokens/s", "ratio to ar (range)",
             "accepted length");
  for (const Loop& l : loops) {
    std::vector<double> ratio(l.per_token.size());  // [reps] ratio to the AR run of the same round
    for (size_t i = 0; i < ratio.size(); ++i) ratio[i] = l.per_token[i] / loops[0].per_token[i];
    const double t = Median(l.per_token), rm = Median(ratio);
    const auto [lo, hi] = std::minmax_element(ratio.begin(), ratio.end());
    fmt::print("{:>24} {:>14.4f} {:>10.1f} {:>24} {:>16.2f}\n", l.label, t * 1e3, 1.0 / t,
               fmt::format("{:.3f} ({:.2f}..{:.2f})", rm, *lo, *hi), l.accepted_length);
    records.push_back({{"name", fmt::format("bench_forward/decode_loop/{}", l.label)},
                       {"run_type", "aggregate"},
                       {"aggregate_name", "median"},
                       {"decoder", l.k ? "assisted_same_weights" : "ar"},
                       {"k", l.k},
                       {"tokens", tokens},
                       {"repetitions", reps},
                       {"ms_per_token", t * 1e3},
                       {"ratio_to_ar", rm},
                       {"ratio_to_ar_min", *lo},
                       {"ratio_to_ar_max", *hi},
                       {"mean_accepted_length", l.accepted_length}});
  }
}

}  // namespace specsweep
