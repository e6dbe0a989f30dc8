// `bench-forward --compare`: the same bench-forward run under two or more environments
// or builds, as child processes in interleaved rounds (the order alternates each round),
// reported as medians over rounds and as per-round ratios to the first variant: on a
// shared machine a claim "B is x% faster than A" is a ratio from one run.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace specsweep {

struct LlamaBenchPlan;  // bench_llama.h

struct CompareVariant {
  std::string label;
  std::string binary;        // executable to run (empty: this one)
  bool llama_bench = false;  // `binary` is llama.cpp's llama-bench (bench_llama.h)
  // Environment settings in order; an empty value removes the variable.
  std::vector<std::pair<std::string, std::string>> env;
};

// "LABEL=VAR=VALUE VAR2=VALUE2 ..." (whitespace-separated settings, possibly none:
// "LABEL="). Throws naming `option` on a malformed spec.
CompareVariant ParseCompareSpec(const std::string& spec, const char* option);
// "LABEL=PATH": sets the binary of the variant named LABEL, or adds a variant LABEL that
// runs PATH in this process's environment (a build compared with no --compare spec).
void SetCompareBinary(std::vector<CompareVariant>& variants, const std::string& spec, const char* option);

// The environment of a variant's child: `base` (VAR=VALUE strings) with the variant's
// settings applied. Setting either OMP_WAIT_POLICY or GOMP_SPINCOUNT drops the other
// unless the variant sets it too: specsweep's own default (GOMP_SPINCOUNT=1000, put
// in the environment at start) would otherwise override the variant's wait policy.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& base, const CompareVariant& v);

struct CompareArgs {
  std::vector<CompareVariant> variants;  // >= 2, labels distinct
  int rounds = 5;
  std::vector<std::string> bench_args;    // after the binary: global options, "bench-forward", model, options
  std::string model;                      // for the report
  std::string json;                       // output file ("" = none)
  const LlamaBenchPlan* llama = nullptr;  // what llama-bench variants time (set when there are some)
};
void RunCompare(const CompareArgs& a);

// The running executable (/proc/self/exe), which children run unless a variant names another.
std::string SelfExe();
// A whole file's bytes ("" when it cannot be read).
std::string Slurp(const std::string& path);
// Runs `binary args...` with environment `env` (VAR=VALUE strings), stdout into `out` and
// stderr into `err` (the same file when equal); throws naming `label`, with the tail of
// `err`, unless it exits 0.
void RunCompareChild(const std::string& binary, const std::vector<std::string>& args,
                     const std::vector<std::string>& env, const std::string& out, const std::string& err,
                     const std::string& label);

}  // namespace specsweep
