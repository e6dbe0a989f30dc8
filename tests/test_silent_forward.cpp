// #45, no silent outcome (forward, drafts): an overflow inside a layer is an error naming
// the layer and position; quantizing names the model and tensor; a GGUF shape too large
// names the shape; a draft part given twice is refused; a tree's size sets K when none
// is given; lookahead shrinks its window to the tokens left.
#include <algorithm>
#include <cmath>
#include <map>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "decoders/decoder.h"
#include "harness/sweep/experiment.h"
#include "models/forward.h"
#include "models/gguf.h"
#include "models/kv_cache.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "quant/fp16.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::ErrorOf;
using testing::ExpectError;
using testing::RunCli;
using testing::TempDir;
using testing::WriteFile;

// Every element of a float matrix times `f` (any layout: a float matrix's bytes are its
// elements, padding zeros stay zero).
void Scale(QMatrix& m, float f) {
  ASSERT_EQ(m.type, QType::F32);
  float* x = reinterpret_cast<float*>(m.data.data());
  for (size_t i = 0; i < m.data.size() / sizeof(float); ++i) x[i] *= f;
}

// The tiny synthetic model with embedding row `token` times `f`.
Model ScaledEmbeddingRow(int token, float f) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 1);
  float* row = reinterpret_cast<float*>(m.tok_embeddings.Row(token));
  for (int c = 0; c < m.config.dim; ++c) row[c] *= f;
  return m;
}

// ---- 1. overflow inside a layer ---------------------------------------------------

// The case: a finite embedding (|w| up to ~1e20) whose squares overflow float.
// RMSNorm used to turn the row into zeros, so the logits stayed finite and wrong.
TEST(ForwardOverflow, HugeEmbeddingNamesLayerAndPosition) {
  const Model m = ScaledEmbeddingRow(7, 1e21f);
  const std::vector<int> prompt = {1, 5, 7, 9};  // the poisoned token at position 2
  for (const Runtime& rt : {testing::Serial(), testing::Threads(2, TeamPolicy::kFull)}) {
    KVCache cache(m.config);
    ExpectError([&] { Forward(rt, m, prompt, 0, cache); },
                {"forward: layer 0, position 2: attn_norm: the residual stream's sum of squares is inf"});
    // One line, as every Error.
    KVCache again(m.config);
    EXPECT_EQ(ErrorOf([&] { Forward(rt, m, prompt, 0, again); }).find('\n'), std::string::npos);
  }
  // A decoding step: its position is its place in the sequence.
  KVCache cache(m.config);
  Forward(testing::Serial(), m, std::vector<int>{1, 5, 9}, 0, cache);
  ExpectError([&] { Forward(testing::Serial(), m, std::vector<int>{7}, 3, cache); }, {"layer 0, position 3"});
}

// Large but finite all the way: no error, and finite logits.
TEST(ForwardOverflow, LargeButFiniteEmbeddingRuns) {
  const Model m = ScaledEmbeddingRow(7, 1e15f);  // sum of squares ~1e28: fits float
  KVCache cache(m.config);
  std::span<const float> logits;
  ASSERT_EQ(ErrorOf([&] { logits = Forward(testing::Serial(), m, std::vector<int>{1, 5, 7, 9}, 0, cache); }), "");
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
}

// q and k finite but their products overflow: the attention scores are caught there
// (before the residual stream turns NaN in the next norm).
TEST(ForwardOverflow, AttentionScoresNameTheHead) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 1);
  Scale(m.layers[0].wq, 1e20f);  // q, k ~1e20: finite, their products are not
  Scale(m.layers[0].wk, 1e20f);
  KVCache cache(m.config);
  ExpectError(
      [&] {
        Forward(testing::Serial(), m, std::vector<int>{1, 5, 9}, 0, cache);
      },
      {"forward: layer 0, position ", ": attention head ", "a score or its softmax sum is not finite"});
}

// Every block scale of a Q8_0 file at f16's largest value (65504): the activations grow
// ~1e7 per product until a layer's squares overflow.
TEST(ForwardOverflow, LargestBlockScalesNameALayer) {
  const std::string dir = TempDir(), path = dir + "/scales.gguf";
  const ModelConfig c = TinyTestConfig();
  WriteGguf(MakeSyntheticModel(c, 1, QType::Q8_0), *MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size)), path);
  std::string bytes = testing::ReadFile(path);
  const GgufHeader h = ParseGgufHeader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
  const uint16_t max_f16 = F32ToF16(65504.0f);
  int patched = 0;
  for (const GgufTensorInfo& t : h.tensors) {
    if (t.type != uint32_t(GgmlType::Q8_0)) continue;
    for (uint64_t b = 0; b < t.bytes; b += 34)  // block_q8_0: f16 scale, 32 int8
      std::memcpy(bytes.data() + h.data_offset + t.offset + b, &max_f16, 2);
    ++patched;
  }
  ASSERT_GT(patched, 10);
  WriteFile(path, bytes);
  const LoadedModel lm = LoadModel(path);
  KVCache cache(lm.model->config);
  ExpectError(
      [&] {
        Forward(testing::Serial(), *lm.model, std::vector<int>{1, 5, 9}, 0, cache);
      },
      {path + ": forward: layer ", ", position ", "overflowed float"});
}

