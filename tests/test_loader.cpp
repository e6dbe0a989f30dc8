// Model file loaders: round trips through llama2.c and HF safetensors layouts, and a
// one-line Error naming the file and field for every kind of bad input.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
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

using testing::TempDir;
using testing::WriteFile;

void Append(std::string& out, const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }
void AppendMatrix(std::string& out, const QMatrix& m) {
  auto f = Dequantize(m);
  Append(out, f.data(), f.size() * sizeof(float));
}

// Serializes a model in llama2.c's legacy layout (separate classifier: negative vocab).
std::string Llama2cBytes(const Model& m) {
  const ModelConfig& c = m.config;
  int32_t h[7] = {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, -c.vocab_size, c.max_seq_len};
  std::string out;
  Append(out, h, sizeof h);
  AppendMatrix(out, m.tok_embeddings);
  for (auto& l : m.layers) Append(out, l.attn_norm.data(), l.attn_norm.size() * 4);
  for (auto& l : m.layers) AppendMatrix(out, l.wq);
  for (auto& l : m.layers) AppendMatrix(out, l.wk);
  for (auto& l : m.layers) AppendMatrix(out, l.wv);
  for (auto& l : m.layers) AppendMatrix(out, l.wo);
  for (auto& l : m.layers) Append(out, l.ffn_norm.data(), l.ffn_norm.size() * 4);
  for (auto& l : m.layers) AppendMatrix(out, l.w1);
  for (auto& l : m.layers) AppendMatrix(out, l.w2);
  for (auto& l : m.layers) AppendMatrix(out, l.w3);
  Append(out, m.final_norm.data(), m.final_norm.size() * 4);
  out.append(size_t(c.max_seq_len) * c.head_dim() * 4, '\0');  // freq_cis_real + imag
  AppendMatrix(out, m.output);
  return out;
}

// Serializes a model as an HF directory: q/k rows converted back to rotate_half layout.
struct StEntry {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};
std::string SafetensorsBytes(const std::vector<StEntry>& entries, const json& extra_header = json::object()) {
  json h = extra_header;
  std::string data;
  for (auto& e : entries) {
    h[e.name] = {{"dtype", "F32"},
                 {"shape", e.shape},
                 {"data_offsets", {data.size(), data.size() + e.data.size() * 4}}};
    Append(data, e.data.data(), e.data.size() * 4);
  }
  std::string hs = h.dump();
  uint64_t n = hs.size();
  std::string out;
  Append(out, &n, 8);
  return out + hs + data;
}

std::vector<StEntry> HfEntries(const Model& m) {
  const ModelConfig& c = m.config;
  const int hd = c.head_dim();
  auto mat = [](const QMatrix& q) { return StEntry{"", {q.rows, q.cols}, Dequantize(q)}; };
  auto unpermute = [&](const QMatrix& q) {  // interleaved -> rotate_half
    StEntry e = mat(q);
    std::vector<float> out(e.data.size());
    for (int r = 0; r < q.rows; ++r) {
      const int h = r / hd, i = r % hd, hf_row = h * hd + (i % 2) * (hd / 2) + i / 2;
      std::memcpy(&out[size_t(hf_row) * q.cols], &e.data[size_t(r) * q.cols], q.cols * 4);
    }
    e.data = out;
    return e;
  };
  std::vector<StEntry> v;
  auto add = [&](std::string name, StEntry e) {
    e.name = std::move(name);
    v.push_back(std::move(e));
  };
  add("model.embed_tokens.weight", mat(m.tok_embeddings));
  add("lm_head.weight", mat(m.output));
  add("model.norm.weight", {"", {c.dim}, m.final_norm});
  for (int l = 0; l < c.n_layers; ++l) {
    const auto& L = m.layers[l];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {"", {c.dim}, L.attn_norm});
    add(p + "post_attention_layernorm.weight", {"", {c.dim}, L.ffn_norm});
    add(p + "self_attn.q_proj.weight", unpermute(L.wq));
    add(p + "self_attn.k_proj.weight", unpermute(L.wk));
    add(p + "self_attn.v_proj.weight", mat(L.wv));
    add(p + "self_attn.o_proj.weight", mat(L.wo));
    add(p + "mlp.gate_proj.weight", mat(L.w1));
    add(p + "mlp.down_proj.weight", mat(L.w2));
    add(p + "mlp.up_proj.weight", mat(L.w3));
  }
  return v;
}

