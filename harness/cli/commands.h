// CLI subcommand registry: each harness/cmd_*.cpp registers its subcommands with a
// static CommandRegistrar, so adding a command touches no shared file.
#pragma once
#include <charconv>
#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace specsweep {

// Options every subcommand shares (set on the top-level app).
struct GlobalOptions {
  std::string models_dir;  // --models (else $SPECSWEEP_MODELS, else ../shared/models)
  int threads = 0;         // --threads (0: all cores)
};
GlobalOptions& Globals();

// A seed: decimal digits in [0, 2^64). CLI11 alone wraps -1 to 2^64 - 1 and clamps 1e26.
inline CLI::Validator SeedRange() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size())
          return "'" + s + "' is not an integer in [0, 2^64 - 1]";
        return "";
      },
      "UINT64");
}
// CLI11's NonNegativeNumber names its bound as a 309-digit number; this says what it means.
inline CLI::Validator IntAtLeast(int lo) {
  return CLI::Validator(
      [lo](std::string& s) -> std::string {
        long long v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > INT_MAX)
          return "'" + s + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(INT_MAX) + "]";
        return "";
      },
      "INT>=" + std::to_string(lo));
}
// llama.cpp spellings rewritten to ours (-md -> --draft-model) and flags that mean
// nothing here refused with one line (-ngl: no GPU). Throws Error. (cli/suggest.cpp)
std::vector<std::string> TranslateForeignFlags(std::vector<std::string> args);
// The one line (no "error: ") for a command line CLI11 refused: the command it was meant
// for, and "did you mean" for an unknown command or option.
std::string ParseErrorMessage(CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args);
// The exit codes (docs/commands.md): an input error is the tool's Error (a file, a model,
// an experiment); a usage error, a command line it refuses.
enum ExitCode : int { kExitOk = 0, kExitInput = 1, kExitUsage = 2, kExitInterrupted = 130 };
// --version: version, revision, compiler, build type and the kernel families this CPU runs.
std::string VersionText();

using CommandFactory = std::function<void(CLI::App& app)>;
struct CommandRegistrar {
  // `order` sorts the subcommands in --help.
  CommandRegistrar(int order, CommandFactory factory);
};

}  // namespace specsweep
