// `specsweep bench-forward MODEL --n 1,2,4,8,16 [--quant f32,f16,q8_0,q4_0]`: time of one
// Forward call on n tokens at a fixed context position, the quantity speculative
// verification pays per step, for one or several weight formats timed interleaved in
// one run. Reports T(n), tokens/s, T(n)/T(1), the draft/target cost ratios
// T_a(1)/T_b(1) between formats and, in the same run, the machine's read bandwidth and
// float multiply-add peak with the roofline floor per n: every streamed weight byte read
// once per call, or every float multiply-add at the peak, whichever takes longer.
// With --compare, the same run under several environments or builds, as child processes
// in interleaved rounds (harness/bench/bench_compare.h).
// The benchmark itself: harness/bench/bench_forward.h.
#include <memory>

#include "harness/bench/bench_forward.h"
#include "harness/bench/bench_generate.h"
#include "base/status_line.h"
#include "harness/cli/commands.h"

namespace specsweep {
namespace {

const CommandRegistrar kRegister(62, [](CLI::App& app) {
  auto args = std::make_shared<BenchForwardArgs>();
  auto* cmd = app.add_subcommand("bench-forward", "Time Forward on n tokens at a context position (T(n), roofline)");
  cmd->add_option("model,-m,--model", args->model,
                  "Model (path or name in the models directory); required, as the first argument or --model");
  cmd->parse_complete_callback([a = args] {
    if (a->model.empty()) throw CLI::RequiredError("bench-forward: the model (as the first argument or --model)");
  });
  cmd->add_option("--n", args->ns, "Batch sizes (comma separated)")->delimiter(',');
  cmd->add_option("--quant", args->quants,
                  "Formats to compare, comma separated, timed interleaved in one run: none (as loaded), f32, f16, "
                  "bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q4_g64, q4_g128, q4_k, q5_k, q6_k")
      ->delimiter(',');
  cmd->add_option("--reps", args->reps, "Timed calls per n (median, min, max)");
  cmd->add_option("--ctx", args->ctx,
                  "Position of the timed tokens: tokens already in the KV cache (a position, not a "
                  "context length)");
  cmd->add_option("--kv-type", args->kv_types,
                  "KV cache types, comma separated, each timed with every format: f32 (default), f16")
      ->delimiter(',');
  cmd->add_option("--team", args->teams,
                  "Forward team policies, comma separated, each timed with every format: auto (default; one thread "
                  "for small work), serial, full (all --threads)")
      ->delimiter(',');
  cmd->add_flag("--loop", args->loop,
                "Decode-loop timing: after each call, the sampler's serial work on its logits (softmax maximum "
                "and argmax per row), so the next call pays what it pays in the decoders (thread wake-up)");
  cmd->add_option("--decode-k", args->decode_ks,
                  "Also time whole greedy decoding loops, interleaved: AR against speculative decoding whose draft "
                  "is the target itself (acceptance 1.0) at these K (comma separated); prompt = the --ctx tokens")
      ->delimiter(',');
  cmd->add_option("--decode-tokens", args->decode_tokens, "Tokens per decoding loop (--decode-k)");
  cmd->add_option("--json", args->json, "Write Google-Benchmark-like JSON here");
  cmd->add_option("--compare", args->compare,
                  "Variant LABEL=VAR=VALUE ... (repeat, at least two): run this benchmark per variant with those "
                  "environment settings (an empty VALUE unsets VAR) as child processes in interleaved rounds, and "
                  "report median times and per-round ratios to the first variant");
  cmd->add_option("--compare-bin", args->compare_bin,
                  "LABEL=PATH: run variant LABEL (a --compare label, or a new variant in this environment) with "
                  "another specsweep build");
  cmd->add_option("--compare-llama-bench", args->compare_llama_bench,
                  "LABEL=PATH: run variant LABEL with llama.cpp's llama-bench at PATH on the same GGUF file (the "
                  "environment as you gave it, plus a --compare LABEL's settings), each repetition between two "
                  "read probes; ratios are to the first bench-forward variant (harness/bench/bench_llama.h)");
  cmd->add_option("--rounds", args->rounds,
                  "--compare, --compare-llama-bench, --vs-generate: rounds (each runs every variant once, order "
                  "alternating)");
  cmd->add_option("--vs-generate", args->vs_generate,
                  "N: generate's decode of N tokens (time per token: its Forward call and the time outside it) "
                  "against T(1) in decode-loop mode at generate's mean context position, as child processes in "
                  "rounds (harness/bench/bench_generate.h)");
  cmd->callback([args] {
    args->threads = Globals().threads;
    args->models_dir = Globals().models_dir;
    if (args->vs_generate != 0) return RunGenerateVsForward(*args);
    if (!args->compare.empty() || !args->compare_bin.empty() || !args->compare_llama_bench.empty())
      return RunBenchForwardCompare(*args);
    StatusLine status;  // a live line on a terminal while loading and timing
    RunBenchForward(*args);
  });
});

}  // namespace
}  // namespace specsweep
