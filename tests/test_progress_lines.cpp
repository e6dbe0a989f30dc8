// Progress in a log (issue #47, item 4): when stderr is not a terminal, a long command
// writes lines stamped with the UTC time — a line per phase, a step's share and ETA once
// a period (30 s; a fake clock here) — and `run` a line per point as it is stored.
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/progress_log.h"
#include "base/status_line.h"
#include "harness/measure/progress.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using namespace std::chrono_literals;

// A clock the test moves by hand.
struct FakeClock {
  SteadyClock::time_point t{};
  std::function<SteadyClock::time_point()> Fn() {
    return [this] { return t; };
  }
};

// What was written to a temporary (non-terminal) file.
std::string Contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += char(c);
  return s;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

const std::string kStamp = R"(\[\d\d:\d\d:\d\d\] )";

TEST(ProgressLines, StampIsTheUtcTimeOfDay) {
  EXPECT_EQ(UtcStamp(0), "[00:00:00]");
  EXPECT_EQ(UtcStamp(86400 * 20000 + 7 * 3600 + 41 * 60 + 2), "[07:41:02]");
  EXPECT_EQ(AmountText(13824, "MiB"), "13.5 GiB");
  EXPECT_EQ(AmountText(58, "MiB"), "58 MiB");
  EXPECT_EQ(AmountText(22, "layers"), "22 layers");
}

// A phase line and a step's start line: the stamp, the command, the step and its size.
TEST(ProgressLines, PhaseLineHasTimestamp) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    StatusLine s(f, {.prefix = "synth", .log_min_mib = 0, .terminal = true, .log = {}});
    ASSERT_TRUE(s.live());
    EXPECT_FALSE(s.terminal());
    ReportPhase("llama-2-7b as f16 to x.gguf");
    ReportBytes("writing x.gguf", 0, uint64_t(13824) << 20);
  }
  const auto lines = Lines(Contents(f));
  std::fclose(f);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(kStamp + "synth: llama-2-7b as f16 to x.gguf"))) << lines[0];
  EXPECT_TRUE(std::regex_match(lines[1], std::regex(kStamp + R"(synth: writing x\.gguf \(13\.5 GiB\))"))) << lines[1];
}

// Reports every 5 s at 100 MiB/s: a share line at 30, 60, 90 and 120 s only, its
// percentage rising, its ETA the time left at the rate so far; then the end.
TEST(ProgressLines, ShareAndEtaOncePerPeriod) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  FakeClock clock;
  const long total = 13824;  // MiB
  {
    StatusLine s(f, {.prefix = "synth", .log_min_mib = 0, .terminal = true, .log = {.period = 30s, .now = clock.Fn()}});
    for (int t = 0; t <= 130; t += 5) {
      clock.t = SteadyClock::time_point(std::chrono::seconds(t));
      ReportBytes("writing x.gguf", uint64_t(100 * t) << 20, uint64_t(total) << 20);
    }
    clock.t += 8s;
    ReportBytes("writing x.gguf", uint64_t(total) << 20, uint64_t(total) << 20);
  }
  const std::string text = Contents(f);
  std::fclose(f);
  const auto lines = Lines(text);
  ASSERT_EQ(lines.size(), 6u) << text;  // start, 4 shares, end
  const std::regex share(kStamp + R"(synth: writing x\.gguf: (\d+)% \(([\d.]+) of 13\.5 GiB\), eta (\S+))");
  int last_percent = -1;
  for (size_t i = 1; i <= 4; ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, share)) << lines[i];
    const int percent = std::stoi(m[1]);
    EXPECT_GT(percent, last_percent);
    last_percent = percent;
    // At 30 i seconds, 3000 i MiB are done: the rest at 100 MiB/s.
    const long done = 3000 * long(i);
    EXPECT_EQ(percent, done * 100 / total);
    EXPECT_EQ(m[3].str(), FormatDuration((total - done) / 100.0)) << lines[i];
  }
  EXPECT_TRUE(std::regex_match(lines[5], std::regex(kStamp + R"(synth: writing x\.gguf: done in 2m18s)"))) << lines[5];
}

