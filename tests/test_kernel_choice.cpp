// The per-format kernel family choice (quant/kernel_choice.h): the rule that turns
// timings into a choice; its forcing and its cache at the process edge
// (harness/measure/process_runtime.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "harness/measure/process_runtime.h"
#include "quant/kernel_choice.h"
#include "quant/kernels.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using json = nlohmann::json;

using testing::ScopedEnv;

// Two stand-in families (only their names and identity matter to the rule).
const KernelFamily& Fake(const char* name) {
  static KernelFamily a = ScalarKernels(), b = ScalarKernels(), c = ScalarKernels();
  a.name = "wide", b.name = "narrow", c.name = "other";
  return std::string(name) == "wide" ? a : std::string(name) == "narrow" ? b : c;
}

TEST(KernelChoice, PicksTheFasterFamilyPerFormat) {
  const std::vector<const KernelFamily*> cands = {&Fake("wide"), &Fake("narrow"), &Fake("other")};
  const json t = {{"q4_k", {{"wide", 100.0}, {"narrow", 76.0}, {"other", 80.0}}},
                  {"f16", {{"wide", 100.0}, {"narrow", 132.0}}},
                  {"q8_0", {{"wide", 100.0}, {"narrow", 90.0}}}};  // within the 15% margin
  const KernelChoice c = ChooseKernels(t, cands);
  EXPECT_EQ(c.base, cands[0]);
  EXPECT_EQ(c.per_type[int(QType::Q4_K)], cands[1]);
  EXPECT_EQ(c.per_type[int(QType::F16)], cands[0]);
  EXPECT_EQ(c.per_type[int(QType::Q8_0)], cands[0]) << "a gain within the margin keeps the default";
  EXPECT_EQ(c.per_type[int(QType::Q6_K)], cands[0]) << "untimed formats keep the default";
  EXPECT_EQ(DescribeChoice(c), "wide (q4_k: narrow), prefetch window");
  EXPECT_EQ(ChooseKernels(t, cands, 0.05).per_type[int(QType::Q8_0)], cands[1]);
}

TEST(KernelChoice, MalformedTimingsKeepTheDefault) {
  const std::vector<const KernelFamily*> cands = {&Fake("wide"), &Fake("narrow")};
  for (const json& t :
       {json(nullptr), json(3), json{{"q4_k", "fast"}}, json{{"q4_k", {{"narrow", 1.0}}}},
        json{{"q4_k", {{"wide", 0.0}, {"narrow", 1.0}}}}, json{{"q4_k", {{"wide", 10.0}, {"narrow", "1"}}}}}) {
    const KernelChoice c = ChooseKernels(t, cands);
    for (const KernelFamily* k : c.per_type) EXPECT_EQ(k, cands[0]) << t.dump();
  }
  EXPECT_STREQ(ChooseKernels(json::object(), {}).base->name, "scalar");
}

TEST(KernelChoice, ForcedFamilyAndBadSetting) {
  {
    ScopedEnv isa("SPECSWEEP_KERNEL_ISA", "scalar");
    const KernelChoice c = KernelChoiceFromEnvironment(1);
    EXPECT_EQ(c.source, "forced");
    for (const KernelFamily* k : c.per_type) EXPECT_STREQ(k->name, "scalar");
  }
  {
    ScopedEnv isa("SPECSWEEP_KERNEL_ISA", "neon");
    testing::ExpectError([] { KernelChoiceFromEnvironment(1); }, {"SPECSWEEP_KERNEL_ISA", "neon"});
  }
  ScopedEnv isa("SPECSWEEP_KERNEL_ISA", nullptr);
  ScopedEnv cal("SPECSWEEP_KERNEL_CALIBRATION", "sometimes");
  testing::ExpectError([] { KernelChoiceFromEnvironment(1); }, {"SPECSWEEP_KERNEL_CALIBRATION", "sometimes"});
}

