// Architectures (llama, qwen2, qwen3; rope scaling llama3/linear) through both file
// formats: the same weights written by the project as an HF folder and as GGUF give
// bit-identical logits; a scalar forward written here in HF's own layout (rotate_half,
// HF tensor names) is the oracle for the new math; every refused feature is one line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <numbers>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "models/forward.h"
#include "models/gguf.h"
#include "models/hf_format.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace specsweep {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

using testing::ExpectError;

const std::vector<int> kTokens = {1, 5, 9, 17, 33, 65, 7, 100, 3, 64, 12, 90};

std::vector<float> Logits(const Model& m, int threads = 1) {
  KVCache cache(m.config);
  auto l = Forward(testing::Threads(threads), m, kTokens, 0, cache);
  return {l.begin(), l.end()};
}

// The variants under test, each a tiny config (dim 64, 4 heads, 2 kv heads: head 16).
using Variant = testing::ArchVariant;
std::vector<Variant> Variants() { return testing::ArchVariants(TinyTestConfig()); }

// ---- A scalar forward over the HF folder as stored (the oracle) ----

// F32 tensors of an HF folder (single file or shards), by name.
std::map<std::string, std::vector<float>> ReadHfTensors(const std::string& dir) {
  std::vector<std::string> files;
  if (fs::exists(dir + "/model.safetensors")) {
    files.push_back(dir + "/model.safetensors");
  } else {
    json idx = json::parse(ReadFile(dir + "/model.safetensors.index.json"));
    std::set<std::string> s;
    for (auto& [k, f] : idx["weight_map"].items()) s.insert(f.get<std::string>());
    for (auto& f : s) files.push_back(dir + "/" + f);
  }
  std::map<std::string, std::vector<float>> out;
  for (auto& f : files) {
    std::string b = ReadFile(f);
    uint64_t n;
    std::memcpy(&n, b.data(), 8);
    json h = json::parse(b.substr(8, n));
    for (auto& [name, t] : h.items()) {
      if (name == "__metadata__") continue;
      EXPECT_EQ(t["dtype"], "F32");
      uint64_t o0 = t["data_offsets"][0], o1 = t["data_offsets"][1];
      std::vector<float> v((o1 - o0) / 4);
      std::memcpy(v.data(), b.data() + 8 + n + o0, o1 - o0);
      out[name] = std::move(v);
    }
  }
  return out;
}

