// CLI subcommand registry: each harness/cmd_*.cpp registers its subcommands with a
// static CommandRegistrar, so adding a command touches no shared file.
#pragma once
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

// llama.cpp spellings rewritten to ours (-md -> --draft-model) and flags that mean
// nothing here refused with one line (-ngl: no GPU). Throws Error. (cli/suggest.cpp)
std::vector<std::string> TranslateForeignFlags(std::vector<std::string> args);
// After CLI11 refused arguments: "did you mean" lines for unknown options and commands.
void SuggestForUnknownArguments(CLI::App& app, const std::vector<std::string>& args);
// --version: version, revision, compiler, build type and the kernel families this CPU runs.
std::string VersionText();

using CommandFactory = std::function<void(CLI::App& app)>;
struct CommandRegistrar {
  // `order` sorts the subcommands in --help.
  CommandRegistrar(int order, CommandFactory factory);
};

}  // namespace specsweep