// A GGUF F32 file (in `dir`) whose token_embd is scaled by 1e21.
std::string HugeEmbeddingGguf(const std::string& dir) {
  const std::string path = dir + "/huge.gguf";
  Model m = MakeSyntheticModel(TinyTestConfig(), 1);
  Scale(m.tok_embeddings, 1e21f);
  WriteGguf(m, *MakeScoreBpeTokenizer(SyntheticVocab(m.config.vocab_size)), path);
  return path;
}

// `generate` fails with one line naming the file, layer and position (it used to emit
// token 0 at acceptance 1.000, exit 0).
TEST(ForwardOverflow, GenerateFailsWithOneLine) {
  const std::string path = HugeEmbeddingGguf(TempDir());
  const testing::CliResult r = RunCli({"generate", "--model", path, "--decoder", "speculative", "--draft", "q8_0",
                                       "--k", "4", "-n", "8", "--prompt", "Once upon a time"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.err.rfind("error: " + path + ": forward: layer 0, position 0: attn_norm", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// `run` stops at the point with one error line (it used to record acceptance 1.000).
TEST(ForwardOverflow, RunFailsWithOneLine) {
  const std::string dir = TempDir(), path = HugeEmbeddingGguf(dir);
  WriteFile(dir + "/prompts.txt", "Once upon a time\n");
  WriteFile(dir + "/o.yaml", "name: o\nmodels: [\"" + path +
                                 "\"]\nprompts: {file: prompts.txt, count: 1}\nrepetitions: 1\n"
                                 "sweep: {k: 4, max_new_tokens: 4}\n"
                                 "decoders: [ar, {decoder: speculative, draft: q8_0}]\n");
  const testing::CliResult r = RunCli({"run", dir + "/o.yaml", "-o", dir + "/out"});
  EXPECT_NE(r.exit_code, 0);
  const size_t at = r.err.find("error: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  EXPECT_NE(line.find(path + ": forward: layer 0, position 0: attn_norm"), std::string::npos) << r.err;
}

// ---- 2. quantize names the model and the tensor ------------------------------------

TEST(QuantizeOverflow, NamesModelTensorRowAndBlock) {
  const std::string dir = TempDir(), in = dir + "/big.gguf";
  Model m = MakeSyntheticModel(TinyTestConfig(), 1);
  // layers.1.wo, row 0 column 40 (block 1): its q8_0 scale would be 1.04e6 > 65504.
  QMatrix wo = MakeQMatrix(QType::F32, m.layers[1].wo.rows, m.layers[1].wo.cols);
  const std::vector<float> w = Dequantize(m.layers[1].wo);
  std::memcpy(wo.data.data(), w.data(), w.size() * sizeof(float));
  reinterpret_cast<float*>(wo.Row(0))[40] = 1.04e6f * 127;
  m.layers[1].wo = std::move(wo);
  m.source.path = "big.gguf";
  ExpectError([&] { QuantizeModel(m, QType::Q8_0); },
              {"big.gguf: tensor 'layers.1.wo': quantize: row 0 block 1: scale", "overflows f16"});
  WriteGguf(m, *MakeScoreBpeTokenizer(SyntheticVocab(m.config.vocab_size)), in);
  const testing::CliResult r = RunCli({"quantize", in, dir + "/out.gguf", "--type", "q8_0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("error: " + in + ": tensor 'layers.1.wo': quantize: row 0 block 1: scale", 0), 0u) << r.err;
}

// ---- 3. a GGUF shape too large names the shape --------------------------------------

class GgufShape : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    testing::WriteTinyGguf(dir_ + "/tiny.gguf", 3);
    good_ = testing::ReadFile(dir_ + "/tiny.gguf");
  }
  // The file with token_embd.weight's shape [ne0, ne1] (it is [64, 128]), loaded: the error message.
  std::string WithShape(uint64_t ne0, uint64_t ne1) {
    const std::string name = "token_embd.weight";
    std::string key(8, '\0');
    const uint64_t len = name.size();
    std::memcpy(key.data(), &len, 8);
    key += name;
    std::string s = good_;
    const size_t p = s.find(key);
    EXPECT_NE(p, std::string::npos);
    std::memcpy(s.data() + p + key.size() + 4, &ne0, 8);  // after u32 n_dims
    std::memcpy(s.data() + p + key.size() + 12, &ne1, 8);
    WriteFile(dir_ + "/bad.gguf", s);
    return ErrorOf([&] { LoadModel(dir_ + "/bad.gguf"); });
  }
  std::string dir_, good_;
};

TEST_F(GgufShape, MessageNamesTheDimensionOrTheShape) {
  // The ne[0] = 2^40: within the 2^48 limit (docs/robustness.md) alone and as a
  // product, but far more bytes than the file: the shape is named, not ne[1] or the offset.
  std::string msg = WithShape(uint64_t{1} << 40, 128);
  EXPECT_NE(msg.find("tensor 'token_embd.weight'.ne: shape [1099511627776, 128] needs 562949953421312 bytes"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("ne[1]"), std::string::npos) << msg;
  // One dimension past 2^48: that dimension.
  msg = WithShape(uint64_t{1} << 49, 128);
  EXPECT_NE(msg.find("tensor 'token_embd.weight'.ne[0]: 562949953421312 is absurd"), std::string::npos) << msg;
  // Each within, their product past 2^48: the whole shape.
  msg = WithShape(uint64_t{1} << 40, uint64_t{1} << 10);
  EXPECT_NE(msg.find("tensor 'token_embd.weight'.ne: shape [1099511627776, 1024] holds more than 2^48 elements"),
            std::string::npos)
      << msg;
}

// ---- 4. a draft part given twice ---------------------------------------------------

TEST(DraftSpecParts, RepeatedPartIsRefusedNamingBoth) {
  ExpectError([] { ParseDraftSpec("q4_0+q8_0", "--draft"); },
              {"--draft: 'q4_0+q8_0': the quant type is given twice ('q4_0' and 'q8_0')"});
  ExpectError([] { ParseDraftSpec("model=a+model=b", "--draft"); }, {"model is given twice ('model=a' and 'model=b')"});
  ExpectError([] { ParseDraftSpec("lookup+max_ngram=3+max_ngram=4", "d"); }, {"max_ngram is given twice"});
  ExpectError([] { ParseDraftSpec("layers=1+layers=1", "d"); }, {"layers is given twice"});
  ExpectError([] { ParseDraftSpec("lookup+lookup", "d"); }, {"lookup is given twice"});
  ExpectError([] { ParseDraftSpec("q4_0+branching=2+branching=3", "d"); }, {"branching is given twice"});
  // Different parts are still fine.
  EXPECT_EQ(ParseDraftSpec("model=a+layers=1+q8_0", "d").Label(), "model=a+layers=1+q8_0");
  const std::string model = TempDir() + "/tiny.gguf";
  testing::WriteTinyGguf(model, 3);
  const testing::CliResult r =
      RunCli({"generate", "--model", model, "--decoder", "speculative", "--draft", "q4_0+q8_0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("given twice"), std::string::npos) << r.err;
}

// ---- 5. a tree's size sets K when K is not given ----------------------------------

TEST(TreeK, DefaultKIsTheTreeSize) {
  EXPECT_EQ(DefaultK(ParseDraftSpec("q4_0", "d")), 4);
  EXPECT_EQ(DefaultK(ParseDraftSpec("lookup", "d")), 4);
  EXPECT_EQ(DefaultK(ParseDraftSpec("q4_0+tree_budget=16", "d")), 16);
  EXPECT_EQ(DefaultK(ParseDraftSpec("lookup+tree_budget=12", "d")), 12);
  EXPECT_EQ(DefaultK(ParseDraftSpec("rest+corpus=x", "d")), 16);
  EXPECT_EQ(DefaultK(ParseDraftSpec("q4_0+branching=4,2,1", "d")), 4 + 8 + 8);
  EXPECT_EQ(DefaultK(ParseDraftSpec("recycling", "d")), 4 + 8 + 16 + 16);
  // Lookahead: the window (W-1) + (N-2)W = 9 and the candidates' G(N-1) = 10 nodes.
  EXPECT_EQ(DefaultK(ParseDraftSpec("lookahead", "d")), 19);
  EXPECT_EQ(DefaultK(ParseDraftSpec("q4_0+branching=64,64,64", "d")), 1024);
}

TEST(TreeK, GivenKBelowTheBudgetIsAnError) {
  const LoadedModel m{"tiny", std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), 1)), nullptr};
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.draft = ParseDraftSpec("q4_0+tree_budget=16", "d");
  o.k = 4;
  ExpectError([&] { MakeDecoder(m, o); }, {"decoder: k: 4 is below tree_budget 16 of draft q4_0+tree_budget=16"});
  o.k = 16;
  EXPECT_EQ(ErrorOf([&] { MakeDecoder(m, o); }), "");
}

// `generate` at a tree's defaults: the budget's nodes every step (it used to cap them at
// K = 4), lookahead alone runs, and a given K below the budget names both.
TEST(TreeK, GenerateAtTheDefaults) {
  const std::string dir = TempDir(), model = dir + "/tiny.gguf";
  testing::WriteTinyGguf(model, 3);
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"generate", "--model",  model,      "--decoder",        "speculative", "-n",
                                     "24",       "--no-eos", "--prompt", "Once upon a time", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCli(args);
  };
  testing::CliResult r = run({"--draft", "q4_0+tree_budget=16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["speculative"]["k"], 16);
  int max_nodes = 0;
  for (int n : j["stats"]["k_per_step"]) max_nodes = std::max(max_nodes, n);
  EXPECT_GT(max_nodes, 4);
  r = run({"--draft", "lookahead"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["speculative"]["k"], 19);
  r = run({"--draft", "q4_0+tree_budget=16", "--k", "4"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("k: 4 is below tree_budget 16"), std::string::npos) << r.err;
  // A chain keeps K = 4.
  r = run({"--draft", "q4_0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["speculative"]["k"], 4);
}

// Experiment files: the same rule (k not given: each draft's size), keys of an explicit k unchanged.
TEST(TreeK, ExperimentPointsTakeTheDraftsK) {
  const std::string dir = TempDir();
  testing::WriteTinyGguf(dir + "/tiny.gguf", 3);
  WriteFile(dir + "/prompts.txt", "Once upon a time\n");
  const std::string head = "name: e\nmodels: [\"" + dir + "/tiny.gguf\"]\nprompts: {file: prompts.txt, count: 1}\n";
  WriteFile(dir + "/e.yaml", head +
                                 "decoders:\n  - decoder: speculative\n    draft: [q4_0, \"q4_0+tree_budget=12\", "
                                 "lookahead, recycling]\n");
  std::map<std::string, int> k;
  for (const Point& p : LoadExperiment(dir + "/e.yaml").points)
    if (p.speculative()) k[p.options.draft.BaseLabel()] = p.options.k;
  EXPECT_EQ(k, (std::map<std::string, int>{{"self", 4},
                                           {"self+tree_budget=12", 12},
                                           {"lookahead+window=5+ngram=3+candidates=5", 19},
                                           {"recycling+branching=4,2,2,1", 44}}));
  WriteFile(dir + "/f.yaml", head + "sweep: {k: [6]}\ndecoders:\n  - decoder: speculative\n    draft: [q4_0]\n");
  const Experiment f = LoadExperiment(dir + "/f.yaml");
  for (const Point& p : f.points) {
    if (p.speculative()) {
      EXPECT_NE(p.Key().find(";k=6;"), std::string::npos) << p.Key();
    }
  }
}

// ---- 6. lookahead near max_new_tokens -----------------------------------------------

// With fewer tokens left than its window needs, lookahead runs a narrower window (and
// so still proposes) instead of verifying nothing; greedy output stays autoregressive.
TEST(LookaheadWindow, ShrinksToTheTokensLeftLosslessly) {
  const LoadedModel m{"tiny", std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), 1)), nullptr};
  const std::vector<std::vector<int>> prompts = {{1, 5, 9}, {1, 7, 7, 7, 3}, {1, 20, 21, 20, 21, 20}};
  for (const char* draft : {"lookahead", "lookahead+window=4+ngram=4+candidates=4", "lookahead+ngram=2"}) {
    for (int n : {2, 5, 8, 12}) {
      DecoderOptions ar;
      ar.max_new_tokens = n;
      ar.stop_at_eos = false;
      DecoderOptions o = ar;
      o.kind = DecoderKind::Speculative;
      o.draft = ParseDraftSpec(draft, "d");
      o.k = DefaultK(o.draft);
      for (const auto& prompt : prompts) {
        const GenerationResult want = MakeDecoder(m, ar)->Generate(prompt);
        const GenerationResult got = MakeDecoder(m, o)->Generate(prompt);
        ASSERT_EQ(got.tokens, want.tokens) << draft << " n=" << n;
        // Nothing is verified only in the last steps, where fewer tokens are left than
        // one window column needs (N - 1): at most max(1, N - 2) steps.
        const auto& kps = got.stats.k_per_step;
        const int ngram = o.draft.get<LookaheadDraft>()->ngram;
        EXPECT_LE(std::count(kps.begin(), kps.end(), 0), std::max(1, ngram - 2)) << draft << " n=" << n;
      }
    }
  }
}

}  // namespace
}  // namespace specsweep