using Vec = std::vector<double>;
Vec MatVec(const std::vector<float>& w, const Vec& x, int rows) {
  const int cols = static_cast<int>(x.size());
  Vec y(rows, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) y[r] += double(w[size_t(r) * cols + c]) * x[c];
  return y;
}
Vec Norm(const Vec& x, const std::vector<float>& g, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double s = 1.0 / std::sqrt(ss / x.size() + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * g[i];
  return y;
}

// HF's inverse frequencies, computed as transformers does (not through our factors).
Vec HfInvFreq(const json& cfg, int hd) {
  const double theta = cfg["rope_theta"];
  Vec inv(hd / 2);
  for (int j = 0; j < hd / 2; ++j) inv[j] = 1.0 / std::pow(theta, 2.0 * j / hd);
  const json& rs = cfg["rope_scaling"];
  if (rs.is_null()) return inv;
  const double factor = rs["factor"];
  if (rs["rope_type"] == "linear") {
    for (double& f : inv) f /= factor;
    return inv;
  }
  const double low = rs["low_freq_factor"], high = rs["high_freq_factor"];
  const double orig = rs["original_max_position_embeddings"];
  for (double& f : inv) {
    const double wavelen = 2 * std::numbers::pi / f;
    if (wavelen > orig / low) {
      f /= factor;
    } else if (wavelen >= orig / high) {
      const double smooth = (orig / wavelen - low) / (high - low);
      f = (1 - smooth) * f / factor + smooth * f;
    }
  }
  return inv;
}

// Logits [tokens][vocab] of the HF folder, position by position, in double precision.
std::vector<double> ReferenceLogits(const std::string& dir, const std::vector<int>& tokens) {
  const json cfg = json::parse(ReadFile(dir + "/config.json"));
  auto T = ReadHfTensors(dir);
  const int D = cfg["hidden_size"], H = cfg["intermediate_size"], NL = cfg["num_hidden_layers"];
  const int NH = cfg["num_attention_heads"], NKV = cfg["num_key_value_heads"], V = cfg["vocab_size"];
  const int HD = cfg.contains("head_dim") ? cfg["head_dim"].get<int>() : D / NH;
  const double eps = cfg["rms_norm_eps"];
  const std::string type = cfg["model_type"];
  const Vec inv = HfInvFreq(cfg, HD);
  const auto& emb = T["model.embed_tokens.weight"];
  const auto& head = T.count("lm_head.weight") ? T["lm_head.weight"] : emb;
  std::vector<std::vector<Vec>> kc(NL), vc(NL);  // [layer][pos][kv_dim]
  std::vector<double> out;
  for (size_t pos = 0; pos < tokens.size(); ++pos) {
    Vec x(emb.begin() + size_t(tokens[pos]) * D, emb.begin() + size_t(tokens[pos] + 1) * D);
    for (int l = 0; l < NL; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      Vec xn = Norm(x, T[p + "input_layernorm.weight"], eps);
      Vec q = MatVec(T[p + "self_attn.q_proj.weight"], xn, NH * HD);
      Vec k = MatVec(T[p + "self_attn.k_proj.weight"], xn, NKV * HD);
      Vec v = MatVec(T[p + "self_attn.v_proj.weight"], xn, NKV * HD);
      if (type == "qwen2") {
        for (int i = 0; i < NH * HD; ++i) q[i] += T[p + "self_attn.q_proj.bias"][i];
        for (int i = 0; i < NKV * HD; ++i) k[i] += T[p + "self_attn.k_proj.bias"][i];
        for (int i = 0; i < NKV * HD; ++i) v[i] += T[p + "self_attn.v_proj.bias"][i];
      }
      auto head_op = [&](Vec& t, int nh, const char* norm) {
        for (int h = 0; h < nh; ++h) {
          Vec e(t.begin() + h * HD, t.begin() + (h + 1) * HD);
          if (type == "qwen3") e = Norm(e, T[p + norm], eps);
          Vec r(HD);
          for (int i = 0; i < HD / 2; ++i) {  // rotate_half
            const double a = pos * inv[i], c = std::cos(a), s = std::sin(a);
            r[i] = e[i] * c - e[i + HD / 2] * s;
            r[i + HD / 2] = e[i + HD / 2] * c + e[i] * s;
          }
          std::copy(r.begin(), r.end(), t.begin() + h * HD);
        }
      };
      head_op(q, NH, "self_attn.q_norm.weight");
      head_op(k, NKV, "self_attn.k_norm.weight");
      kc[l].push_back(k);
      vc[l].push_back(v);
      Vec att(NH * HD, 0.0);
      for (int h = 0; h < NH; ++h) {
        const int g = h / (NH / NKV);
        Vec sc(pos + 1);
        double mx = -1e300, sum = 0;
        for (size_t t = 0; t <= pos; ++t) {
          double d = 0;
          for (int i = 0; i < HD; ++i) d += q[h * HD + i] * kc[l][t][g * HD + i];
          sc[t] = d / std::sqrt(double(HD));
          mx = std::max(mx, sc[t]);
        }
        for (double& s : sc) sum += (s = std::exp(s - mx));
        for (size_t t = 0; t <= pos; ++t)
          for (int i = 0; i < HD; ++i) att[h * HD + i] += sc[t] / sum * vc[l][t][g * HD + i];
      }
      Vec o = MatVec(T[p + "self_attn.o_proj.weight"], att, D);
      for (int i = 0; i < D; ++i) x[i] += o[i];
      xn = Norm(x, T[p + "post_attention_layernorm.weight"], eps);
      Vec gt = MatVec(T[p + "mlp.gate_proj.weight"], xn, H), up = MatVec(T[p + "mlp.up_proj.weight"], xn, H);
      for (int i = 0; i < H; ++i) gt[i] = gt[i] / (1 + std::exp(-gt[i])) * up[i];
      Vec dn = MatVec(T[p + "mlp.down_proj.weight"], gt, D);
      for (int i = 0; i < D; ++i) x[i] += dn[i];
    }
    Vec lg = MatVec(head, Norm(x, T["model.norm.weight"], eps), V);
    out.insert(out.end(), lg.begin(), lg.end());
  }
  return out;
}

class ArchTest : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override { dir_ = TempDir(); }
  std::string dir_;
};

