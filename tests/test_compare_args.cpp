// bench-forward --compare / --compare-bin (issue #49): builds compared with --compare-bin
// alone, and the children timed as the parent was asked to time (--loop, --team).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "harness/bench/bench_forward.h"

namespace specsweep {
namespace {

// A child that records its arguments and writes a one-record bench-forward JSON of an
// older build (no per-repetition readings): whole rounds are paired.
std::string FakeChild(const std::string& dir, const std::string& name, double ms) {
  const std::string json = dir + "/" + name + ".json", script = dir + "/" + name + ".sh";
  std::ofstream(json) << R"({"context": {"read_bandwidth_during_min_gbs": 33, "read_bandwidth_during_max_gbs": 34},
    "benchmarks": [{"name": "bench_forward/q4_0/n:1", "format": "q4_0", "real_time": )"
                      << ms << R"(, "roofline_fraction": 0.5}]})";
  std::ofstream(script) << "#!/bin/sh\necho \"$@\" >> " << dir << "/" << name
                        << ".args\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --json ]; then cp " << json
                        << " \"$2\"; fi\n  shift\ndone\n";
  EXPECT_EQ(0, chmod(script.c_str(), 0755));
  return script;
}

std::string Slurped(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(CompareArgs, BuildsAloneAreVariantsAndChildrenLoopAsAsked) {
  const std::string dir = testing::TempDir() + "/compare_args";
  std::filesystem::create_directories(dir);
  BenchForwardArgs a;
  a.model = "m.gguf";
  a.ns = {1};
  a.reps = 3;
  a.rounds = 2;
  a.loop = true;
  a.teams = {"serial", "full"};
  a.compare_bin = {"old=" + FakeChild(dir, "old", 10), "new=" + FakeChild(dir, "new", 9)};
  ::testing::internal::CaptureStdout();
  RunBenchForwardCompare(a);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("new/old"), std::string::npos) << out;
  EXPECT_NE(out.find("0.900"), std::string::npos) << out;
  for (const char* child : {"old", "new"}) {
    const std::string args = Slurped(dir + "/" + child + ".args");
    EXPECT_NE(args.find("--loop"), std::string::npos) << args;
    EXPECT_NE(args.find("--team serial,full"), std::string::npos) << args;
  }
}

}  // namespace
}  // namespace specsweep
