// Every short command in README.md and docs/*.md runs as written (issue #34): the
// indented `specsweep ...` lines are extracted and run from the source tree with the
// built binary. Only fast ones run: generate (at most 64 tokens), inspect, tokenize,
// help, --version, table/check of committed results, and `run` with --list added
// (the experiment file and its grid are checked without measuring). Commands naming
// the shared models skip when ../shared/models is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "models/loader.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;

namespace specsweep {
namespace {

struct DocCommand {
  std::string file;  // where it was found
  std::string line;  // the command as written, without a trailing comment
};

// Indented code lines starting with `specsweep ` that fit on one line.
std::vector<DocCommand> ExtractCommands() {
  std::vector<std::string> files = {std::string(SPECSWEEP_SOURCE_DIR) + "/README.md"};
  for (auto& e : fs::directory_iterator(std::string(SPECSWEEP_SOURCE_DIR) + "/docs"))
    if (e.path().extension() == ".md") files.push_back(e.path().string());
  std::sort(files.begin() + 1, files.end());
  std::vector<DocCommand> out;
  for (auto& f : files) {
    std::ifstream in(f);
    std::string line;
    bool continued = false;
    while (std::getline(in, line)) {
      const bool was_continued = std::exchange(continued, !line.empty() && line.back() == '\\');
      if (was_continued || !line.starts_with("    ")) continue;
      std::string cmd = line.substr(line.find_first_not_of(' '));
      if (!cmd.starts_with("specsweep ") || continued) continue;
      const size_t hash = cmd.find("  #");
      if (hash != std::string::npos) cmd = cmd.substr(0, hash);
      while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
      out.push_back({fs::path(f).filename().string(), cmd});
    }
  }
  return out;
}

// The command to run for a documented one, or "" when it is not a fast one.
std::string Runnable(const std::string& cmd) {
  static const std::regex fast(R"(^specsweep (generate|inspect|tokenize|help|--version|table|check|run)\b.*)");
  if (!std::regex_match(cmd, fast)) return "";
  const bool run = cmd.starts_with("specsweep run");  // only --list: writes nothing
  if (cmd.find('[') != std::string::npos || cmd.find("...") != std::string::npos ||
      (cmd.find("/tmp/") != std::string::npos && !run) || cmd.find('<') != std::string::npos ||
      cmd.find("&&") != std::string::npos || cmd.find(';') != std::string::npos ||
      cmd.find("--file in.txt") != std::string::npos)
    return "";
  std::smatch n;
  if (cmd.starts_with("specsweep generate") && std::regex_search(cmd, n, std::regex(R"(-n (\d+))")) &&
      std::stoi(n[1]) > 64)
    return "";
  // table/check only of committed results; run only as --list.
  if ((cmd.starts_with("specsweep table") || cmd.starts_with("specsweep check")) &&
      !std::regex_search(cmd, std::regex(R"(^specsweep (table|check) results/baseline/)")))
    return "";
  if (run) {
    if (cmd.find("--shard") != std::string::npos) return "";
    return cmd.find("--list") == std::string::npos ? cmd + " --list" : cmd;
  }
  return cmd;
}

TEST(DocsCommands, ShortCommandsRunAsWritten) {
  const std::vector<DocCommand> cmds = ExtractCommands();
  ASSERT_GT(cmds.size(), 10u) << "too few commands extracted: the extraction is broken";
  const bool shared =
      fs::is_directory(ResolveModelsDir("")) && fs::exists(fs::path(ResolveModelsDir("")) / "tinystories-260k");
  int ran = 0;
  for (const DocCommand& c : cmds) {
    const std::string run = Runnable(c.line);
    if (run.empty()) continue;
    if (!shared && run.find("tinystories") != std::string::npos) continue;
    const std::string dir = testing::TempDir();
    std::string shell = "cd '" + std::string(SPECSWEEP_SOURCE_DIR) + "' && '" + SPECSWEEP_BIN + "'" +
                        run.substr(std::string("specsweep").size()) + " >" + dir + "/out 2>" + dir + "/err </dev/null";
    const int status = std::system(shell.c_str());
    std::ifstream err(dir + "/err");
    const std::string err_text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    EXPECT_EQ(status, 0) << c.file << ": " << run << "\n" << err_text;
    std::printf("ran (%s): %s\n", c.file.c_str(), run.c_str());
    ++ran;
  }
  std::printf("%d of %zu documented commands ran\n", ran, cmds.size());
  EXPECT_GE(ran, shared ? 8 : 2);
}

}  // namespace
}  // namespace specsweep