std::unique_ptr<Tokenizer> TinyTokenizer(int vocab) { return MakeScoreBpeTokenizer(SyntheticVocab(vocab)); }

TEST_P(ArchTest, HfAndGgufGiveBitIdenticalLogitsMatchingTheReference) {
  const Variant& var = GetParam();
  Model m = MakeSyntheticModel(var.config, 7);
  const std::vector<float> mem = Logits(m);
  WriteHfModel(m, dir_ + "/hf", {});
  WriteHfModel(m, dir_ + "/hf3", {QType::F32, 3});
  WriteGguf(m, *TinyTokenizer(m.config.vocab_size), dir_ + "/m.gguf");
  Model hf = LoadHfSafetensors(dir_ + "/hf");
  Model sharded = LoadHfSafetensors(dir_ + "/hf3");
  LoadedModel gg = LoadGguf(dir_ + "/m.gguf");
  EXPECT_EQ(hf.config.arch, var.config.arch);
  EXPECT_EQ(gg.model->config.arch, var.config.arch);
  EXPECT_EQ(gg.model->config.rope_scaling, var.config.rope_scaling);
  EXPECT_EQ(hf.config.RopeFrequencies(), var.config.RopeFrequencies());
  EXPECT_EQ(gg.model->config.RopeFrequencies(), var.config.RopeFrequencies());
  EXPECT_EQ(sharded.source.files.size(), 4u);  // config + 3 shards
  const std::vector<float> a = Logits(hf), b = Logits(*gg.model), c = Logits(sharded);
  EXPECT_EQ(a, mem);
  EXPECT_EQ(b, mem);
  EXPECT_EQ(c, mem);
  EXPECT_EQ(Logits(*gg.model, 2), mem);  // independent of the thread count

  const std::vector<double> ref = ReferenceLogits(dir_ + "/hf", kTokens);
  ASSERT_EQ(ref.size(), a.size());
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(ref[i] - a[i]) / (1 + std::abs(ref[i])));
  EXPECT_LT(worst, 2e-4) << var.name;
}

TEST_P(ArchTest, HalfPrecisionFilesGiveBitIdenticalLogits) {
  // Stored type = compute type (F16 in both, BF16 in HF): no conversion on the way in.
  const Variant& var = GetParam();
  Model m = MakeSyntheticModel(var.config, 8);
  ForEachMatrix(m, [](const std::string&, QMatrix& w) { w = Convert(w, QType::F16); });
  WriteHfModel(m, dir_ + "/hf16", {QType::F16, 2});
  WriteGguf(m, *TinyTokenizer(m.config.vocab_size), dir_ + "/m16.gguf");
  Model hf = LoadHfSafetensors(dir_ + "/hf16");
  LoadedModel gg = LoadGguf(dir_ + "/m16.gguf");
  EXPECT_EQ(hf.layers[0].wq.type, QType::F16);
  EXPECT_EQ(gg.model->layers[0].w2.type, QType::F16);
  EXPECT_EQ(Logits(hf), Logits(*gg.model));
  EXPECT_EQ(Logits(hf), Logits(m));
  WriteHfModel(m, dir_ + "/hfbf", {QType::BF16, 1});
  EXPECT_EQ(LoadHfSafetensors(dir_ + "/hfbf").layers[1].w3.type, QType::BF16);
}

INSTANTIATE_TEST_SUITE_P(Architectures, ArchTest, ::testing::ValuesIn(Variants()),
                         [](const auto& info) { return info.param.name; });

TEST(ArchFormats, TiedEmbeddingsInBothFormats) {
  const std::string dir = TempDir();
  ModelConfig c = Variants()[3].config;  // qwen2, as Qwen2.5-0.5B: tied
  Model m = MakeSyntheticModel(c, 3);
  m.output = m.tok_embeddings;
  m.tied_embeddings = true;
  WriteHfModel(m, dir + "/hf", {});
  WriteGguf(m, *TinyTokenizer(c.vocab_size), dir + "/m.gguf");
  EXPECT_FALSE(ReadFile(dir + "/hf/model.safetensors").find("lm_head") != std::string::npos);
  Model hf = LoadHfSafetensors(dir + "/hf");
  LoadedModel gg = LoadGguf(dir + "/m.gguf");
  EXPECT_TRUE(hf.tied_embeddings);
  EXPECT_TRUE(gg.model->tied_embeddings);
  EXPECT_EQ(Logits(hf), Logits(m));
  EXPECT_EQ(Logits(*gg.model), Logits(m));
}