TEST(KernelChoice, PrefetchRuleAndForcedPattern) {
  EXPECT_EQ(PrefetchRule("AMD EPYC 9R14 (family 25 model 17 stepping 1)"), PrefetchPattern::kLead);
  EXPECT_EQ(PrefetchRule("Intel(R) Xeon(R) Platinum 8488C (family 6 model 143 stepping 8)"), PrefetchPattern::kWindow);
  EXPECT_EQ(PrefetchRule("unknown CPU (family 0 model 0 stepping 0)"), PrefetchPattern::kWindow);
  ScopedEnv isa("SPECSWEEP_KERNEL_ISA", "scalar");
  for (const char* p : {"lead", "window"}) {
    ScopedEnv pf("SPECSWEEP_PREFETCH", p);
    const KernelChoice c = KernelChoiceFromEnvironment(1);
    EXPECT_STREQ(PrefetchPatternName(c.prefetch), p);
    EXPECT_EQ(c.prefetch_source, "forced");
    EXPECT_NE(DescribeChoice(c).find(std::string("prefetch ") + p), std::string::npos) << DescribeChoice(c);
  }
  {
    ScopedEnv pf("SPECSWEEP_PREFETCH", "far");
    testing::ExpectError([] { KernelChoiceFromEnvironment(1); }, {"SPECSWEEP_PREFETCH", "far"});
  }
  ScopedEnv pf("SPECSWEEP_PREFETCH", nullptr);
  ScopedEnv cal("SPECSWEEP_KERNEL_CALIBRATION", "on");
  const KernelChoice c = KernelChoiceFromEnvironment(1);
  if (CandidateFamilies().empty()) {
    EXPECT_EQ(c.prefetch_source, "default");
  } else {
    EXPECT_EQ(c.prefetch, PrefetchRule(CpuIdentity()));
    EXPECT_EQ(c.prefetch_source, "rule for this CPU's vendor");
  }
}

// Measures once into the cache, then reads it back; a cache of another CPU or build, or
// a corrupt one, is measured again.
TEST(KernelChoice, CalibratesOnceAndCaches) {
  if (CandidateFamilies().size() < 2) GTEST_SKIP() << "fewer than two SIMD families: nothing to choose";
  const std::string dir = testing::TempDir();
  ScopedEnv isa("SPECSWEEP_KERNEL_ISA", nullptr);
  ScopedEnv xdg("XDG_CACHE_HOME", dir.c_str());
  ScopedEnv cal("SPECSWEEP_KERNEL_CALIBRATION", "on");
  const std::filesystem::path path = KernelCachePath();
  ASSERT_EQ(path.parent_path(), std::filesystem::path(dir) / "specsweep");
  const KernelChoice first = KernelChoiceFromEnvironment(1);
  EXPECT_EQ(first.source, "calibrated now, cached in " + path.string());
  const json cached = json::parse(testing::ReadFile(path.string()));
  EXPECT_EQ(cached.at("cpu"), CpuIdentity());
  EXPECT_EQ(cached.at("build"), BuildIdentity());
  for (QType t : CalibratedTypes())
    for (const KernelFamily* k : CandidateFamilies())
      EXPECT_GT(cached.at("timings").at(std::string(QTypeName(t))).at(k->name).get<double>(), 0.0);
  const KernelChoice again = KernelChoiceFromEnvironment(1);
  EXPECT_EQ(again.source, "cached in " + path.string());
  EXPECT_EQ(again.per_type, first.per_type) << "the cached timings give the same choice";

  json other = cached;
  other["build"] = "another build";
  testing::WriteFile(path.string(), other.dump());
  EXPECT_EQ(KernelChoiceFromEnvironment(1).source, "calibrated now, cached in " + path.string());
  testing::WriteFile(path.string(), "{ not json");
  EXPECT_EQ(KernelChoiceFromEnvironment(1).source, "calibrated now, cached in " + path.string());
  {
    ScopedEnv off("SPECSWEEP_KERNEL_CALIBRATION", "off");
    const KernelChoice c = KernelChoiceFromEnvironment(1);
    EXPECT_EQ(c.source, "default");
    for (const KernelFamily* k : c.per_type) EXPECT_EQ(k, CandidateFamilies()[0]);
    EXPECT_EQ(DescribeChoice(c), DescribeChoice(DefaultKernels())) << "off is the default choice";
  }
}

}  // namespace
}  // namespace specsweep