json HfConfig(const ModelConfig& c) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", c.dim},
          {"intermediate_size", c.hidden_dim},
          {"num_hidden_layers", c.n_layers},
          {"num_attention_heads", c.n_heads},
          {"num_key_value_heads", c.n_kv_heads},
          {"vocab_size", c.vocab_size},
          {"max_position_embeddings", c.max_seq_len},
          {"rms_norm_eps", c.norm_eps},
          {"rope_theta", c.rope_theta},
          {"bos_token_id", 1},
          {"eos_token_id", 2},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", false}};
}

std::vector<float> Logits(const Model& m) {
  KVCache cache(m.config);
  std::vector<int> toks = {1, 5, 9, 17, 33, 65, 7};
  auto l = Forward(testing::Serial(), m, toks, 0, cache);
  return {l.begin(), l.end()};
}

using testing::ExpectError;

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    model_ = MakeSyntheticModel(TinyTestConfig(), 21);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string WriteHf(const std::string& st_bytes, const json& cfg) {
    std::string d = dir_ + "/hf";
    fs::create_directories(d);
    WriteFile(d + "/config.json", cfg.dump());
    WriteFile(d + "/model.safetensors", st_bytes);
    return d;
  }
  std::string dir_;
  Model model_;
};

TEST_F(LoaderTest, Llama2cRoundTripGivesIdenticalLogits) {
  WriteFile(dir_ + "/m.bin", Llama2cBytes(model_));
  Model loaded = LoadLlama2cCheckpoint(dir_ + "/m.bin");
  EXPECT_EQ(loaded.config.dim, model_.config.dim);
  EXPECT_FALSE(loaded.tied_embeddings);
  EXPECT_EQ(Logits(loaded), Logits(model_));
}

TEST_F(LoaderTest, HfRoundTripPermutesRotaryLayout) {
  std::string d = WriteHf(SafetensorsBytes(HfEntries(model_)), HfConfig(model_.config));
  Model loaded = LoadHfSafetensors(d);
  EXPECT_EQ(Logits(loaded), Logits(model_));
}

TEST_F(LoaderTest, HfTiedEmbeddingsThroughMetadataAlias) {
  auto entries = HfEntries(model_);
  std::erase_if(entries, [](auto& e) { return e.name == "model.embed_tokens.weight"; });
  json meta = {{"__metadata__", {{"format", "pt"}, {"model.embed_tokens.weight", "lm_head.weight"}}}};
  Model loaded = LoadHfSafetensors(WriteHf(SafetensorsBytes(entries, meta), HfConfig(model_.config)));
  EXPECT_TRUE(loaded.tied_embeddings);
  EXPECT_EQ(Dequantize(loaded.tok_embeddings), Dequantize(model_.output));
}

TEST_F(LoaderTest, TruncatedLlama2cCheckpoint) {
  std::string bytes = Llama2cBytes(model_);
  WriteFile(dir_ + "/t.bin", bytes.substr(0, bytes.size() - 100));
  ExpectError([&] { LoadLlama2cCheckpoint(dir_ + "/t.bin"); }, {dir_ + "/t.bin", "size", "truncated"});
  WriteFile(dir_ + "/h.bin", bytes.substr(0, 10));
  ExpectError([&] { LoadLlama2cCheckpoint(dir_ + "/h.bin"); }, {"h.bin", "header"});
}