TEST(ArchFormats, Llama3FactorsFollowTheThreeBands) {
  // head 16, theta 1e4, original 512, low 1, high 4: wavelengths 6, 21, 63 keep their
  // frequency (< 128), 209 is blended, >= 628 (> 512) are divided by the factor.
  auto f = Llama3RopeFactors(10000.0f, 16, 8, 1, 4, 512);
  ASSERT_EQ(f.size(), 8u);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(f[j], 1.0f);
  EXPECT_GT(f[3], 1.0f);
  EXPECT_LT(f[3], 8.0f);
  for (int j = 4; j < 8; ++j) EXPECT_EQ(f[j], 8.0f);
}

// ---- Refused features: one line naming the field ----

class ArchErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    model_ = MakeSyntheticModel(TinyTestConfig(), 5);
    WriteHfModel(model_, dir_ + "/hf", {});
    cfg_ = json::parse(ReadFile(dir_ + "/hf/config.json"));
  }
  // The folder with config.json replaced.
  std::string WithConfig(const json& cfg) {
    WriteFile(dir_ + "/hf/config.json", cfg.dump());
    return dir_ + "/hf";
  }
  std::string dir_;
  Model model_;
  json cfg_;
};

TEST_F(ArchErrors, HfConfigFields) {
  json c = cfg_;
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"config.json", "rope_scaling.rope_type", "yarn"});
  c["rope_scaling"] = {{"type", "dynamic"}, {"factor", 4.0}};  // the older key name
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"config.json", "rope_scaling.type", "dynamic"});
  c["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"config.json", "rope_scaling.low_freq_factor"});
  c["rope_scaling"] = {{"rope_type", "linear"}};
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"config.json", "rope_scaling.factor"});
  c = cfg_;
  c["attention_bias"] = true;
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"config.json", "attention_bias"});
  c = cfg_;
  c["mlp_bias"] = true;
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"config.json", "mlp_bias"});
  c = cfg_;
  c["partial_rotary_factor"] = 0.5;
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"config.json", "partial_rotary_factor"});
  c = cfg_;
  c["model_type"] = "gemma";
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"config.json", "model_type", "gemma"});
  c = cfg_;
  c["head_dim"] = 15;
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"config.json", "head_dim", "odd"});
  c = cfg_;
  c["hidden_act"] = "gelu";
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"config.json", "hidden_act"});
  // qwen2 config over llama tensors: its biases are missing.
  c = cfg_;
  c["model_type"] = "qwen2";
  ExpectError([&] { LoadHfSafetensors(WithConfig(c)); }, {"q_proj.bias", "missing"});
}

TEST_F(ArchErrors, UnusedTensorIsRefused) {
  // A qwen2 folder read as llama: the biases have no place.
  ModelConfig q2 = Variants()[3].config;
  WriteHfModel(MakeSyntheticModel(q2, 1), dir_ + "/q2", {});
  json c = json::parse(ReadFile(dir_ + "/q2/config.json"));
  c["model_type"] = "llama";
  c["attention_bias"] = false;
  WriteFile(dir_ + "/q2/config.json", c.dump());
  ExpectError([&] { LoadHfSafetensors(dir_ + "/q2"); }, {"model.safetensors", "_proj.bias", "not used", "llama"});
}

