// Logits that depend on nothing but the model and the tokens: every kernel family gives
// the same bits (one reduction order, quant/float_order.h), and neither the OpenMP wait
// policy nor the thread team changes them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "models/forward.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "quant/kernel_choice.h"
#include "quant/kernels.h"
#include "quant/matmul.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

// Prefill 12 tokens, decode 3 single steps, verify a batch of 5: every logit row.
std::vector<float> RunLogits(const Runtime& rt, const Model& m) {
  std::vector<int> toks(20);
  for (int i = 0; i < 20; ++i) toks[i] = (i * 37 + 5) % m.config.vocab_size;
  KVCache cache(m.config, 0, 0);
  std::vector<float> all;
  auto add = [&](std::span<const float> l) { all.insert(all.end(), l.begin(), l.end()); };
  add(Forward(rt, m, std::span(toks).first(12), 0, cache));
  for (int p = 12; p < 15; ++p) add(Forward(rt, m, std::span(toks).subspan(p, 1), p, cache));
  add(Forward(rt, m, std::span(toks).subspan(15, 5), 15, cache));
  return all;
}

std::vector<std::string> AvailableFamilies() {
  std::vector<std::string> v;
  for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"})
    if (FindKernelFamily(isa)) v.push_back(isa);
  return v;
}

// Q8_0, Q4_0 and Q4_1..IQ4_XS run packed (quant/packed.h) under every family, scalar included.
constexpr QType kModelTypes[] = {QType::F32,  QType::F16,  QType::BF16, QType::Q8_0, QType::Q4_0,   QType::Q4_K,
                                 QType::Q6_K, QType::Q4_1, QType::Q5_0, QType::Q5_1, QType::IQ4_NL, QType::IQ4_XS};

// `load` gives the model, loaded under the active family (loading packs for it).
template <class Load>
void ExpectFamiliesAgree(Load load) {
  testing::KernelIsaGuard guard;
  for (QType t : kModelTypes) {
    SCOPED_TRACE(QTypeName(t));
    // A type that covers no matrix of the model is refused (it would run as F16 throughout).
    if (!testing::ErrorOf([&] { CheckQuantizable(*load(), t); }).empty()) continue;
    Runtime rt;
    ASSERT_TRUE(testing::ForceIsa(rt, "scalar"));
    const std::vector<float> ref = RunLogits(rt, QuantizeModel(*load(), t));
    for (const std::string& isa : AvailableFamilies()) {
      if (isa == "scalar") continue;
      ASSERT_TRUE(testing::ForceIsa(rt, isa.c_str()));
      const std::vector<float> got = RunLogits(rt, QuantizeModel(*load(), t));
      ASSERT_EQ(got.size(), ref.size());
      EXPECT_EQ(0, std::memcmp(got.data(), ref.data(), 4 * ref.size())) << isa << " differs from scalar";
    }
  }
}

TEST(KernelFamilies, SyntheticModelLogitsBitIdentical) {
  ModelConfig c = TinyTestConfig();
  c.hidden_dim = 1024;  // w2 is wider than one column chunk (Layout::kColChunks under avx512), and
                        // whole 256-value blocks: the K-quants cover it
  c.vocab_size = 300;
  ExpectFamiliesAgree([&] { return std::make_shared<const Model>(MakeSyntheticModel(c, 21)); });
}

// A per-format choice (quant/kernel_choice.h) mixes families within one forward pass:
// every format on another family than its neighbours still gives the scalar bits.
TEST(KernelFamilies, MixedChoiceLogitsBitIdentical) {
  testing::KernelIsaGuard guard;
  const std::vector<const KernelFamily*> simd = CandidateFamilies();
  if (simd.size() < 2) GTEST_SKIP() << "fewer than two SIMD families on this CPU";
  ModelConfig c = TinyTestConfig();
  c.hidden_dim = 800;
  c.vocab_size = 300;
  const Model base = MakeSyntheticModel(c, 23);
  for (int shift = 0; shift < 2; ++shift) {
    KernelChoice mixed = UniformChoice(*simd[shift], "test");
    for (int t = 0; t < kQTypeCount; ++t) mixed.per_type[t] = simd[(t + shift) % simd.size()];
    for (QType t : kModelTypes) {
      SCOPED_TRACE(QTypeName(t));
      Runtime rt;
      ASSERT_TRUE(testing::ForceIsa(rt, "scalar"));
      const std::vector<float> ref = RunLogits(rt, QuantizeModel(base, t));
      rt.kernels = mixed;
      SetLoadLayoutKernels(mixed);
      const std::vector<float> got = RunLogits(rt, QuantizeModel(base, t));
      ASSERT_EQ(got.size(), ref.size());
      EXPECT_EQ(0, std::memcmp(got.data(), ref.data(), 4 * ref.size())) << DescribeChoice(mixed);
    }
  }
}