// Small files leave the log as it was; once a large file was seen, the command's other
// steps (layers here) show too, its small files still not.
TEST(ProgressLines, SmallWorkStaysSilentLargeWorkShows) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    StatusLine s(f, {.prefix = "quantize", .log_min_mib = 256, .terminal = true, .log = {}});
    ReportBytes("loading small.gguf", 0, 10 << 20);
    ReportProgress("quantizing to q4_0", 0, 4, "layers");
    ReportProgress("quantizing to q4_0", 4, 4, "layers");
    EXPECT_EQ(Contents(f), "");
    ReportBytes("loading big.gguf", 0, uint64_t(300) << 20);
    ReportBytes("loading big.gguf", uint64_t(300) << 20, uint64_t(300) << 20);
    ReportBytes("loading big.gguf", uint64_t(200) << 20, uint64_t(300) << 20);  // a late worker: no new step
    ReportProgress("quantizing to q4_0", 0, 22, "layers");
    ReportBytes("hashing prompts.txt", 0, 10 << 20);  // small still
  }
  const std::string text = Contents(f);
  std::fclose(f);
  const auto lines = Lines(text);
  ASSERT_EQ(lines.size(), 3u) << text;
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(kStamp + R"(quantize: loading big\.gguf \(300 MiB\))"))) << text;
  EXPECT_TRUE(std::regex_match(lines[1], std::regex(kStamp + R"(quantize: loading big\.gguf: done in 0s)"))) << text;
  EXPECT_TRUE(std::regex_match(lines[2], std::regex(kStamp + R"(quantize: quantizing to q4_0 \(22 layers\))"))) << text;
}

// The sweep's status in a log: once a period, the run's share of generations and an ETA
// from the measuring time per generation; points' lines stamped.
TEST(ProgressLines, RunStatusOncePerPeriodWithShareAndEta) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  FakeClock clock;
  {
    Progress p(f, 4, 0, 100, {.log = {.period = 30s, .now = clock.Fn()}, .ticker = false});
    p.Set({.group = 1, .groups = 2, .round = 1, .rounds = 5, .stage = "round", .point = "ar"});
    for (int t = 1; t <= 90; ++t) {  // a generation a second
      clock.t = SteadyClock::time_point(std::chrono::seconds(t));
      p.GenerationDone();
      p.Poll();
    }
    p.Done("ar", "12.0 tok/s");
  }
  const std::string text = Contents(f);
  std::fclose(f);
  const auto lines = Lines(text);
  ASSERT_EQ(lines.size(), 4u) << text;  // at 30, 60, 90 s, and the point
  for (int i = 0; i < 3; ++i) {
    const int t = 30 * (i + 1);
    EXPECT_EQ(lines[size_t(i)].substr(11), fmt::format("group 1/2, round 1/5: ar  [points 0/4, generations {}/100 "
                                                       "({}%), elapsed {}, eta {}]",
                                                       t, t, FormatDuration(t), FormatDuration(100 - t)))
        << text;
  }
  EXPECT_TRUE(std::regex_match(lines[3], std::regex(kStamp + R"(\[1/4\] ar  12\.0 tok/s  \(elapsed 1m30s\))"))) << text;
}

// `synth` with stderr and stdout in one file: its phase line comes before its end line.
TEST(ProgressLines, SynthPipedPrintsPhaseLinesBeforeItsEnd) {
  const std::string dir = testing::TempDir(), log = dir + "/log";
  const std::string cmd = std::string("'") + SPECSWEEP_BIN + "' synth --shape tiny --tokenizer synthetic -o '" + dir +
                          "/t.gguf' >'" + log + "' 2>&1 </dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::ReadFile(log);
  const std::string text = testing::ReadFile(log);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(kStamp + "synth: tiny .* to .*t\\.gguf\n"))) << text;
  const size_t end = text.find("wrote " + dir + "/t.gguf");
  ASSERT_NE(end, std::string::npos) << text;
  EXPECT_LT(size_t(m.position(0)), end) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(kStamp + R"(synth: writing t\.gguf: done in \d+s)"))) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

// `run` with stderr in a file: its plan and group stamped, and one stamped line per point.
TEST(ProgressLines, RunWritesAStampedLinePerPoint) {
  const testing::TinyFiles t = testing::MakeTinyFiles(3);
  testing::WriteFile(t.dir + "/e.yaml",
                     "name: e\nmodels: [" + t.model + "]\nprompts: {file: " + t.prompts +
                         ", count: 1}\nrepetitions: 1\nwarmup: 0\nsweep: {k: 2, "
                         "max_new_tokens: 4}\ndecoders: [ar, {decoder: speculative, draft: q8_0}]\n");
  const auto r = testing::RunCli({"run", t.dir + "/e.yaml", "-o", t.dir + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("(^|\n)" + kStamp + "plan: 2 points in 1 group"))) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\n" + kStamp + "group 1/1: "))) << r.err;
  for (int i = 1; i <= 2; ++i)
    EXPECT_TRUE(std::regex_search(r.err, std::regex("\n" + kStamp + "\\[" + std::to_string(i) + "/2\\] \\S+")))
        << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
}

}  // namespace
}  // namespace specsweep