TEST_F(ArchErrors, ShardIndexErrors) {
  WriteHfModel(model_, dir_ + "/sh", {QType::F32, 2});
  const std::string idx = dir_ + "/sh/model.safetensors.index.json";
  json j = json::parse(ReadFile(idx));
  json bad = j;
  bad["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";  // it lives in shard 2
  WriteFile(idx, bad.dump());
  ExpectError([&] { LoadHfSafetensors(dir_ + "/sh"); }, {"model.norm.weight", "places it in"});
  bad = j;
  bad["weight_map"]["model.layers.9.mlp.up_proj.weight"] = "model-00001-of-00002.safetensors";
  WriteFile(idx, bad.dump());
  ExpectError([&] { LoadHfSafetensors(dir_ + "/sh"); }, {"weight_map.model.layers.9.mlp.up_proj.weight", "not found"});
  bad = j;
  bad["weight_map"]["model.norm.weight"] = "../x.safetensors";
  WriteFile(idx, bad.dump());
  ExpectError([&] { LoadHfSafetensors(dir_ + "/sh"); }, {"index.json", "weight_map.model.norm.weight"});
  WriteFile(idx, "{");
  ExpectError([&] { LoadHfSafetensors(dir_ + "/sh"); }, {"index.json", "invalid JSON"});
  WriteFile(idx, j.dump());
  EXPECT_NO_THROW(LoadHfSafetensors(dir_ + "/sh"));
  fs::remove(dir_ + "/sh/model-00002-of-00002.safetensors");
  ExpectError([&] { LoadHfSafetensors(dir_ + "/sh"); }, {"model-00002-of-00002.safetensors", "cannot open"});
}

// Replaces the first `from` after `anchor` in a file by `to` (same length).
void Patch(const std::string& path, const std::string& anchor, const std::string& from, const std::string& to) {
  ASSERT_EQ(from.size(), to.size());
  std::string b = ReadFile(path);
  size_t a = b.find(anchor);
  ASSERT_NE(a, std::string::npos) << anchor;
  size_t p = b.find(from, a + anchor.size());
  ASSERT_NE(p, std::string::npos) << from;
  b.replace(p, from.size(), to);
  WriteFile(path, b);
}

TEST_F(ArchErrors, GgufFields) {
  auto tok = TinyTokenizer(model_.config.vocab_size);
  const std::string p = dir_ + "/m.gguf";
  WriteGguf(model_, *tok, p);
  Patch(p, "general.architecture", "llama", "gemma");
  ExpectError([&] { LoadGguf(p); }, {"m.gguf", "general.architecture", "gemma"});

  ModelConfig lin = Variants()[2].config;
  WriteGguf(MakeSyntheticModel(lin, 1), *tok, p);
  Patch(p, "llama.rope.scaling.type", "linear", "yarn_x");
  ExpectError([&] { LoadGguf(p); }, {"m.gguf", "llama.rope.scaling.type", "not supported"});

  // A block beyond block_count: its tensors are refused by name.
  WriteGguf(model_, *tok, p);
  std::string b = ReadFile(p);
  const std::string key = "llama.block_count";
  size_t at = b.find(key) + key.size() + 4;  // after the u32 value type
  uint32_t one = 1;
  std::memcpy(&b[at], &one, 4);
  WriteFile(p, b);
  ExpectError([&] { LoadGguf(p); }, {"m.gguf", "blk.1.", "not used"});

  // llama3 factors on a qwen2 file.
  ModelConfig q2 = Variants()[3].config;
  WriteGguf(MakeSyntheticModel(q2, 1), *tok, p);
  Patch(p, "GGUF", "blk.0.attn_q.bias", "rope_freqs.weight");
  ExpectError([&] { LoadGguf(p); }, {"m.gguf", "rope_freqs.weight", "qwen2"});
}

TEST_F(ArchErrors, SlidingWindowBeyondTheContextUsed) {
  json c = cfg_;
  c["model_type"] = "mistral";
  c["sliding_window"] = 8;
  Model m = LoadHfSafetensors(WithConfig(c));
  EXPECT_EQ(m.config.sliding_window, 8);
  KVCache cache(m.config);
  std::vector<int> eight(kTokens.begin(), kTokens.begin() + 8);
  EXPECT_NO_THROW(Forward(testing::Serial(), m, eight, 0, cache));  // within the window: exact
  ExpectError([&] { Forward(testing::Serial(), m, std::vector<int>{3}, 8, cache); }, {"sliding_window", "8"});
  c["sliding_window"] = nullptr;  // later Mistral versions: no window
  EXPECT_EQ(LoadHfSafetensors(WithConfig(c)).config.sliding_window, 0);
}

// ---- A pair across formats: target from an HF folder, draft from GGUF ----

TEST(ArchPairs, HfTargetWithGgufDraft) {
  const std::string models = testing::SharedModelsDir();
  if (models.empty() || !fs::exists(models + "/llama2-tokenizer/tokenizer.model"))
    GTEST_SKIP() << "shared Llama-2 tokenizer not present";
  const std::string dir = TempDir(), spm = models + "/llama2-tokenizer/tokenizer.model";
  ModelConfig c = TinyTestConfig();
  c.vocab_size = 32000;
  c.n_layers = 2;
  Model target = MakeSyntheticModel(c, 11);
  WriteHfModel(target, dir + "/target", {QType::F16, 2});
  fs::copy_file(spm, dir + "/target/tokenizer.model");
  c.n_layers = 1;
  c.arch = "qwen2";  // any architecture may draft for any other with the same vocabulary
  c.qkv_bias = true;
  auto tok = LoadSentencePieceTokenizer(spm);
  WriteGguf(MakeSyntheticModel(c, 12), *tok, dir + "/draft.gguf");
  LoadedModel t = LoadModel(dir + "/target"), d = LoadModel(dir + "/draft.gguf");
  EXPECT_EQ(t.tokenizer->vocab_size(), d.tokenizer->vocab_size());

  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"generate", "--model", dir + "/target", "--prompt", "Once upon a time",
                                     "-n",       "12",      "--temp",        "0",        "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = testing::RunCli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out)["tokens"] : json();
  };
  const json ar = run({"--decoder", "ar"});
  const json spec = run({"--decoder", "assisted", "--draft-model", dir + "/draft.gguf", "--k", "3"});
  EXPECT_FALSE(ar.empty());
  EXPECT_EQ(ar, spec);  // greedy speculative output is the target's own
}

}  // namespace
}  // namespace specsweep

