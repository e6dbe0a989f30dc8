// Helpers shared by the test executables.
#pragma once
#include <functional>
#include <initializer_list>
#include <string>
#include <ostream>
#include <vector>

#include "models/config.h"
#include "quant/runtime.h"

namespace specsweep::testing {

// The shared models directory if it exists ($SPECSWEEP_MODELS or ../shared/models
// beside the source tree), else "". Tests that need real weights skip when "".
std::string SharedModelsDir();
// The non-empty lines of experiments/prompts/tinystories.txt (the shared test prompts).
std::vector<std::string> TinyStoriesPrompts();
// A file of the shared folders by its path below ../shared ("models/llama2-tokenizer/
// tokenizer.model", "fixtures/tokenizers/qwen3/tokenizer.json") if it exists, else "".
std::string SharedFile(const std::string& path_below_shared);

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs the built `specsweep` binary with args (each shell-quoted); captures output.
CliResult RunCli(const std::vector<std::string>& args);

// Starts the built `specsweep` binary with args in the background, stdout to `out_path`
// ("" : /dev/null) and stderr to `err_path`; its pid (-1 when it could not start). For
// tests that signal a running command.
int SpawnCli(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path);

// A fresh temporary directory, removed with its contents when the process exits.
std::string TempDir();
// A tiny random-weight model (TinyTestConfig, synthetic score-BPE vocabulary) written
// as GGUF to `path`: a real model file for harness tests that need no shared data.
void WriteTinyGguf(const std::string& path, unsigned seed);
// A fresh temporary folder with a tiny GGUF model (WriteTinyGguf(seed)) and a prompts
// file of `prompt_lines`: the fixture of the tests that run experiments through the CLI.
struct TinyFiles {
  std::string dir, model, prompts;
};
TinyFiles MakeTinyFiles(unsigned seed, const std::string& prompt_lines = "Once upon a time\nThe dog ran\n");
// Sets an environment variable for the scope (nullptr unsets it), then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};
// Runs f and returns the message of the specsweep Error it throws ("" if none).
std::string ErrorOf(const std::function<void()>& f);
// Expects f to throw an Error whose one-line message contains every fragment.
void ExpectError(const std::function<void()>& f, std::initializer_list<std::string> fragments);
// Writes bytes to a file.
void WriteFile(const std::string& path, const std::string& bytes);
std::string ReadFile(const std::string& path);

// Architecture variants of a small config with head size 16 (test_arch, test_reference),
// in this order: llama, llama3_rope (factor 8, low 1, high 4, original 512: the head's
// wavelengths 6..2e4 span all three bands), linear_rope (x4), qwen2 (biases, theta 1e6),
// qwen3 (head 24: q_dim != dim, no grouped attention kernel), qwen3_hd32 (the grouped
// kernel, one kv head).
struct ArchVariant {
  std::string name;
  ModelConfig config;
};
std::vector<ArchVariant> ArchVariants(const ModelConfig& base);
inline void PrintTo(const ArchVariant& v, std::ostream* os) { *os << v.name; }

// The runtime of the tests that do not vary it: one thread, the default kernels.
const Runtime& Serial();
// `threads` threads under `team` on the default kernels.
Runtime Threads(int threads, TeamPolicy team = TeamPolicy::kAuto);

// `rt` with every format on family `isa`, also set as the layout the loaders pack weights
// for (restore it with KernelIsaGuard); false when this CPU lacks the family.
bool ForceIsa(Runtime& rt, const char* isa);

// Restores, when it goes out of scope, the default layout the loaders pack weights for
// (quant/matmul.h SetLoadLayoutKernels), which a test may set to a family it forces.
class KernelIsaGuard {
 public:
  KernelIsaGuard() = default;
  ~KernelIsaGuard();
};

}  // namespace specsweep::testing