TEST_F(LoaderTest, CorruptLlama2cHeader) {
  std::string bytes = Llama2cBytes(model_);
  int32_t bad = -64;
  std::memcpy(bytes.data(), &bad, 4);
  WriteFile(dir_ + "/c.bin", bytes);
  ExpectError([&] { LoadLlama2cCheckpoint(dir_ + "/c.bin"); }, {"c.bin", "dim"});
  int32_t heads = 5;  // 64 % 5 != 0
  bytes = Llama2cBytes(model_);
  std::memcpy(bytes.data() + 12, &heads, 4);
  WriteFile(dir_ + "/d.bin", bytes);
  ExpectError([&] { LoadLlama2cCheckpoint(dir_ + "/d.bin"); }, {"d.bin", "n_heads"});
}

TEST_F(LoaderTest, SafetensorsHeaderLargerThanFile) {
  std::string bytes = SafetensorsBytes(HfEntries(model_));
  uint64_t huge = bytes.size() * 2;
  std::memcpy(bytes.data(), &huge, 8);
  std::string d = WriteHf(bytes, HfConfig(model_.config));
  ExpectError([&] { LoadHfSafetensors(d); }, {"model.safetensors", "header", "larger than the file"});
}

TEST_F(LoaderTest, SafetensorsOffsetsOutOfRangeOrOverlapping) {
  auto entries = HfEntries(model_);
  std::string bytes = SafetensorsBytes(entries);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  json h = json::parse(bytes.substr(8, n));
  std::string data = bytes.substr(8 + n);
  auto rebuild = [&](const json& hh) {
    std::string hs = hh.dump();
    uint64_t len = hs.size();
    std::string out(reinterpret_cast<const char*>(&len), 8);
    return out + hs + data;
  };
  json out_of_range = h;
  out_of_range["model.norm.weight"]["data_offsets"] = {data.size() - 4, data.size() + 252};
  std::string d = WriteHf(rebuild(out_of_range), HfConfig(model_.config));
  ExpectError([&] { LoadHfSafetensors(d); },
              {"model.safetensors", "model.norm.weight", "data_offsets", "out of range"});
  json overlap = h;
  auto first = h["lm_head.weight"]["data_offsets"];
  overlap["model.norm.weight"]["data_offsets"] = {first[0], first[0].get<uint64_t>() + 256};
  d = WriteHf(rebuild(overlap), HfConfig(model_.config));
  ExpectError([&] { LoadHfSafetensors(d); }, {"model.safetensors", "overlap"});
}

TEST_F(LoaderTest, WrongTensorShapeUnsupportedDtypeAndArchitecture) {
  auto entries = HfEntries(model_);
  for (auto& e : entries)
    if (e.name == "model.layers.1.mlp.up_proj.weight") e.shape = {e.shape[1], e.shape[0]};
  std::string d = WriteHf(SafetensorsBytes(entries), HfConfig(model_.config));
  ExpectError([&] { LoadHfSafetensors(d); }, {"model.safetensors", "model.layers.1.mlp.up_proj.weight", "shape"});

  std::string bytes = SafetensorsBytes(HfEntries(model_));
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  std::string header = bytes.substr(8, n);
  auto pos = header.find("\"F32\"");
  header.replace(pos, 5, "\"I32\"");
  d = WriteHf(bytes.substr(0, 8) + header + bytes.substr(8 + n), HfConfig(model_.config));
  ExpectError([&] { LoadHfSafetensors(d); }, {"model.safetensors", "dtype I32", "not supported"});

  json cfg = HfConfig(model_.config);
  cfg["model_type"] = "gpt2";
  cfg["architectures"] = {"GPT2LMHeadModel"};
  d = WriteHf(SafetensorsBytes(HfEntries(model_)), cfg);
  ExpectError([&] { LoadHfSafetensors(d); }, {"config.json", "model_type", "gpt2"});

  cfg = HfConfig(model_.config);
  cfg.erase("hidden_size");
  d = WriteHf(SafetensorsBytes(HfEntries(model_)), cfg);
  ExpectError([&] { LoadHfSafetensors(d); }, {"config.json", "hidden_size", "missing"});

  entries = HfEntries(model_);
  std::erase_if(entries, [](auto& e) { return e.name == "model.layers.0.self_attn.v_proj.weight"; });
  d = WriteHf(SafetensorsBytes(entries), HfConfig(model_.config));
  ExpectError([&] { LoadHfSafetensors(d); }, {"model.safetensors", "v_proj", "missing"});
}