namespace specsweep {
namespace {

TEST(ArchShapes, PublishedShapesMatchTheirConfigs) {
  const ModelConfig l32 = SyntheticShape("llama-3.2-1b");
  EXPECT_EQ(l32.n_layers, 16);
  EXPECT_EQ(l32.n_kv_heads, 8);
  EXPECT_EQ(l32.vocab_size, 128256);
  EXPECT_EQ(l32.rope_scaling, "llama3");
  EXPECT_EQ(l32.rope_freq_factors, Llama3RopeFactors(500000.0f, 64, 32, 1, 4, 8192));
  EXPECT_TRUE(SyntheticShapeTied("llama-3.2-1b"));
  EXPECT_FALSE(SyntheticShapeTied("llama-3.1-8b"));
  const ModelConfig q = SyntheticShape("qwen2.5-0.5b");
  EXPECT_EQ(q.arch, "qwen2");
  EXPECT_TRUE(q.qkv_bias);
  EXPECT_EQ(q.head_dim(), 64);
  EXPECT_EQ(SyntheticShape("qwen2.5-7b").vocab_size, 152064);
  EXPECT_EQ(SyntheticShape("llama-2-7b").hidden_dim, 11008);
  EXPECT_EQ(SyntheticShape("tinyllama-1.1b").n_kv_heads, 4);
  ExpectError([] { SyntheticShape("llama-9"); }, {"llama-9", "unknown shape"});
}

TEST(ArchShapes, SynthWritesAnHfFolderThatGenerates) {
  const std::string models = testing::SharedModelsDir();
  if (models.empty() || !fs::exists(models + "/llama2-tokenizer/tokenizer.model"))
    GTEST_SKIP() << "shared Llama-2 tokenizer not present";
  const std::string dir = TempDir() + "/hf";
  auto r = testing::RunCli({"synth", "--shape", "dim=64,layers=2,heads=4,kv_heads=2,ffn=96,vocab=32000,ctx=64",
                            "--format", "hf", "--type", "bf16", "--shards", "2", "--tokenizer",
                            models + "/llama2-tokenizer/tokenizer.model", "-o", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(dir + "/tokenizer.model"));
  r = testing::RunCli({"generate", "--model", dir, "--prompt", "Hello", "-n", "3", "--temp", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = testing::RunCli({"synth", "--shape", "tiny", "--format", "hf", "--type", "q4_0", "-o", dir + "2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--type"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace specsweep