TEST(KernelFamilies, SharedModelsLogitsBitIdentical) {
  const std::string dir = testing::SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "no shared models directory";
  for (const char* name : {"tinystories-656k", "tinystories-260k"}) {
    SCOPED_TRACE(name);
    // 260K's FFN width 172 is not a multiple of 32: block formats store it F16 (StoredQType).
    ExpectFamiliesAgree([&] { return LoadModel(name, dir).model; });
  }
}

// Child-process half of the wait-policy test: writes the logits of a forced team (or of
// the automatic choice) to $SPECSWEEP_LOGITS_OUT. Skipped when run on its own.
TEST(WaitPolicy, DumpLogitsHelper) {
  const char* out = std::getenv("SPECSWEEP_LOGITS_OUT");
  if (!out) GTEST_SKIP() << "helper of LogitsIndependentOfWaitPolicyAndTeam (runs in a child process)";
  const Runtime rt = testing::Threads(ResolveThreads(std::atoi(std::getenv("SPECSWEEP_TEST_THREADS"))),
                                      std::string(std::getenv("SPECSWEEP_TEST_TEAM")) == "full" ? TeamPolicy::kFull
                                                                                                : TeamPolicy::kAuto);
  ModelConfig c = TinyTestConfig();
  c.dim = 256;
  c.hidden_dim = 512;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  std::ofstream f(out, std::ios::binary);
  for (QType t : {QType::F32, QType::Q4_0}) {
    const std::vector<float> l = RunLogits(rt, QuantizeModel(MakeSyntheticModel(c, 9), t));
    f.write(reinterpret_cast<const char*>(l.data()), std::streamsize(4 * l.size()));
  }
  ASSERT_TRUE(f.good());
}

// libgomp reads its wait policy once, at start-up: each setting runs in its own process.
TEST(WaitPolicy, LogitsIndependentOfWaitPolicyAndTeam) {
  char self[PATH_MAX];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(len, 0);
  self[len] = 0;
  const std::string dir = testing::TempDir();
  const char* settings[] = {
      "GOMP_SPINCOUNT=1000 SPECSWEEP_TEST_THREADS=2 SPECSWEEP_TEST_TEAM=full",  // specsweep's default
      "OMP_WAIT_POLICY=passive SPECSWEEP_TEST_THREADS=2 SPECSWEEP_TEST_TEAM=full",
      "OMP_WAIT_POLICY=active SPECSWEEP_TEST_THREADS=3 SPECSWEEP_TEST_TEAM=full",
      "GOMP_SPINCOUNT=0 SPECSWEEP_TEST_THREADS=2 SPECSWEEP_TEST_TEAM=auto",
      "SPECSWEEP_TEST_THREADS=1 SPECSWEEP_TEST_TEAM=full",
  };
  std::string first;
  for (size_t i = 0; i < std::size(settings); ++i) {
    const std::string out = dir + "/logits" + std::to_string(i);
    const std::string cmd = std::string("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT ") + settings[i] +
                            " SPECSWEEP_LOGITS_OUT=" + out + " '" + self +
                            "' --gtest_filter=WaitPolicy.DumpLogitsHelper > /dev/null 2>&1";
    ASSERT_EQ(0, std::system(cmd.c_str())) << settings[i];
    const std::string bytes = testing::ReadFile(out);
    ASSERT_GT(bytes.size(), 1000u) << settings[i];
    if (i == 0)
      first = bytes;
    else
      EXPECT_TRUE(bytes == first) << settings[i] << " changed the logits";
  }
}

}  // namespace
}  // namespace specsweep
