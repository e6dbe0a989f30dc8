// The engine's full logits against the independent Eigen reference (tests/reference/):
// synthetic models of each architecture and RoPE scaling, the shared models, and K-quant
// GGUF files (the engine on their weights dequantized to F32), under every kernel family.
//
// Agreement, per position t of a prefill + single steps + verification batch:
//   relative error e_t = max_v |engine[t][v] - ref[t][v]| / max_v |ref[t][v]|
//   (the error relative to the row's largest logit); required: max_t e_t <= 1e-4.
//   The engine's argmax must be the reference's unless the reference's two best logits
//   are within 2 * 1e-4 * max_v |ref[t][v]| of each other (a near-tie: an error inside
//   the bound on both of them could swap them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/forward.h"
#include "models/gguf.h"
#include "models/hf_format.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "models/tokenizer.h"
#include "quant/kernels.h"
#include "quant/matmul.h"
#include "tests/reference/reference_model.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

namespace ref = reference;
constexpr double kMaxRelError = 1e-4;

std::vector<int> Tokens(int vocab) {
  std::vector<int> t(24);
  for (int i = 0; i < 24; ++i) t[i] = (i * 37 + 5) % vocab;
  return t;
}

// Engine logits [24][vocab] the way decoders call it: a 16-token prefill, three single
// steps (KV cache reads), and a verification batch of 5.
std::vector<float> EngineLogits(const Runtime& rt, const Model& m, const std::vector<int>& toks) {
  KVCache cache(m.config);
  std::vector<float> all;
  auto run = [&](int pos, int n) {
    auto l = Forward(rt, m, std::span(toks).subspan(pos, n), pos, cache);
    all.insert(all.end(), l.begin(), l.end());
  };
  run(0, 16);
  for (int p = 16; p < 19; ++p) run(p, 1);
  run(19, 5);
  return all;
}

struct Agreement {
  double max_rel_error = 0;
  int argmax_differs = 0;  // outside near-ties
  int near_ties = 0;
};

// ref [n][>= vocab]: only the engine's vocab columns are compared (it drops padding rows).
Agreement Compare(const ref::Mat& r, const std::vector<float>& got, int vocab) {
  Agreement a;
  for (Eigen::Index t = 0; t < r.rows(); ++t) {
    const Eigen::VectorXd rt = r.row(t).head(vocab).transpose();
    const Eigen::VectorXd gt = Eigen::Map<const Eigen::VectorXf>(got.data() + t * vocab, vocab).cast<double>();
    const double scale = rt.cwiseAbs().maxCoeff();
    a.max_rel_error = std::max(a.max_rel_error, (gt - rt).cwiseAbs().maxCoeff() / scale);
    Eigen::Index r1, g1;
    rt.maxCoeff(&r1);
    gt.maxCoeff(&g1);
    Eigen::VectorXd rest = rt;
    rest[r1] = -std::numeric_limits<double>::infinity();
    if (rt[r1] - rest.maxCoeff() <= 2 * kMaxRelError * scale) {
      ++a.near_ties;
    } else if (r1 != g1) {
      ++a.argmax_differs;
    }
  }
  return a;
}

// The engine on `model`'s weights converted to F32 (embedding as stored: only gathered)
// under every kernel family this CPU has, against the reference `r`.
void ExpectMatchesReference(const std::string& what, const Model& model, const ref::RefModel& r) {
  const std::vector<int> toks = Tokens(model.config.vocab_size);
  const ref::Mat want = ref::Logits(r, toks);
  testing::KernelIsaGuard guard;
  for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"}) {
    if (!FindKernelFamily(isa)) {
      std::printf("[reference] %-24s %-8s not on this CPU\n", what.c_str(), isa);
      continue;
    }
    Runtime rt;
    ASSERT_TRUE(testing::ForceIsa(rt, isa));
    const Model m = QuantizeModel(model, QType::F32);  // packed for this family
    const Agreement a = Compare(want, EngineLogits(rt, m, toks), m.config.vocab_size);
    std::printf("[reference] %-24s %-8s max rel error %.2e, near-ties %d\n", what.c_str(), isa, a.max_rel_error,
                a.near_ties);
    EXPECT_LE(a.max_rel_error, kMaxRelError) << what << " under " << isa;
    EXPECT_EQ(a.argmax_differs, 0) << what << " under " << isa;
  }
}

