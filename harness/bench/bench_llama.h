// bench-forward --compare-llama-bench LABEL=PATH: llama.cpp's own llama-bench as one more
// variant of bench-forward --compare, timing the same GGUF file at the same context
// position and thread count in the same interleaved rounds, its repetitions read by the
// same bandwidth probe, so that "x llama.cpp" is a ratio of one run and one memory phase.
// T(1) is llama-bench's generation test (kLlamaGenTokens single-token calls from the
// position, per token); T(n), n > 1, its prompt test of n tokens (one call).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench/bench_forward.h"
#include "harness/bench/compare_phases.h"

namespace specsweep {

constexpr int kLlamaGenTokens = 8;

struct LlamaBenchPlan {
  std::string model_file;  // the GGUF file bench-forward's children time
  std::vector<int> ns;     // bench-forward's --n
  int ctx = 64;            // --ctx: llama-bench's depth
  int reps = 10;           // repetitions per round: one llama-bench invocation each
  int threads = 1;
  std::string kv_type = "f16";  // --kv-type: llama-bench's K and V cache types (f16: it has no f32)
};

// llama-bench's arguments for one repetition: -r 1, JSON on stdout.
std::vector<std::string> LlamaBenchArgs(const LlamaBenchPlan& p);

// One invocation's output: n -> ms per call for every n of the plan, and its build and
// host fields in `context` unless `context` already holds them. Throws naming `label`
// when the text is not llama-bench's JSON or lacks a test.
std::map<int, double> ReadLlamaBenchJson(const std::string& text, const LlamaBenchPlan& p, const std::string& label,
                                         nlohmann::json& context);

// One round: p.reps invocations, a probe reading before the first and after each, so each
// repetition has readings around it as bench-forward's own repetitions do. Keys are
// "llama/n:N" until MatchLlamaKeys names them as bench-forward's records.
ChildRun RunLlamaBenchRound(const std::string& binary, const LlamaBenchPlan& p, const std::vector<std::string>& env,
                            const std::string& dir, const std::string& label);
// Checks that bench-forward's options fit llama-bench (the file as it is: no --quant but
// none, --kv-type f16, the default --team, no --loop, a GGUF file), fills `plan` from them
// and marks the --compare-llama-bench variants in `c` (a --compare LABEL of theirs sets
// their environment), placed after the bench-forward variants, the first of which every
// ratio is to: "specsweep", this build as is, when --compare and --compare-bin gave none.
// `plan` must outlive `c`. Throws a usage error naming the option.
void AddLlamaBenchVariants(const BenchForwardArgs& a, CompareArgs& c, LlamaBenchPlan& plan);

// Renames a llama-bench run's keys to those of a bench-forward run of one format (by n).
void MatchLlamaKeys(const ChildRun& bench_forward, ChildRun& llama);

// The environment as the user gave it: specsweep's own runtime defaults (GOMP_SPINCOUNT,
// the heap's huge-page tunable; harness/cli/main.cpp) undone, for a program that is not
// specsweep. Marker variables name what main() set.
constexpr const char* kSetSpinCountVar = "SPECSWEEP_SET_GOMP_SPINCOUNT";
constexpr const char* kUserTunablesVar = "SPECSWEEP_USER_GLIBC_TUNABLES";
std::vector<std::string> ForeignEnvironment(const std::vector<std::string>& base);

}  // namespace specsweep
