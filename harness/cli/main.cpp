// specsweep CLI entry point: builds the subcommands registered by harness/cmd_*.cpp and
// turns any library Error into one line on stderr and exit code 1.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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
    reexec = true;
  }
  // The heap on transparent huge pages where the kernel allows them (madvise mode): the
  // weights stream through the TLB. A tunables string that sets hugetlb wins.
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (!tunables || !std::strstr(tunables, "glibc.malloc.hugetlb")) {
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
      Fail("help: '{}' is not a command (specsweep help lists them)", help_on);
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
        "(0: all cores), --version");
}

// The exit code of a command line CLI11 rejected. CLI11 says "A subcommand is required"
// for a mistyped one: name it instead.
int ParseErrorExit(CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args_in) {
  if (app.get_subcommands().empty())
    for (size_t i = 1; i < args_in.size(); ++i) {
      const std::string& arg = args_in[i];
      if (arg.starts_with("-")) {
        // A global option that takes a value (as CLI11 declares it) is followed by it.
        const CLI::Option* o = app.get_option_no_throw(arg);
        if (o && o->get_items_expected_min() > 0) ++i;
        continue;
      }
      std::fprintf(stderr, "error: '%s' is not a command (specsweep help lists them)\n", arg.c_str());
      SuggestForUnknownArguments(app, args_in);
      return 1;
    }
  const int code = app.exit(e);
  if (code != 0) SuggestForUnknownArguments(app, args_in);
  return code;
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
    return 1;
  }
  std::vector<char*> args;
  for (auto& a : args_in) args.push_back(a.data());
  CLI::App app{"specsweep: speculative decoding research harness for Llama-family models on CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return VersionText(); });
  std::string help_on;
  AddHelpCommand(app, help_on);
  AddCommands(app);
  try {
    app.parse(int(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return ParseErrorExit(app, e, args_in);
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
