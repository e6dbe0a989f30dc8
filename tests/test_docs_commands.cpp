// The docs are true (issues #34, #47): every `specsweep ...` command of README.md and
// docs/*.md runs (tests/docs_commands.h says what counts as a command, tests/docs_plan.h
// how each runs: as written with its paths substituted, `run` with --list, bench-forward
// with --reps 1, or excluded by one of the few rules of Exclusions(), each with its reason).
//
// DocsCommands.PrintedOutputMatches compares the output a doc prints right after a command
// (an indented chunk directly after the command's chunk) with what that command prints
// now, for commands that ran unchanged (paths substituted in the expected lines too).
// A printed line is compared unless it depends on timing: a number with a unit of time or
// a speedup (`0.057 ms`, `37s`, `0.51x`), a rate (`tok/s`, `tokens/s`, `ms per`), an
// interval (`±`, `[0.49`), or the words elapsed, eta, latency, speedup, busy, took. Each
// compared line must be a line of the command's stdout or stderr (order not compared, so
// stderr notices may sit anywhere); `...` in a doc line matches anything.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <regex>
#include <string>
#include <vector>

#include "models/loader.h"
#include "tests/docs_commands.h"
#include "tests/docs_plan.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;

namespace specsweep {
namespace {

using docs::DocCommand;
using docs::Plan;
using docs::Workspace;

std::string Quote(const std::string& s) { return "'" + std::regex_replace(s, std::regex("'"), "'\\''") + "'"; }

// Runs the built binary with args in the source tree.
testing::CliResult RunIn(const Workspace& ws, const std::vector<std::string>& args) {
  std::string shell = "cd " + Quote(ws.source) + " && " + Quote(SPECSWEEP_BIN);
  for (auto& a : args) shell += " " + Quote(a);
  shell += " >" + ws.dir + "/stdout 2>" + ws.dir + "/stderr </dev/null";
  testing::CliResult r;
  r.exit_code = WEXITSTATUS(std::system(shell.c_str()));
  r.out = testing::ReadFile(ws.dir + "/stdout");
  r.err = testing::ReadFile(ws.dir + "/stderr");
  return r;
}

// A copy of experiments/NAME.yaml at 1 repetition without warm-up (the prompts file
// resolves to the source tree's experiments/).
std::string ReducedCopy(const Workspace& ws, const std::string& name) {
  std::ifstream in(ws.source + "/experiments/" + name + ".yaml");
  std::string text;
  for (std::string l; std::getline(in, l);) {
    if (l.starts_with("repetitions:")) l = "repetitions: 1";
    if (l.starts_with("warmup:")) l = "warmup: 0";
    text += l + "\n";
  }
  const std::string path = ws.dir + "/fixtures/" + name + ".yaml";
  testing::WriteFile(path, text);
  return path;
}

// The models folder of `--models $M`: the shared models and a tiny stand-in for every other
// model an experiment names.
void MakeStandInModels(const Workspace& ws) {
  fs::create_directories(ws.models);
  for (auto& e : fs::directory_iterator(ws.shared))
    fs::create_directory_symlink(e.path(), ws.models + "/" + e.path().filename().string());
  static const std::regex list(R"(models:\s*\[([^\]]*)\])"), draft(R"(model=([A-Za-z0-9_.\-]+))"), item(R"([^,\s]+)");
  for (auto& e : fs::directory_iterator(ws.source + "/experiments")) {
    if (e.path().extension() != ".yaml") continue;
    const std::string text = testing::ReadFile(e.path().string());
    std::vector<std::string> names;
    for (std::sregex_iterator m(text.begin(), text.end(), list), end; m != end; ++m) {
      const std::string items = (*m)[1].str();
      for (std::sregex_iterator n(items.begin(), items.end(), item); n != end; ++n) names.push_back(n->str());
    }
    for (std::sregex_iterator m(text.begin(), text.end(), draft), end; m != end; ++m) names.push_back((*m)[1].str());
    for (auto& n : names) {
      const std::string path = ws.models + "/" + n;
      if (fs::exists(fs::symlink_status(path))) continue;
      if (n.ends_with(".gguf")) {
        testing::WriteTinyGguf(path, 1);
      } else {
        fs::create_directories(path);
        testing::WriteTinyGguf(path + "/model.gguf", 1);
      }
    }
  }
}

// The folders and results every documented command may read, made once.
Workspace& TheWorkspace() {
  static Workspace ws = [] {
    Workspace w;
    w.source = SPECSWEEP_SOURCE_DIR;
    w.dir = testing::TempDir();
    w.shared = fs::weakly_canonical(fs::absolute(ResolveModelsDir(""))).string();
    w.models = w.dir + "/shared/models";
    fs::create_directories(w.models);
    fs::create_directory_symlink(fs::path(w.shared).parent_path() / "prompts", w.dir + "/shared/prompts");
    MakeStandInModels(w);
    w.text_file = w.dir + "/in.txt";
    testing::WriteFile(w.text_file, "Once upon a time, Tom had a red ball.\n");
    w.fake_sbatch = w.dir + "/fake-sbatch.sh";
    testing::WriteFile(w.fake_sbatch, "#!/bin/sh\necho \"$((100 + $$ % 100));cluster\"\n");
    fs::permissions(w.fake_sbatch, fs::perms::owner_all);
    w.fake_llama_bench = w.dir + "/llama-bench";  // a test per -p value and one for -n, 1 ms per token
    testing::WriteFile(w.fake_llama_bench, R"(#!/bin/sh
p=0; n=0
while [ $# -gt 0 ]; do case "$1" in -p) p=$2; shift;; -n) n=$2; shift;; esac; shift; done
out=''
for x in $(echo $p | tr , ' '); do
  [ "$x" -gt 0 ] && out="$out${out:+,}{\"n_prompt\": $x, \"n_gen\": 0, \"samples_ns\": [${x}000000]}"
done
[ "$n" -gt 0 ] && out="$out${out:+,}{\"n_prompt\": 0, \"n_gen\": $n, \"samples_ns\": [${n}000000]}"
echo "[$out]"
)");
    fs::permissions(w.fake_llama_bench, fs::perms::owner_all);
    const std::string fix = w.dir + "/fixtures";
    fs::create_directories(fix);
    w.tour = fix + "/tour/tour.json", w.quick = fix + "/quick/quick.json";
    w.bench = fix + "/sb/spec_bench_quick.json", w.shards = fix + "/shards";
    const std::vector<std::vector<std::string>> steps = {
        {"run", ReducedCopy(w, "tour"), "-o", fix + "/tour"},
        {"run", ReducedCopy(w, "quick"), "-o", w.shards, "--shard", "0/2"},
        {"run", fix + "/quick.yaml", "-o", w.shards, "--shard", "1/2"},
        {"merge", w.shards, "-o", w.quick},
        {"run", ReducedCopy(w, "spec_bench_quick"), "-o", fix + "/sb"},
    };
    for (auto& s : steps) {
      const testing::CliResult r = RunIn(w, s);
      if (r.exit_code != 0) throw std::runtime_error("making the docs' results: " + s[0] + " " + s[1] + ": " + r.err);
    }
    return w;
  }();
  return ws;
}

struct Ran {
  DocCommand doc;
  std::string variant;  // the documented command, one alternative of its [..] chosen
  Plan plan;
  testing::CliResult result;
  bool done = false;
};

// Every documented command planned in document order (a command may read what an earlier
// one wrote); each runs once, when first asked for. ctest runs each test in a process of
// its own: PrintedOutputMatches runs only the commands whose output a doc shows (none of
// them reads another command's output).
std::vector<Ran>& Planned() {
  static std::vector<Ran> all = [] {
    Workspace& ws = TheWorkspace();
    std::vector<Ran> out;
    for (const DocCommand& c : docs::ExtractDocs(SPECSWEEP_SOURCE_DIR).commands)
      for (const std::string& v : docs::ExpandOptional(c.command)) out.push_back({c, v, docs::PlanCommand(ws, v), {}});
    return out;
  }();
  return all;
}

const Ran& RunOnce(Ran& r) {
  if (!r.done && r.plan.excluded.empty()) r.result = RunIn(TheWorkspace(), r.plan.args);
  r.done = true;
  return r;
}

bool SharedModels() { return fs::exists(fs::path(ResolveModelsDir("")) / "tinystories-260k"); }

TEST(DocsCommands, ShortCommandsRunAsWritten) {
  if (!SharedModels()) GTEST_SKIP() << "the documented commands name the shared models (../shared/models)";
  const auto commands = docs::ExtractDocs(SPECSWEEP_SOURCE_DIR).commands;
  ASSERT_GT(commands.size(), 60u) << "too few commands extracted: the extraction is broken";
  std::map<std::string, int> excluded;  // rule -> commands
  int ran = 0, as_written = 0, documented = 0;
  const DocCommand* last = nullptr;
  for (Ran& planned : Planned()) {
    const Ran& r = RunOnce(planned);
    const bool first_variant =
        !last || last->file != r.doc.file || last->line != r.doc.line || last->command != r.doc.command;
    last = &r.doc;
    documented += first_variant;
    if (!r.plan.excluded.empty()) {
      excluded[r.plan.excluded] += first_variant;
      std::printf("excluded (%s): %s:%d: %s\n", r.plan.excluded.c_str(), r.doc.file.c_str(), r.doc.line,
                  r.variant.c_str());
      continue;
    }
    EXPECT_EQ(r.result.exit_code, 0) << r.doc.file << ":" << r.doc.line << ": " << r.variant << "\nran: specsweep "
                                     << ::testing::PrintToString(r.plan.args) << "\n"
                                     << r.result.err;
    std::printf("ran%s: %s:%d: %s\n", r.plan.changed.empty() ? "" : (" with " + r.plan.changed).c_str(),
                r.doc.file.c_str(), r.doc.line, r.variant.c_str());
    ran += first_variant;
    as_written += first_variant && r.plan.changed.empty();
  }
  std::printf(
      "%d of %d documented commands ran (%d as written, paths substituted; %d with --list or --reps 1); "
      "%zu inline spans show syntax or a command's name, not run\n",
      ran, documented, as_written, ran - as_written, docs::ExtractDocs(SPECSWEEP_SOURCE_DIR).syntax.size());
  for (const DocCommand& c : docs::ExtractDocs(SPECSWEEP_SOURCE_DIR).syntax)
    std::printf("syntax, not a command: %s:%d: %s\n", c.file.c_str(), c.line, c.command.c_str());
  for (const auto& x : docs::Exclusions())
    std::printf("excluded: %d command(s): %s: %s\n", excluded[x.rule], x.rule.c_str(), x.reason.c_str());
  EXPECT_EQ(ran + excluded[docs::Exclusions()[0].rule] + excluded[docs::Exclusions()[1].rule], documented);
}

// The extraction on a small doc: what counts as a command, how lines join, which block
// is a command's output.
TEST(DocsCommands, ExtractionReadsWhatADocShows) {
  const std::string dir = testing::TempDir();
  fs::create_directories(dir + "/docs");
  testing::WriteFile(dir + "/README.md",
                     "Prose with `specsweep run FILE` (syntax), `specsweep check` (a name) and\n"
                     "`specsweep table a.json --format csv` (a command), `specsweep --models $M run e.yaml\n"
                     "--list` too.\n"
                     "    specsweep lazy continuation of prose, not code\n\n"
                     "    specsweep generate --model m -n 4 \\\n"
                     "        --draft q4_0   # a comment\n"
                     "    M=x; X=1 build/specsweep inspect --model $M && specsweep tokenize --text 'a # b; c'\n"
                     "    build/specsweep-microbench --benchmark_filter=x\n\n"
                     "    printed line 1\n\n"
                     "    printed line 2\n\n"
                     "Prose.\n\n"
                     "    not an output: no command before it\n");
  testing::WriteFile(dir + "/docs/a.md", "1. Item\n\n       specsweep run e.yaml -o r [--resume | --overwrite]\n");
  const docs::DocText d = docs::ExtractDocs(dir);
  std::vector<std::string> cmds;
  for (auto& c : d.commands) cmds.push_back(c.file + ":" + std::to_string(c.line) + ": " + c.command);
  EXPECT_EQ(cmds, (std::vector<std::string>{"README.md:2: specsweep table a.json --format csv",
                                            "README.md:2: specsweep --models $M run e.yaml --list",
                                            "README.md:6: specsweep generate --model m -n 4 --draft q4_0",
                                            "README.md:8: specsweep inspect --model $M",
                                            "README.md:8: specsweep tokenize --text 'a # b; c'",
                                            "docs/a.md:3: specsweep run e.yaml -o r [--resume | --overwrite]"}));
  ASSERT_EQ(d.syntax.size(), 2u);
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(d.outputs[0].command.command, "specsweep tokenize --text 'a # b; c'");
  EXPECT_EQ(d.outputs[0].lines, (std::vector<std::string>{"printed line 1", "", "printed line 2"}));
  EXPECT_EQ(docs::ExpandOptional(d.commands.back().command),
            (std::vector<std::string>{"specsweep run e.yaml -o r", "specsweep run e.yaml -o r --resume",
                                      "specsweep run e.yaml -o r --overwrite"}));
  EXPECT_EQ(docs::SplitShell("specsweep tokenize --text 'a # b; c'").back(), "a # b; c");
}

// A printed line that depends on timing (see the header comment).
bool TimingDependent(const std::string& line) {
  static const std::regex r(
      R"(\d\s*(ms|s|x)\b|\bms per\b|tok(ens)?/s|±|\[\d|\b(elapsed|eta|latency|speedup|busy|took)\b)");
  return std::regex_search(line, r);
}

// Whether `expected` (a doc line; `...` matches anything) is a line of `text`. A log's UTC
// stamp (`[07:42:10] `, stderr not a terminal) is time, not output: it is left out.
bool HasLine(const std::string& text, const std::string& expected) {
  std::string pattern;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected.compare(i, 3, "...") == 0) {
      pattern += ".*", i += 2;
    } else {
      pattern += std::string(std::strchr(".^$|()[]{}*+?\\", expected[i]) && expected[i] ? "\\" : "") + expected[i];
    }
  }
  const std::regex re(pattern);
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (std::regex_match(std::regex_replace(l, std::regex(R"(^\[\d\d:\d\d:\d\d\] |\s+$)"), ""), re)) return true;
  return false;
}

TEST(DocsCommands, PrintedOutputMatches) {
  if (!SharedModels()) GTEST_SKIP() << "the documented commands name the shared models (../shared/models)";
  const auto outputs = docs::ExtractDocs(SPECSWEEP_SOURCE_DIR).outputs;
  int compared = 0, lines = 0;
  for (const docs::DocOutput& o : outputs) {
    const Ran* ran = nullptr;
    for (Ran& r : Planned())
      if (r.doc.file == o.command.file && r.doc.line == o.command.line && r.variant == o.command.command)
        ran = &RunOnce(r);
    if (!ran || !ran->plan.excluded.empty() || !ran->plan.changed.empty()) {
      std::printf("output not compared (%s): %s:%d\n",
                  !ran                         ? "a variant"
                  : ran->plan.excluded.empty() ? ("ran with " + ran->plan.changed).c_str()
                                               : "excluded",
                  o.command.file.c_str(), o.line);
      continue;
    }
    ++compared;
    for (std::string expected : o.lines) {
      expected = std::regex_replace(expected, std::regex(R"(\s+$)"), "");
      if (expected.empty() || TimingDependent(expected)) continue;
      for (auto& [doc, test] : ran->plan.paths)
        for (size_t at = 0; (at = expected.find(doc, at)) != std::string::npos; at += test.size())
          expected.replace(at, doc.size(), test);
      ++lines;
      EXPECT_TRUE(HasLine(ran->result.out + ran->result.err, expected))
          << o.command.file << ":" << o.line << ": printed output of `" << o.command.command
          << "` differs: the doc shows\n  " << expected << "\nthe command prints\n"
          << ran->result.out << ran->result.err;
    }
  }
  std::printf("%d of %zu output blocks compared (%d lines that do not depend on timing)\n", compared, outputs.size(),
              lines);
  EXPECT_GT(compared, 3);
}

}  // namespace
}  // namespace specsweep