TEST_F(LoaderTest, MissingTokenizerAndUnknownModel) {
  std::string d = WriteHf(SafetensorsBytes(HfEntries(model_)), HfConfig(model_.config));
  ExpectError([&] { LoadModel(d); }, {d, "tokenizer"});
  fs::create_directories(dir_ + "/l2c");
  WriteFile(dir_ + "/l2c/model.bin", Llama2cBytes(model_));
  ExpectError([&] { LoadModel(dir_ + "/l2c"); }, {"l2c", "tokenizer"});
  ExpectError([&] { LoadModel("no-such-model", dir_); }, {"no-such-model", "not found"});
}

TEST_F(LoaderTest, CliReportsOneLineErrorAndNonZeroExit) {
  std::string bytes = Llama2cBytes(model_);
  WriteFile(dir_ + "/t.bin", bytes.substr(0, bytes.size() / 2));
  auto r = testing::RunCli({"inspect", dir_ + "/t.bin"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("t.bin"), std::string::npos) << r.err;
  r = testing::RunCli({"inspect", "no-such-model"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
}

TEST(RealLoader, SharedModelsLoadWithExpectedShapes) {
  const std::string dir = testing::SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "shared models not present";
  auto a = LoadModel("tinystories-260k", dir);
  EXPECT_EQ(a.model->config.dim, 64);
  EXPECT_EQ(a.model->config.hidden_dim, 172);
  EXPECT_EQ(a.model->config.n_layers, 5);
  EXPECT_EQ(a.model->config.n_kv_heads, 4);
  EXPECT_TRUE(a.model->tied_embeddings);
  auto b = LoadModel("tinystories-656k", dir);
  EXPECT_EQ(b.model->config.dim, 128);
  EXPECT_EQ(b.model->config.vocab_size, 2048);
  EXPECT_FLOAT_EQ(b.model->config.norm_eps, 1e-6f);
  EXPECT_TRUE(b.model->tied_embeddings);
  EXPECT_EQ(b.tokenizer->vocab_size(), 2048);
}

// HF checkpoints pad the embedding past the tokenizer (Qwen2.5): the padding rows are
// dropped, every real token's logit is unchanged, and a draft with the unpadded
// vocabulary pairs with the padded target. A tokenizer with more ids than rows is refused.
TEST(VocabPadding, HfRowsPastTheTokenizerAreDropped) {
  const std::string spm = testing::SharedFile("models/llama2-tokenizer/tokenizer.model");
  if (spm.empty()) GTEST_SKIP() << "shared Llama-2 tokenizer not present";
  const std::string dir = TempDir();
  ModelConfig c = TinyTestConfig();
  c.vocab_size = 32000 + 128;
  for (bool tied : {false, true}) {
    const std::string d = dir + (tied ? "/tied" : "/untied");
    Model m = MakeSyntheticModel(c, tied ? 5 : 6);
    if (tied) m.output = m.tok_embeddings, m.tied_embeddings = true;
    WriteHfModel(m, d, {QType::F16, 1});
    fs::copy_file(spm, d + "/tokenizer.model");
    const Model padded = LoadHfSafetensors(d);
    const LoadedModel lm = LoadModel(d);
    ASSERT_EQ(lm.model->config.vocab_size, 32000);
    EXPECT_EQ(lm.model->source.vocab_rows, 32000 + 128);
    EXPECT_EQ(lm.model->tied_embeddings, tied);
    const std::vector<int> toks = {1, 415, 31999, 29871};
    KVCache a(padded.config), b(lm.model->config);
    auto full = Forward(testing::Serial(), padded, toks, 0, a);
    auto cut = Forward(testing::Serial(), *lm.model, toks, 0, b);
    ASSERT_EQ(cut.size(), toks.size() * 32000);
    for (size_t i = 0; i < toks.size(); ++i)
      for (int v = 0; v < 32000; ++v) ASSERT_EQ(cut[i * 32000 + v], full[i * (32000 + 128) + v]) << i << " " << v;
  }
  // A draft written with the tokenizer's own size pairs with the padded target.
  c.vocab_size = 32000;
  auto tok = LoadSentencePieceTokenizer(spm);
  WriteGguf(MakeSyntheticModel(c, 7), *tok, dir + "/draft.gguf");
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"generate", "--model", dir + "/untied", "--prompt", "Once upon a time",
                                     "-n",       "10",      "--temp",        "0",        "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = testing::RunCli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out)["tokens"] : json();
  };
  const auto ar = gen({"--decoder", "ar"});
  EXPECT_FALSE(ar.empty());
  EXPECT_EQ(ar, gen({"--decoder", "assisted", "--draft-model", dir + "/draft.gguf", "--k", "3"}));
  // More tokenizer ids than embedding rows: refused, naming both sizes.
  c.vocab_size = 31000;
  WriteHfModel(MakeSyntheticModel(c, 8), dir + "/short", {QType::F32, 1});
  fs::copy_file(spm, dir + "/short/tokenizer.model");
  testing::ExpectError([&] { LoadModel(dir + "/short"); }, {"tokenizer", "32000", "31000"});
}

// A Qwen-style shape (embedding padded past the tokenizer) through synth in both
// formats: the GGUF vocabulary gets "[PAD<id>]" pieces as llama.cpp writes them, both
// loaders drop the padding, so both formats give the same tokens, and neither prepends a
// BOS the tokenizer does not ask for (Qwen: add_bos_token false).
TEST(VocabPadding, SynthQwenVocabularyInBothFormats) {
  const std::string tok = testing::SharedFile("fixtures/tokenizers/qwen3/tokenizer.json");
  if (tok.empty()) GTEST_SKIP() << "shared Qwen3 tokenizer not present";
  const std::string dir = testing::TempDir();
  const std::string shape = "dim=32,layers=1,heads=2,kv_heads=1,ffn=64,vocab=151936,ctx=32";
  for (const std::string fmt : {"gguf", "hf"}) {
    auto r = testing::RunCli({"synth", "--shape", shape, "--tokenizer", tok, "--format", fmt, "--type", "f16", "--seed",
                              "3", "-o", dir + "/q." + fmt});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const LoadedModel g = LoadModel(dir + "/q.gguf"), h = LoadModel(dir + "/q.hf");
  EXPECT_EQ(g.model->config.vocab_size, 151669);
  EXPECT_EQ(g.model->config.vocab_size, h.model->config.vocab_size);
  EXPECT_EQ(g.model->source.vocab_rows, 151936);
  EXPECT_TRUE(SameVocabulary(*g.tokenizer, *h.tokenizer));
  auto gen = [&](const std::string& model) {
    auto r =
        testing::RunCli({"generate", "--model", model, "--prompt", "Hello world", "-n", "6", "--temp", "0", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json();
  };
  const auto jg = gen(dir + "/q.gguf"), jh = gen(dir + "/q.hf");
  EXPECT_EQ(jg["prompt_ids"], json({9707, 1879}));  // no BOS
  EXPECT_EQ(jg["tokens"], jh["tokens"]);
}

}  // namespace
}  // namespace specsweep