struct Variant {
  std::string name;
  ModelConfig config;
  bool tied = false;
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

// test_arch's variants on a wider base with groups of 4 query heads per kv head, and
// the cases the reference adds: MHA, tied embeddings, a column-chunked FFN.
std::vector<Variant> Variants() {
  ModelConfig base = TinyTestConfig();
  base.dim = 128;  // 8 heads of 16, 2 kv heads
  base.hidden_dim = 200;
  base.n_heads = 8;
  base.n_kv_heads = 2;
  base.vocab_size = 300;
  std::vector<Variant> v;
  for (const testing::ArchVariant& a : testing::ArchVariants(base)) v.push_back({a.name, a.config});
  ModelConfig mha = base;
  mha.n_kv_heads = 8;
  mha.norm_eps = 1e-6f;  // the configured epsilon, not a default, reaches every norm
  v.push_back({"llama_mha", mha});
  v.push_back({"llama_tied", base, true});
  v.push_back({"qwen2_tied", v[3].config, true});
  ModelConfig wide = base;
  wide.hidden_dim = 800;  // w2 wider than one column chunk (Layout::kColChunks)
  v.push_back({"llama_wide_ffn", wide});
  return v;
}

class ReferenceSynthetic : public ::testing::TestWithParam<Variant> {};

TEST_P(ReferenceSynthetic, EngineLogitsMatchTheReference) {
  const Variant& var = GetParam();
  Model m = MakeSyntheticModel(var.config, 11);
  if (var.tied) {
    m.output = m.tok_embeddings;
    m.tied_embeddings = true;
  }
  ExpectMatchesReference(var.name, m, ref::FromEngineModel(m));
}

INSTANTIATE_TEST_SUITE_P(Architectures, ReferenceSynthetic, ::testing::ValuesIn(Variants()),
                         [](const auto& info) { return info.param.name; });

// The reference's rotate_half RoPE needs HF's row order: what it recovers from the
// engine's interleaved rows must be what the project writes to an HF folder.
TEST(ReferenceWeights, UnpermutedRowsAreTheHfFoldersRows) {
  const Variant q3 = Variants()[4];
  ASSERT_EQ(q3.name, "qwen3");
  const Model m = MakeSyntheticModel(q3.config, 4);
  const std::string dir = testing::TempDir() + "/hf";
  WriteHfModel(m, dir, {});
  const ref::RefModel a = ref::FromEngineModel(m), b = ref::FromHfFolder(dir);
  EXPECT_EQ(a.layers[1].q_proj, b.layers[1].q_proj);
  EXPECT_EQ(a.layers[1].k_proj, b.layers[1].k_proj);
  EXPECT_EQ(a.layers[0].q_norm, b.layers[0].q_norm);
  EXPECT_EQ(a.layers[0].k_norm, b.layers[0].k_norm);
  EXPECT_EQ(a.lm_head, b.lm_head);
}

// K-quant weights made by the project's quantizer, through its GGUF writer and reader.
TEST(ReferenceKQuants, SyntheticKQuantGguf) {
  ModelConfig c = TinyTestConfig();
  c.dim = 256;  // a whole K-quant super-block per row
  c.hidden_dim = 512;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 300;
  for (QType t : {QType::Q4_K, QType::Q6_K}) {
    const std::string path = testing::TempDir() + "/" + std::string(QTypeName(t)) + ".gguf";
    WriteGguf(MakeSyntheticModel(c, 5, t), *MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size)), path);
    const LoadedModel g = LoadGguf(path);
    ExpectMatchesReference("synthetic " + std::string(QTypeName(t)), *g.model, ref::FromEngineModel(*g.model));
  }
}

// The llama.cpp-made fixtures (PROVENANCE.md there): weights as llama-quantize wrote them.
TEST(ReferenceKQuants, LlamaCppFixtures) {
  int found = 0;
  for (const char* name : {"synth-Q4_K_M.gguf", "synth-Q5_K_M.gguf", "synth-Q6_K.gguf"}) {
    const std::string path = testing::SharedFile(std::string("fixtures/kquants/") + name);
    if (path.empty()) continue;
    ++found;
    const LoadedModel g = LoadGguf(path);
    ExpectMatchesReference(name, *g.model, ref::FromEngineModel(*g.model));
  }
  if (!found) GTEST_SKIP() << "no ../shared/fixtures/kquants";
}

// The reference against an outside implementation: llama.cpp's greedy continuation of
// the F32 fixture (F32.ref.json), token by token.
TEST(ReferenceKQuants, ReproducesLlamaCppGreedyOnTheF32Fixture) {
  const std::string path = testing::SharedFile("fixtures/kquants/synth-F32.gguf");
  if (path.empty()) GTEST_SKIP() << "no ../shared/fixtures/kquants";
  const nlohmann::json g =
      nlohmann::json::parse(testing::ReadFile(testing::SharedFile("fixtures/kquants/F32.ref.json")))["greedy"];
  const ref::RefModel r = ref::FromEngineModel(*LoadGguf(path).model);
  std::vector<int> toks = g["prompt_ids_with_bos"].get<std::vector<int>>();
  const size_t prompt = toks.size();
  for (int i = 0; i < g["n_predict"].get<int>(); ++i) {
    Eigen::Index next;
    ref::Logits(r, toks).row(Eigen::Index(toks.size()) - 1).maxCoeff(&next);
    toks.push_back(int(next));
  }
  EXPECT_EQ(std::vector<int>(toks.begin() + prompt, toks.end()), g["generated_ids"].get<std::vector<int>>());
}

TEST(ReferenceShared, TinyStories260kLlama2c) {
  const std::string dir = testing::SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "no shared models directory";
  const LoadedModel l = LoadModel("tinystories-260k", dir);
  ExpectMatchesReference("tinystories-260k", *l.model, ref::FromEngineModel(*l.model));
}

TEST(ReferenceShared, TinyStories656kHfReadDirectly) {
  const std::string dir = testing::SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "no shared models directory";
  const LoadedModel l = LoadModel("tinystories-656k", dir);
  const ref::RefModel direct = ref::FromHfFolder(dir + "/tinystories-656k");
  // The loader's q/k permutation, undone independently, gives the file's rows back.
  const ref::RefModel via_engine = ref::FromEngineModel(*l.model);
  EXPECT_EQ(via_engine.layers[0].q_proj, direct.layers[0].q_proj);
  EXPECT_EQ(via_engine.layers[1].k_proj, direct.layers[1].k_proj);
  ExpectMatchesReference("tinystories-656k", *l.model, direct);
}

}  // namespace
}  // namespace specsweep
