// Progress a user sees (issue #34): the live status line of long single commands
// (synth, quantize, loading, bench-forward) on a terminal and nothing extra elsewhere,
// and `run` interrupted with Ctrl-C keeping the groups it finished.
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/status_line.h"
#include "tests/test_util.h"

extern char** environ;

namespace specsweep {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << text

TEST(StatusLine, TextSaysCountShareElapsedAndEtaForWorkLeft) {
  EXPECT_EQ(StatusText("loading m.gguf", 112, 224, "MiB", 3.0), "loading m.gguf: 112/224 MiB (50%), 3s, eta 3s");
  EXPECT_EQ(StatusText("random weights", 3, 18, "", 75), "random weights: 3/18 (16%), 1m15s, eta 6m15s");
  // No ETA before anything is done, nor for work already done; no share of an unknown total.
  EXPECT_EQ(StatusText("timing", 0, 10, "", 1.0), "timing: 0/10 (0%), 1s");
  EXPECT_EQ(StatusText("timing", 10, 10, "", 1.0), "timing: 10/10 (100%), 1s");
  EXPECT_EQ(StatusText("reading", 7, 0, "MiB", 2.0), "reading: 7 MiB, 2s");
  EXPECT_EQ(FormatDuration(3725), "1h02m");
  EXPECT_EQ(FormatDuration(-1), "?");
}

// Reports of small work reach a log not at all (large work: tests/test_progress_lines.cpp).
TEST(StatusLine, NothingWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    StatusLine s(f);
    EXPECT_FALSE(s.terminal());  // a log: its lines only for large work
    ReportProgress("work", 1, 4, "");
    std::this_thread::sleep_for(250ms);
    ReportProgress("work", 2, 4, "");
  }
  EXPECT_EQ(std::ftell(f), 0);
  std::fclose(f);
}

// On a terminal (a pseudo-terminal here) the line is redrawn in place and erased at the end.
TEST(StatusLine, RedrawnInPlaceOnATerminal) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  std::FILE* f = fdopen(slave, "w");
  ASSERT_NE(f, nullptr);
  {
    StatusLine s(f);
    ASSERT_TRUE(s.live());
    StatusLine second(f);  // one at a time: a nested one stays silent
    EXPECT_FALSE(second.live());
    ReportProgress("work", 0, 4, "steps");  // starts the step's clock; too young to draw
    std::this_thread::sleep_for(250ms);
    ReportProgress("work", 1, 4, "steps");
    ReportProgress("work", 4, 4, "steps");  // done: erased
  }
  std::fclose(f);
  // A pty hands its bytes over in pieces: read until the closed slave side reports the end (EIO).
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
  close(master);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.substr(0, 4), "\r\033[K");
  EXPECT_HAS(got, "work: 1/4 steps (25%), ");  // then elapsed and eta, whatever the load
  EXPECT_TRUE(got.ends_with("\r\033[K")) << got;
}

// A long command writes no status characters into a log or a pipe.
TEST(StatusLine, CommandsAddNothingWhenNotATerminal) {
  const std::string dir = testing::TempDir();
  auto r = testing::RunCli({"synth", "--shape", "tiny", "-o", dir + "/t.gguf", "--tokenizer", "synthetic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = testing::RunCli({"quantize", dir + "/t.gguf", dir + "/q.gguf", "--quant", "q8_0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  EXPECT_EQ(r.out.find('\033'), std::string::npos);
}

// Lines of a file (0 when it does not exist yet).
size_t Lines(const std::string& path) {
  std::ifstream f(path);
  size_t n = 0;
  for (std::string l; std::getline(f, l);) n += !l.empty();
  return n;
}

// Waits for the child up to `limit`; its exit code, or -1 when it did not end in time.
int WaitFor(pid_t pid, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (int status = 0;; std::this_thread::sleep_for(20ms)) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
  }
}

// Ctrl-C during the second group: the first group's records stay in the results file,
// the message says what was kept and what was lost, and --resume measures the rest.
// The signal is sent when the first group's records appear (no fixed sleeps), and the
// later groups are a hundred times longer (200 new tokens against 2), so a slow, loaded
// machine only makes the wait longer.
TEST(Interrupt, CtrlCKeepsFinishedGroupsAndResumeContinues) {
  const std::string dir = testing::TempDir();
  // The tiny test shape with room for 240 new tokens.
  auto w =
      testing::RunCli({"synth", "--shape", "tiny", "-c", "512", "--tokenizer", "synthetic", "-o", dir + "/tiny.gguf"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  testing::WriteFile(dir + "/prompts.txt", "Once upon a time\nThe dog ran\n");
  testing::WriteFile(dir + "/ctrlc.yaml",
                     "name: ctrlc\nmodels: [" + dir +
                         "/tiny.gguf]\nprompts: {file: prompts.txt, count: 2}\n"
                         "repetitions: 20\nwarmup: 0\nsweep: {k: 2, max_new_tokens: [2, 200, 240]}\n"
                         "decoders: [ar, {decoder: speculative, draft: q4_0}]\n");
  const std::string out = dir + "/out", jsonl = out + "/ctrlc.jsonl", err = dir + "/err";
  const pid_t pid = testing::SpawnCli({"run", dir + "/ctrlc.yaml", "-o", out}, "", err);
  ASSERT_GT(pid, 0);

  // The first group (2 points) stored: interrupt.
  const auto until = std::chrono::steady_clock::now() + 300s;
  int status = 0;
  bool ended = false;
  while (Lines(jsonl) < 2 && std::chrono::steady_clock::now() < until)
    if (waitpid(pid, &status, WNOHANG) == pid) {
      ended = true;
      break;
    } else {
      std::this_thread::sleep_for(20ms);
    }
  ASSERT_FALSE(ended) << "run ended before its first group was stored: " << testing::ReadFile(err);
  ASSERT_EQ(Lines(jsonl), 2u) << "no group stored within 300 s: " << testing::ReadFile(err);
  ASSERT_EQ(kill(pid, SIGINT), 0);
  const int code = WaitFor(pid, 300s);
  const std::string msg = testing::ReadFile(err);
  ASSERT_EQ(code, 130) << msg;  // interrupted (docs/commands.md)
  EXPECT_HAS(msg, "interrupted: 2 of 6 point(s) stored (1 group(s) measured now); lost: group 2/3");
  EXPECT_HAS(msg, "round(s) done and discarded (a group is stored whole); `--resume` continues from there");
  const std::string kept = testing::ReadFile(jsonl);
  ASSERT_EQ(Lines(jsonl), 2u) << kept;
  for (auto& line : {kept.substr(0, kept.find('\n')), kept.substr(kept.find('\n') + 1)})
    EXPECT_EQ(nlohmann::json::parse(line)["params"]["max_new_tokens"], 2) << line;

  auto r = testing::RunCli({"run", dir + "/ctrlc.yaml", "-o", out, "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(jsonl), 6u);
  EXPECT_EQ(testing::ReadFile(jsonl).substr(0, kept.size()), kept);  // the kept records, untouched
  EXPECT_EQ(nlohmann::json::parse(testing::ReadFile(out + "/ctrlc.json"))["benchmarks"].size(), 6u);
}

}  // namespace
}  // namespace specsweep
