// What the CLI does with arguments it does not know: llama.cpp spellings become ours,
// flags that mean nothing here get one line saying so, and unknown options and commands
// get the closest known name ("did you mean").
#include <algorithm>
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
      FailUsage("{}: means nothing here: specsweep runs every layer on the CPU (drop the option)", name);
    else if (name == "--draft-min")
      FailUsage(
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

// The deepest subcommand the parser entered: unknown arguments were meant for it.
CLI::App* SelectedCommand(CLI::App& app) {
  CLI::App* at = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (CLI::App* sub : at->get_subcommands())
      if (sub->parsed()) at = sub, deeper = true;
  }
  return at;
}

// The first word of the command line that is no option nor a global option's value:
// the command the user meant ("" if none).
std::string CommandWord(const CLI::App& app, const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (!args[i].starts_with("-")) return args[i];
    // A global option that takes a value (as CLI11 declares it) is followed by it.
    const CLI::Option* o = app.get_option_no_throw(args[i]);
    if (o && o->get_items_expected_min() > 0) ++i;
  }
  return "";
}

// " (did you mean `specsweep X`?)" for a word that is no command: a global flag spelt as
// a word (version), a typo of a command, or the commands it begins (bench).
std::string CommandHint(const CLI::App& app, const std::string& word) {
  if (app.get_option_no_throw("--" + word)) return fmt::format(" (did you mean `specsweep --{}`?)", word);
  std::vector<std::string> commands, prefixed;
  for (const CLI::App* sub : app.get_subcommands({})) {
    commands.push_back(sub->get_name());
    if (sub->get_name().starts_with(word + "-")) prefixed.push_back("`specsweep " + sub->get_name() + "`");
  }
  if (const std::string c = ClosestName(word, commands); !c.empty())
    return fmt::format(" (did you mean `specsweep {}`?)", c);
  if (!prefixed.empty()) return fmt::format(" (did you mean {}?)", fmt::join(prefixed, " or "));
  return "";
}

// " (did you mean --X?)" for an unknown option: a long name by edit distance, with
// Hugging Face's underscores read as dashes; a one-letter name gets none (every other
// letter is one edit away).
std::string OptionHint(const CLI::App& at, const std::string& name) {
  if (!name.starts_with("--")) return "";
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  const std::string c = ClosestName(dashed, OptionNames(at));
  return c.empty() ? "" : fmt::format(" (did you mean {}?)", c);
}

// "unknown option --tempp (did you mean --temp?)" for each unknown option; the words
// after one are taken as its value. Without any: "unexpected argument(s) A B".
std::string ExtrasMessage(CLI::App& app, CLI::App& at) {
  std::vector<std::string> unknown, stray;
  for (const std::string& arg : app.remaining(true)) {
    const std::string name = arg.substr(0, arg.find('='));
    if (name.starts_with("-") && name.size() > 1)
      unknown.push_back(fmt::format("unknown option {}{}", name, OptionHint(at, name)));
    else
      stray.push_back(arg);
  }
  if (!unknown.empty()) return fmt::format("{}", fmt::join(unknown, "; "));
  return fmt::format("unexpected argument{} {}", stray.size() > 1 ? "s" : "", fmt::join(stray, " "));
}

}  // namespace

std::string ParseErrorMessage(CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args) {
  CLI::App* at = SelectedCommand(app);
  if (at == &app) {  // no command recognised: the first word was meant as one
    const std::string word = CommandWord(app, args);
    if (!word.empty()) {
      const std::string hint = CommandHint(app, word);
      return fmt::format("'{}' is not a command{}", word, hint.empty() ? " (specsweep help lists them)" : hint);
    }
    if (dynamic_cast<const CLI::RequiredError*>(&e)) return "a command is required (specsweep help lists them)";
  }
  const std::string what = dynamic_cast<const CLI::ExtrasError*>(&e) ? ExtrasMessage(app, *at) : std::string(e.what());
  if (at == &app) return what;
  if (what.find("did you mean") != std::string::npos) return fmt::format("{}: {}", at->get_name(), what);
  return fmt::format("{}: {} (specsweep {} --help lists its options)", at->get_name(), what, at->get_name());
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
