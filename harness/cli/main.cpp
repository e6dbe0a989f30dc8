// specsweep CLI entry point: builds the subcommands registered by harness/cmd_*.cpp and
// turns any error into one line on stderr and the exit code of docs/commands.md (usage 2,
// input 1, interrupted 130).
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness/bench/bench_llama.h"
#include "harness/cli/commands.h"
#include "base/build_info.h"
#include "base/error.h"
#include "harness/measure/process_runtime.h"

namespace specsweep {

GlobalOptions& Globals() {
  static GlobalOptions g;
  return g;
}

namespace {
std::vector<std::pair<int, CommandFactory>>& Registry() {
  static std::vector<std::pair<int, CommandFactory>> r;
  return r;
}
}  // namespace

CommandRegistrar::CommandRegistrar(int order, CommandFactory factory) {
  Registry().emplace_back(order, std::move(factory));
}

}  // namespace specsweep

namespace specsweep {
namespace {

// Runtime settings libgomp and glibc read before main, so a missing one costs one
// re-exec; explicit settings win (numbers: docs/measurements.md, "Numbers behind choices
// in the code").
void ReexecWithRuntimeSettings(char** argv) {
  bool reexec = false;
  // Spin briefly at OpenMP barriers (tens of microseconds: the gap between two MatMuls),
  // then sleep: a spinning worker that lost its core on a shared machine stalls each
  // MatMul. An explicit OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT")) {
    setenv("GOMP_SPINCOUNT", "1000", 1);
    setenv(kSetSpinCountVar, "1", 1);  // so that a child that is not specsweep gets the user's (bench_llama.h)
    reexec = true;
  }
  // The heap on transparent huge pages where the kernel allows them (madvise mode): the
  // weights stream through the TLB. A tunables string that sets hugetlb wins.
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (!tunables || !std::strstr(tunables, "glibc.malloc.hugetlb")) {
    setenv(kUserTunablesVar, tunables ? tunables : "", 1);
    const std::string t = tunables && *tunables ? std::string(tunables) + ":glibc.malloc.hugetlb=1"
                                                : std::string("glibc.malloc.hugetlb=1");
    setenv("GLIBC_TUNABLES", t.c_str(), 1);
    reexec = true;
  }
  if (reexec) execv("/proc/self/exe", argv);  // returns only on failure: go on as we are
}

// `specsweep help [COMMAND]`: the same text as --help.
void AddHelpCommand(CLI::App& app, std::string& help_on) {
  auto* help = app.add_subcommand("help", "Show the commands, or one command's options");
  help->add_option("command", help_on, "Command to describe");
  help->callback([&app, &help_on] {
    // Not app.help(): that describes the selected subcommand, i.e. `help` itself.
    if (help_on.empty()) {
      fmt::print("{}", app.get_formatter()->make_help(&app, "specsweep", CLI::AppFormatMode::Normal));
      return;
    }
    CLI::App* sub = nullptr;
    try {
      sub = app.get_subcommand(help_on);
    } catch (const CLI::OptionNotFound&) {
      FailUsage("help: '{}' is not a command (specsweep help lists them)", help_on);
    }
    fmt::print("{}", sub->help());
  });
}

// The global options and every registered command.
void AddCommands(CLI::App& app) {
  app.fallthrough();  // global options may follow the subcommand name
  app.option_defaults()->always_capture_default();
  auto& g = Globals();
  app.add_option("--models", g.models_dir, "Models directory (default: $SPECSWEEP_MODELS or ../shared/models)");
  app.add_option("-t,--threads", g.threads, "Threads for the forward pass (0: all cores)")->check(IntAtLeast(0));
  app.parse_complete_callback([&] { ApplyThreads(g.threads); });
  auto& reg = Registry();
  std::stable_sort(reg.begin(), reg.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& [order, factory] : reg) factory(app);
  for (CLI::App* sub : app.get_subcommands({}))
    sub->footer(
        "Global options (before or after the command): --models DIR (models directory), -t,--threads N "
        "(0: all cores), -v,--version");
}

// SIGINT or SIGTERM outside the runner's measuring loop (which keeps what it stored and
// says what was lost): what was printed stays, exit 130 as a shell would report.
extern "C" void ExitInterrupted(int) {
  static const char msg[] = "\ninterrupted\n";
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(kExitInterrupted);
}

void InstallInterruptHandlers() {
  struct sigaction sa {};
  sa.sa_handler = ExitInterrupted;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// Parses and runs the command: the exit code of docs/commands.md, with one line on
// stderr for any error.
int Run(CLI::App& app, std::vector<char*>& args, const std::vector<std::string>& args_in) {
  auto fail = [](const char* what, int code) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", what);
    return code;
  };
  try {
    app.parse(int(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return fail(ParseErrorMessage(app, e, args_in).c_str(), kExitUsage);
  } catch (const UsageError& e) {
    return fail(e.what(), kExitUsage);
  } catch (const InterruptedError& e) {
    return fail(e.what(), kExitInterrupted);
  } catch (const std::exception& e) {  // Error and the libraries' exceptions
    return fail(e.what(), kExitInput);
  }
  return kExitOk;
}

}  // namespace
}  // namespace specsweep

int main(int argc, char** argv) {
  using namespace specsweep;
  ReexecWithRuntimeSettings(argv);
  // Every block of 1 MiB or more its own mapping, returned to the system when freed, so
  // that loading does not fragment the heap (docs/measurements.md, "mmap threshold while
  // loading").
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  // llama.cpp spellings CLI11 cannot declare (several letters after one dash), and
  // flags that mean nothing here: one line saying so rather than a misreading
  // (`-ngl 99` would otherwise be `-n gl`).
  std::vector<std::string> args_in(argv, argv + argc);
  try {
    args_in = TranslateForeignFlags(std::move(args_in));
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitUsage;
  }
  InstallInterruptHandlers();
  std::vector<char*> args;
  for (auto& a : args_in) args.push_back(a.data());
  CLI::App app{"specsweep: speculative decoding research harness for Llama-family models on CPU"};
  app.require_subcommand(1);
  app.set_version_flag("-v,--version", [] { return VersionText(); });
  std::string help_on;
  AddHelpCommand(app, help_on);
  AddCommands(app);
  return Run(app, args, args_in);
}
