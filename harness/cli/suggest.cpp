// What the CLI does with arguments it does not know: llama.cpp spellings become ours,
// flags that mean nothing here get one line saying so, and unknown options and commands
// get the closest known name ("did you mean").
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/build_info.h"
#include "base/error.h"
#include "base/suggest.h"
#include "harness/cli/commands.h"
#include "harness/measure/process_runtime.h"
#include "quant/matmul.h"

namespace specsweep {

std::vector<std::string> TranslateForeignFlags(std::vector<std::string> args) {
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& a = args[i];
    const std::string name = a.substr(0, a.find('='));
    if (name == "--") break;
    if (name == "-md")
      a = "--draft-model" + a.substr(name.size());
    else if (name == "-ngl" || name == "--n-gpu-layers" || name == "--gpu-layers")
      Fail("{}: means nothing here: specsweep runs every layer on the CPU (drop the option)", name);
    else if (name == "--draft-min")
      Fail(
          "--draft-min: llama.cpp's minimum draft length has no counterpart here: every draft is verified, "
          "however short (K is --k or --draft-max)");
  }
  return args;
}

namespace {

// Every long and short name of the options `app` accepts (its own and the globals).
std::vector<std::string> OptionNames(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::App* a = &app; a; a = a->get_parent())
    for (const CLI::Option* o : a->get_options()) {
      for (auto& l : o->get_lnames()) out.push_back("--" + l);
      for (auto& s : o->get_snames()) out.push_back("-" + s);
    }
  return out;
}

}  // namespace

void SuggestForUnknownArguments(CLI::App& app, const std::vector<std::string>& args) {
  // The deepest subcommand that was parsed: unknown arguments were meant for it.
  CLI::App* at = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (CLI::App* sub : at->get_subcommands())
      if (sub->parsed()) at = sub, deeper = true;
  }
  if (at == &app) {  // no command recognised: the first word was meant as one
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i].starts_with("-")) continue;
      const std::string hint = ClosestName(args[i], commands);
      if (!hint.empty()) std::fprintf(stderr, "%s: did you mean `specsweep %s`?\n", args[i].c_str(), hint.c_str());
      break;
    }
    return;
  }
  // Unknown options fall through to the top level (global options may follow the command).
  const std::vector<std::string> options = OptionNames(*at);
  for (const std::string& arg : app.remaining(true)) {
    const std::string name = arg.substr(0, arg.find('='));
    if (!name.starts_with("-")) continue;
    const std::string hint = ClosestName(name, options);
    if (!hint.empty()) std::fprintf(stderr, "%s: did you mean %s?\n", name.c_str(), hint.c_str());
  }
}

std::string VersionText() {
  std::string families;
  try {
    families = fmt::format("{} (active: {})", fmt::join(RunnableKernelIsas(), ", "),
                           ProcessRuntime(Globals().threads).kernel_isa());
  } catch (const Error& err) {  // SPECSWEEP_KERNEL_ISA names a family this CPU lacks
    families = fmt::format("{} ({})", fmt::join(RunnableKernelIsas(), ", "), err.what());
  }
  return fmt::format(
      "specsweep {}\nrevision:        {}\ncompiler:        {}\nbuild type:      {}\n"
      "kernel families: {}",
      Version(), *GitRev() ? GitRev() : "unknown", CompilerId(), *BuildType() ? BuildType() : "none", families);
}

}  // namespace specsweep
