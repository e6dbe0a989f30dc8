// bench-forward: the time of one Forward call on n tokens at a fixed context position,
// the quantity speculative verification pays per step, for one or several weight formats
// timed interleaved in one run: T(n), tokens/s, T(n)/T(1), the draft/target cost ratios
// between formats and, in the same run, the machine's read bandwidth and float
// multiply-add peak with the roofline floor per n (every streamed weight byte read once
// per call, or every multiply-add at the peak, whichever takes longer). With --compare,
// the same run under several environments or builds as child processes in interleaved
// rounds (bench_compare.h). cli/cmd_bench.cpp parses the arguments.
#pragma once
#include <string>
#include <vector>

namespace specsweep {

struct BenchForwardArgs {
  std::string model, json;
  std::vector<std::string> quants;              // formats to compare; "none" = as loaded
  std::vector<std::string> kv_types = {"f32"};  // KV cache types, each with every format
  std::vector<std::string> teams = {"auto"};    // Forward team policies, each with every format
  bool loop = false;                            // serial sampler work after every call, as the decoding loops do
  std::vector<int> decode_ks;                   // decode-loop mode: AR against same-weights speculation at these K
  int decode_tokens = 64;
  std::vector<int> ns = {1, 2, 4, 8, 16};
  int reps = 10;
  int ctx = 64;
  std::vector<std::string> compare, compare_bin;  // --compare LABEL=SETTINGS, --compare-bin LABEL=PATH
  std::vector<std::string> compare_llama_bench;   // --compare-llama-bench LABEL=PATH (bench_llama.h)
  int rounds = 5;
  int vs_generate = 0;     // --vs-generate N: generate's N-token decode against T(1) (bench_generate.h)
  int threads = 0;         // the --threads global (0: all cores), passed on to --compare children
  std::string models_dir;  // the --models global
};

// Validates every option before anything is timed, then measures and prints (and writes
// --json). Throws Error naming the option.
void RunBenchForward(const BenchForwardArgs& a);
// The same benchmark per --compare variant, as child processes in interleaved rounds.
void RunBenchForwardCompare(const BenchForwardArgs& a);

}  // namespace specsweep
