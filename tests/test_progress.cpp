// Progress a user sees (issue #34): the live status line of long single commands
// (synth, quantize, loading, bench-forward) on a terminal and nothing extra elsewhere.
#include <pty.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "base/status_line.h"
#include "tests/test_util.h"

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

// Reports reach a StatusLine only on a terminal; elsewhere not a byte is written.
TEST(StatusLine, NothingWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    StatusLine s(f);
    EXPECT_FALSE(s.live());
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
  std::string got(4096, '\0');
  const ssize_t n = read(master, got.data(), got.size());
  close(master);
  ASSERT_GT(n, 0);
  got.resize(size_t(n));
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

}  // namespace
}  // namespace specsweep
