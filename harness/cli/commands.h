// CLI subcommand registry: each harness/cmd_*.cpp registers its subcommands with a
// static CommandRegistrar, so adding a command touches no shared file.
#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace specsweep {

// Options every subcommand shares (set on the top-level app).
struct GlobalOptions {
  std::string models_dir;  // --models (else $SPECSWEEP_MODELS, else ../shared/models)
  int threads = 0;         // --threads (0: all cores)
};
GlobalOptions& Globals();

using CommandFactory = std::function<void(CLI::App& app)>;
struct CommandRegistrar {
  // `order` sorts the subcommands in --help.
  CommandRegistrar(int order, CommandFactory factory);
};

}  // namespace specsweep
