// Helpers shared by the test executables.
#pragma once
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

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

// A fresh temporary directory, removed with its contents when the process exits.
std::string TempDir();
// A tiny random-weight model (TinyTestConfig, synthetic score-BPE vocabulary) written
// as GGUF to `path`: a real model file for harness tests that need no shared data.
void WriteTinyGguf(const std::string& path, unsigned seed);
// Runs f and returns the message of the specsweep Error it throws ("" if none).
std::string ErrorOf(const std::function<void()>& f);
// Expects f to throw an Error whose one-line message contains every fragment.
void ExpectError(const std::function<void()>& f, std::initializer_list<std::string> fragments);
// Writes bytes to a file.
void WriteFile(const std::string& path, const std::string& bytes);
std::string ReadFile(const std::string& path);

}  // namespace specsweep::testing
