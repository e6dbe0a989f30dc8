// Checks of a llama.cpp-made GGUF fixture against its ref.json (../shared/fixtures/kquants
// and ../gguf-types; PROVENANCE.md there): every tensor's dequantized sha256, and greedy
// ids teacher-forced on llama.cpp's. Header-only: shared by test_kquants and test_legacy_quants.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/store/sha256.h"
#include "models/forward.h"
#include "models/gguf.h"
#include "models/kv_cache.h"
#include "models/loader.h"
#include "models/model.h"
#include "models/tokenizer.h"
#include "quant/qmatrix.h"
#include "tests/test_util.h"

namespace specsweep::testing_fixture {

// shared/fixtures/<name> (beside the models folder, testing::SharedFile), "" when not available.
inline std::string FixtureDir(const std::string& name) { return testing::SharedFile("fixtures/" + name); }

// A test parameterized by a fixture's ref name (FILE.ref.json in Folder()): loads the ref
// and finds its GGUF, skipping when the folder or the file is not available.
class GgufFixtureTest : public ::testing::TestWithParam<std::string> {
 protected:
  virtual std::string Folder() const = 0;  // below shared/fixtures
  void SetUp() override {
    dir_ = FixtureDir(Folder());
    if (dir_.empty()) GTEST_SKIP() << "shared/fixtures/" << Folder() << " not available";
    ref_ = nlohmann::json::parse(testing::ReadFile(dir_ + "/" + GetParam() + ".ref.json"));
    gguf_ = dir_ + "/" + ref_["file"].get<std::string>();
    if (!std::filesystem::exists(gguf_)) GTEST_SKIP() << gguf_ << " is not shipped";
  }
  std::string dir_, gguf_;
  nlohmann::json ref_;
};

inline void ExpectDequantizesBitIdentically(const std::string& gguf, const nlohmann::json& ref,
                                            const std::string& label) {
  const std::string bytes = testing::ReadFile(gguf);
  const GgufHeader h = ParseGgufHeader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), gguf);
  ASSERT_EQ(h.tensors.size(), ref["tensors"].size());
  for (const auto& rt : ref["tensors"]) {
    const std::string name = rt["name"];
    auto it = std::find_if(h.tensors.begin(), h.tensors.end(), [&](auto& t) { return t.name == name; });
    ASSERT_NE(it, h.tensors.end()) << name;
    EXPECT_EQ(it->type, rt["ggml_type_id"].get<uint32_t>()) << name;
    QType type;
    ASSERT_TRUE(FromGgmlType(it->type, &type)) << name << " ggml type " << it->type;
    const int cols = int(it->ne[0]), rows = it->ne.size() > 1 ? int(it->ne[1]) : 1;
    QMatrix m = MakeQMatrix(type, rows, cols);
    ASSERT_EQ(m.bytes(), it->bytes) << name;
    std::memcpy(m.data.data(), bytes.data() + h.data_offset + it->offset, it->bytes);
    const auto f = Dequantize(m);
    const std::string hex =
        Sha256Hex(std::string_view(reinterpret_cast<const char*>(f.data()), f.size() * sizeof(float)));
    EXPECT_EQ(hex, rt["sha256_f32"].get<std::string>()) << label << " " << name << " " << rt["ggml_type"];
  }
}

// The ref's ids come from llama.cpp's own kernels (another accumulation order, and
// activations rounded to its Q8 blocks with f16 scales): with random weights two logits can
// be close enough to swap. So every file is run teacher-forced on llama.cpp's ids: at each
// step llama.cpp's token must be our argmax or within kTieGap of it (logits here span ~1).
// The free-running ids are also compared and must match exactly up to the first such
// near-tie. Prints how many matched.
constexpr float kTieGap = 0.02f;

inline void ExpectGreedyIdsMatch(const std::string& gguf, const nlohmann::json& ref, const std::string& label) {
  const auto& g = ref["greedy"];
  LoadedModel lm = LoadModel(gguf);
  const auto prompt = lm.tokenizer->Encode("Once upon a time", true);
  EXPECT_EQ(prompt, g["prompt_ids_with_bos"].get<std::vector<int>>());
  const auto want = g["generated_ids"].get<std::vector<int>>();
  KVCache cache(lm.model->config);
  std::vector<int> step = prompt;
  int pos = 0, first_tie = -1;
  float max_gap = 0, spread = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    auto logits = Forward(testing::Serial(), *lm.model, step, pos, cache, false);
    pos += int(step.size());
    const int top = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const float gap = logits[top] - logits[want[k]];
    max_gap = std::max(max_gap, gap);
    spread = std::max(spread, logits[top] - *std::min_element(logits.begin(), logits.end()));
    EXPECT_LE(gap, kTieGap) << label << " step " << k << ": ours " << top << ", llama.cpp " << want[k];
    if (top != want[k] && first_tie < 0) first_tie = int(k);
    step = {want[k]};
  }
  KVCache free_cache(lm.model->config);
  std::vector<int> got;
  step = prompt;
  pos = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    auto logits = Forward(testing::Serial(), *lm.model, step, pos, free_cache, false);
    pos += int(step.size());
    got.push_back(int(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    step = {got.back()};
  }
  const size_t exact = first_tie < 0 ? want.size() : size_t(first_tie);
  EXPECT_EQ(std::vector<int>(got.begin(), got.begin() + exact), std::vector<int>(want.begin(), want.begin() + exact));
  std::printf(
      "%s: %zu of %zu greedy ids as llama.cpp before a near-tie (largest gap %.4f, logit spread %.2f); "
      "free-running ids equal: %s\n",
      label.c_str(), exact, want.size(), max_gap, spread, got == want ? "all" : "no");
}

}  // namespace specsweep::testing_fixture
