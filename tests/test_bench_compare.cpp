// bench-forward --compare (harness/bench/bench_compare.h): spec parsing, the children's
// environment, and one end-to-end run of the real binary on a tiny synthetic model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/bench/bench_compare.h"
#include "base/error.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

TEST(BenchCompare, ParsesSpecs) {
  const CompareVariant v =
      ParseCompareSpec("vnni=SPECSWEEP_KERNEL_ISA=avx2vnni  OMP_WAIT_POLICY=passive X=", "--compare");
  EXPECT_EQ(v.label, "vnni");
  ASSERT_EQ(v.env.size(), 3u);
  EXPECT_EQ(v.env[0], (std::pair<std::string, std::string>{"SPECSWEEP_KERNEL_ISA", "avx2vnni"}));
  EXPECT_EQ(v.env[1], (std::pair<std::string, std::string>{"OMP_WAIT_POLICY", "passive"}));
  EXPECT_EQ(v.env[2], (std::pair<std::string, std::string>{"X", ""}));
  EXPECT_TRUE(ParseCompareSpec("base=", "--compare").env.empty());
  EXPECT_THROW(ParseCompareSpec("nolabel", "--compare"), Error);
  EXPECT_THROW(ParseCompareSpec("=A=1", "--compare"), Error);
  EXPECT_THROW(ParseCompareSpec("a=NOVALUE", "--compare"), Error);
  std::vector<CompareVariant> vs = {ParseCompareSpec("a=", "--compare")};
  EXPECT_THROW(SetCompareBinary(vs, "a=/nonexistent/x", "--compare-bin"), Error);  // not executable
  EXPECT_THROW(SetCompareBinary(vs, "b=/nonexistent/x", "--compare-bin"), Error);
  SetCompareBinary(vs, "a=/bin/sh", "--compare-bin");
  EXPECT_EQ(vs[0].binary, "/bin/sh");
  SetCompareBinary(vs, "b=/bin/true", "--compare-bin");  // no --compare b: a variant of its own
  ASSERT_EQ(vs.size(), 2u);
  EXPECT_EQ(vs[1].label, "b");
  EXPECT_EQ(vs[1].binary, "/bin/true");
  EXPECT_TRUE(vs[1].env.empty());
}

TEST(BenchCompare, ChildEnvironmentAppliesSettings) {
  const std::vector<std::string> base = {"PATH=/bin", "GOMP_SPINCOUNT=1000", "X=1", "Y=2"};
  auto has = [](const std::vector<std::string>& e, const std::string& s) {
    return std::find(e.begin(), e.end(), s) != e.end();
  };
  const auto e1 = ChildEnvironment(base, ParseCompareSpec("a=X=3 Y=", "--compare"));
  EXPECT_TRUE(has(e1, "X=3"));
  EXPECT_FALSE(has(e1, "X=1"));
  EXPECT_FALSE(std::any_of(e1.begin(), e1.end(), [](const std::string& s) { return s.rfind("Y=", 0) == 0; }));
  EXPECT_TRUE(has(e1, "GOMP_SPINCOUNT=1000"));  // untouched when no wait setting is given
  EXPECT_TRUE(has(e1, "PATH=/bin"));
  // A wait policy replaces the inherited spin count, which would otherwise win in libgomp.
  const auto e2 = ChildEnvironment(base, ParseCompareSpec("p=OMP_WAIT_POLICY=passive", "--compare"));
  EXPECT_TRUE(has(e2, "OMP_WAIT_POLICY=passive"));
  EXPECT_FALSE(has(e2, "GOMP_SPINCOUNT=1000"));
  const auto e3 = ChildEnvironment(base, ParseCompareSpec("s=OMP_WAIT_POLICY=active GOMP_SPINCOUNT=5", "--compare"));
  EXPECT_TRUE(has(e3, "OMP_WAIT_POLICY=active"));
  EXPECT_TRUE(has(e3, "GOMP_SPINCOUNT=5"));
}

// The real binary against itself under two kernel families: both variants run every
// round, each child reports the family it was given, and the ratios are written.
TEST(BenchCompare, EndToEndOnTinyModel) {
  const std::filesystem::path dir = testing::TempDir();  // per process: parallel runs do not share it
  const std::string model = (dir / "tiny.gguf").string(), json = (dir / "cmp.json").string();
  const std::string bin = SPECSWEEP_BIN;
  ASSERT_EQ(0, std::system((bin + " synth --shape tiny -o " + model + " > /dev/null").c_str()));
  const std::string cmd =
      bin + " --threads 1 bench-forward " + model +
      " --quant q4_0 --n 1,2 --reps 1 --ctx 4 --rounds 2 --compare 'ref=SPECSWEEP_KERNEL_ISA=scalar' "
      "'as-is=' --json " +
      json + " > /dev/null";
  ASSERT_EQ(0, std::system(cmd.c_str()));
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  const auto& variants = j.at("context").at("variants");
  ASSERT_EQ(variants.size(), 2u);
  EXPECT_EQ(variants[0].at("label"), "ref");
  EXPECT_EQ(variants[0].at("child_context").at("kernel_isa"), "scalar");
  EXPECT_EQ(variants[0].at("env").at("SPECSWEEP_KERNEL_ISA"), "scalar");
  EXPECT_EQ(j.at("context").at("rounds"), 2);
  int ratios = 0, times = 0;
  for (const auto& r : j.at("benchmarks")) {
    const std::string name = r.at("name");
    if (name.rfind("bench_forward_compare/ratio/as-is:ref/", 0) == 0) {
      ++ratios;
      EXPECT_GT(r.at("ratio").get<double>(), 0.0);
      EXPECT_LE(r.at("ratio_min").get<double>(), r.at("ratio").get<double>());
    } else if (name.rfind("bench_forward_compare/", 0) == 0) {
      ++times;
      EXPECT_GT(r.at("real_time").get<double>(), 0.0);
    }
  }
  EXPECT_EQ(ratios, 2);  // q4_0 at n = 1 and 2
  EXPECT_EQ(times, 4);   // per variant
  // A malformed variant fails before any child runs, naming the option.
  const std::string bad = bin + " bench-forward " + model + " --compare 'a=' 'b=NOVALUE' 2> " + (dir / "err").string();
  EXPECT_NE(0, std::system(bad.c_str()));
  std::ifstream e(dir / "err");
  std::string err((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("--compare"), std::string::npos) << err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace specsweep
