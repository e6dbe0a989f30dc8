// GGUF writer/reader round trips, header validation on corrupted files, synthetic
// shapes, and (with the shared models) stories260K through GGUF.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "models/forward.h"
#include "models/gguf.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "quant/packed.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::ReadFile;
using testing::RunCli;
using testing::SharedModelsDir;
using testing::TempDir;
using testing::WriteFile;

using testing::ErrorOf;

void ExpectSameMatrix(const QMatrix& a, const QMatrix& b, const std::string& name) {
  SCOPED_TRACE(name);
  ASSERT_EQ(a.type, b.type);
  ASSERT_EQ(a.rows, b.rows);
  ASSERT_EQ(a.cols, b.cols);
  ASSERT_EQ(a.cols_padded, b.cols_padded);
  ASSERT_EQ(a.row_bytes, b.row_bytes);
  // As ggml rows: a loaded matrix may be in a kernel layout (and a tied embedding in the
  // classifier's).
  const QMatrix ra = packed::Unpack(a), rb = packed::Unpack(b);
  EXPECT_EQ(0, std::memcmp(ra.data.data(), rb.data.data(), ra.bytes()));
}

void ExpectSameModel(const Model& a, const Model& b) {
  const ModelConfig &x = a.config, &y = b.config;
  EXPECT_EQ(x.arch, y.arch);
  EXPECT_EQ(x.dim, y.dim);
  EXPECT_EQ(x.hidden_dim, y.hidden_dim);
  EXPECT_EQ(x.n_layers, y.n_layers);
  EXPECT_EQ(x.n_heads, y.n_heads);
  EXPECT_EQ(x.n_kv_heads, y.n_kv_heads);
  EXPECT_EQ(x.vocab_size, y.vocab_size);
  EXPECT_EQ(x.max_seq_len, y.max_seq_len);
  EXPECT_EQ(x.rope_theta, y.rope_theta);
  EXPECT_EQ(x.norm_eps, y.norm_eps);
  EXPECT_EQ(x.bos_id, y.bos_id);
  EXPECT_EQ(x.eos_id, y.eos_id);
  ExpectSameMatrix(a.tok_embeddings, b.tok_embeddings, "token_embd");
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const LayerWeights &p = a.layers[l], &q = b.layers[l];
    const std::string n = "blk." + std::to_string(l);
    EXPECT_EQ(p.attn_norm, q.attn_norm) << n;
    EXPECT_EQ(p.ffn_norm, q.ffn_norm) << n;
    ExpectSameMatrix(p.wq, q.wq, n + ".wq");
    ExpectSameMatrix(p.wk, q.wk, n + ".wk");
    ExpectSameMatrix(p.wv, q.wv, n + ".wv");
    ExpectSameMatrix(p.wo, q.wo, n + ".wo");
    ExpectSameMatrix(p.w1, q.w1, n + ".w1");
    ExpectSameMatrix(p.w2, q.w2, n + ".w2");
    ExpectSameMatrix(p.w3, q.w3, n + ".w3");
  }
  EXPECT_EQ(a.final_norm, b.final_norm);
  ExpectSameMatrix(a.output, b.output, "output");
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
}

void ExpectSameVocab(const Tokenizer& a, const Tokenizer& b) {
  Vocab x = a.ExportVocab(), y = b.ExportVocab();
  EXPECT_EQ(x.pieces, y.pieces);
  EXPECT_EQ(x.scores, y.scores);
  EXPECT_EQ(x.types, y.types);
  EXPECT_EQ(x.bos_id, y.bos_id);
  EXPECT_EQ(x.eos_id, y.eos_id);
  EXPECT_EQ(x.unk_id, y.unk_id);
  for (const char* text : {"Once upon a time, there was a cat.", "hello world", "  two  spaces", "a"})
    EXPECT_EQ(a.Encode(text, true), b.Encode(text, true)) << text;
}

// Logits of all positions for a short token sequence.
std::vector<float> Logits(const Model& m, const std::vector<int>& tokens) {
  KVCache cache(m.config);
  auto out = Forward(testing::Serial(), m, tokens, 0, cache, true);
  return std::vector<float>(out.begin(), out.end());
}

std::string Tiny(QType type, const std::string& dir, uint64_t seed = 7) {
  Model m = MakeSyntheticModel(TinyTestConfig(), seed);
  if (type != QType::F32) m = QuantizeModel(m, type);
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(m.config.vocab_size));
  std::string path = dir + "/tiny-" + std::string(QTypeName(type)) + ".gguf";
  WriteGguf(m, *tok, path);
  return path;
}

class GgufRoundTrip : public ::testing::TestWithParam<QType> {};

TEST_P(GgufRoundTrip, WriteThenReadIsIdentical) {
  const QType type = GetParam();
  Model m = MakeSyntheticModel(TinyTestConfig(), 11);
  if (type != QType::F32) {
    m = QuantizeModel(m, type);
    // Also cover an embedding table stored in the quantized type.
    m.tok_embeddings = Convert(m.tok_embeddings, type);
  }
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(m.config.vocab_size));
  const std::string path = TempDir() + "/m.gguf";
  auto written = WriteGguf(m, *tok, path);
  EXPECT_EQ(written.size(), 3u + 9u * m.config.n_layers);  // embd, output_norm, output + per layer
  for (const auto& t : written) EXPECT_EQ(t.note, "") << t.name;

  LoadedModel lm = LoadGguf(path);
  ExpectSameModel(m, *lm.model);
  ExpectSameVocab(*tok, *lm.tokenizer);
  EXPECT_EQ(lm.model->source.format, "gguf");
  EXPECT_EQ(lm.model->source.tensors.size(), written.size());

  const std::vector<int> tokens = {1, 17, 42, 99, 5};
  std::vector<float> a = Logits(m, tokens), b = Logits(*lm.model, tokens);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(Types, GgufRoundTrip,
                         ::testing::Values(QType::F32, QType::F16, QType::BF16, QType::Q8_0, QType::Q4_0),
                         [](const auto& info) { return std::string(QTypeName(info.param)); });

TEST(Gguf, TiedClassifierIsOmittedAndRestored) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 3);
  m.output = m.tok_embeddings;
  m.tied_embeddings = true;
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(m.config.vocab_size));
  const std::string path = TempDir() + "/tied.gguf";
  auto written = WriteGguf(m, *tok, path);
  for (const auto& t : written) EXPECT_NE(t.name, "output.weight");
  LoadedModel lm = LoadGguf(path);
  ExpectSameModel(m, *lm.model);
}

TEST(Gguf, PaddedQuantizedMatrixIsWrittenAsF16) {
  Model m = MakeSyntheticModel(SyntheticShape("dim=64,layers=1,heads=4,kv_heads=2,ffn=80,vocab=128,ctx=64"), 5);
  Model q = QuantizeModel(m, QType::Q4_0);
  ASSERT_EQ(q.layers[0].w2.cols, 80);
  EXPECT_EQ(q.layers[0].w2.type, QType::F16);             // QuantizeModel never pads (StoredQType)
  q.layers[0].w2 = Convert(m.layers[0].w2, QType::Q4_0);  // a padded matrix made by hand
  ASSERT_TRUE(q.layers[0].w2.padded());
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(128));
  const std::string path = TempDir() + "/pad.gguf";
  auto written = WriteGguf(q, *tok, path);
  int notes = 0;
  for (const auto& t : written) {
    if (t.name == "blk.0.ffn_down.weight") {
      EXPECT_EQ(t.type, "F16");
      EXPECT_NE(t.note.find("written as F16"), std::string::npos) << t.note;
      ++notes;
    } else {
      EXPECT_EQ(t.note, "") << t.name;
    }
  }
  EXPECT_EQ(notes, 1);
  LoadedModel lm = LoadGguf(path);
  const QMatrix& w2 = lm.model->layers[0].w2;
  EXPECT_EQ(w2.type, QType::F16);
  ExpectSameMatrix(Convert(q.layers[0].w2, QType::F16), w2, "w2");
  ExpectSameMatrix(q.layers[0].w1, lm.model->layers[0].w1, "w1");
}

TEST(Gguf, TypesWithoutGgufEquivalentAreAnError) {
  Model m = QuantizeModel(MakeSyntheticModel(TinyTestConfig(), 1), QType::Q4_G64);
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(128));
  const std::string dir = TempDir();
  std::string msg = ErrorOf([&] { WriteGguf(m, *tok, dir + "/x.gguf"); });
  EXPECT_NE(msg.find("q4_g64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("attn_q"), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.gguf"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.gguf.tmp"));
}

TEST(Gguf, VocabSizeMismatchIsAnError) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 1);
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(200));
  std::string msg = ErrorOf([&] { WriteGguf(m, *tok, TempDir() + "/x.gguf"); });
  EXPECT_NE(msg.find("tokenizer.ggml.tokens"), std::string::npos) << msg;
}

// ---- corrupted files ----

class GgufCorrupt : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    good_ = ReadFile(Tiny(QType::F32, dir_));
    ASSERT_GT(good_.size(), 1000u);
    ASSERT_NO_THROW(LoadGguf(dir_ + "/tiny-f32.gguf"));
  }
  // Loads `bytes` from a file and returns the error message.
  std::string Load(const std::string& bytes) {
    std::string path = dir_ + "/bad.gguf";
    WriteFile(path, bytes);
    std::string msg = ErrorOf([&] { LoadGguf(path); });
    if (!msg.empty()) {
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "message should start with the file: " << msg;
    }
    return msg;
  }
  template <typename T>
  static void Poke(std::string& s, size_t pos, T v) {
    std::memcpy(s.data() + pos, &v, sizeof v);
  }
  // Offset just after the name of tensor `name` in the tensor infos.
  size_t AfterTensorName(const std::string& name) const {
    std::string key(8, '\0');
    uint64_t len = name.size();
    std::memcpy(key.data(), &len, 8);
    key += name;
    size_t p = good_.find(key);
    EXPECT_NE(p, std::string::npos);
    // Tensor infos follow the metadata; the token list holds no such names.
    return p + key.size();
  }
  std::string dir_, good_;
};

#define EXPECT_CONTAINS(msg, what) EXPECT_NE((msg).find(what), std::string::npos) << (msg)

TEST_F(GgufCorrupt, WrongMagic) {
  std::string s = good_;
  s[3] = 'X';
  EXPECT_CONTAINS(Load(s), "header.magic");
}

TEST_F(GgufCorrupt, BadVersion) {
  std::string s = good_;
  Poke<uint32_t>(s, 4, 7);
  EXPECT_CONTAINS(Load(s), "header.version: 7");
  Poke<uint32_t>(s, 4, 2);  // v2 shares the v3 layout
  EXPECT_EQ(Load(s), "");
}

TEST_F(GgufCorrupt, TruncatedHeader) {
  std::string msg = Load(good_.substr(0, 20));
  EXPECT_CONTAINS(msg, "header.kv_count");
  EXPECT_CONTAINS(msg, "truncated");
  msg = Load(good_.substr(0, 30));
  EXPECT_CONTAINS(msg, "header.kv_count");
  EXPECT_CONTAINS(msg, "truncated file");
  msg = Load(good_.substr(0, 300));
  EXPECT_CONTAINS(msg, "truncated");
  msg = Load(good_.substr(0, good_.size() / 2));
  EXPECT_CONTAINS(msg, "outside the data section");
}

TEST_F(GgufCorrupt, AbsurdCounts) {
  std::string s = good_;
  Poke<uint64_t>(s, 8, uint64_t{1} << 40);
  EXPECT_CONTAINS(Load(s), "header.tensor_count: count 1099511627776 is absurd");
  Poke<uint64_t>(s, 8, uint64_t{1} << 20);  // under the cap, but cannot fit in the file
  EXPECT_CONTAINS(Load(s), "header.tensor_count: 1048576 items cannot fit");
  s = good_;
  Poke<uint64_t>(s, 16, uint64_t{1} << 33);
  EXPECT_CONTAINS(Load(s), "header.kv_count");
}

TEST_F(GgufCorrupt, AbsurdStringLength) {
  std::string s = good_;
  Poke<uint64_t>(s, 24, uint64_t{1} << 50);  // length of the first key
  std::string msg = Load(s);
  EXPECT_CONTAINS(msg, "kv[0].key");
  EXPECT_CONTAINS(msg, "string length");
}

TEST_F(GgufCorrupt, UnknownValueType) {
  std::string s = good_;
  uint64_t key_len;
  std::memcpy(&key_len, s.data() + 24, 8);
  Poke<uint32_t>(s, 32 + key_len, 99);
  std::string msg = Load(s);
  EXPECT_CONTAINS(msg, "kv 'general.architecture'.type");
  EXPECT_CONTAINS(msg, "unknown value type 99");
}

TEST_F(GgufCorrupt, UnknownAndUnsupportedTensorType) {
  // Tensor info: name, u32 n_dims (2), u64 ne[2], u32 type, u64 offset.
  const size_t type_pos = AfterTensorName("token_embd.weight") + 4 + 16;
  std::string s = good_;
  Poke<uint32_t>(s, type_pos, 77);
  std::string msg = Load(s);
  EXPECT_CONTAINS(msg, "tensor 'token_embd.weight'.type");
  EXPECT_CONTAINS(msg, "unknown ggml tensor type 77");
  Poke<uint32_t>(s, type_pos, 16);  // IQ2_XXS: a ggml type specsweep does not load
  msg = Load(s);
  EXPECT_CONTAINS(msg, "IQ2_XXS");
  EXPECT_CONTAINS(msg, "not supported");
}

TEST_F(GgufCorrupt, TensorDataOutOfRangeOrOverlapping) {
  const size_t off_pos = AfterTensorName("blk.1.ffn_up.weight") + 4 + 16 + 4;
  std::string s = good_;
  Poke<uint64_t>(s, off_pos, uint64_t{1} << 30);
  std::string msg = Load(s);
  EXPECT_CONTAINS(msg, "tensor 'blk.1.ffn_up.weight'.offset");
  EXPECT_CONTAINS(msg, "outside the data section");
  Poke<uint64_t>(s, off_pos, 32);  // inside the first tensor's data
  EXPECT_CONTAINS(Load(s), "overlaps");
  Poke<uint64_t>(s, off_pos, 33);
  EXPECT_CONTAINS(Load(s), "not aligned");
}

TEST_F(GgufCorrupt, MissingTensorAndKey) {
  std::string s = good_;
  size_t p = s.find("blk.1.ffn_up.weight");
  s[p + 8] = 'X';  // "blk.1.ffn_Xp.weight"
  EXPECT_CONTAINS(Load(s), "tensor 'blk.1.ffn_up.weight': required tensor is missing");
  s = good_;
  p = s.find("llama.block_count");
  s[p + 6] = 'X';
  EXPECT_CONTAINS(Load(s), "llama.block_count: required key is missing");
}

TEST_F(GgufCorrupt, ShapeMismatch) {
  std::string s = good_;
  const size_t ne0 = AfterTensorName("output_norm.weight") + 4;  // 1-D: ne[0] = dim
  Poke<uint64_t>(s, ne0, 32);
  EXPECT_CONTAINS(Load(s), "tensor 'output_norm.weight': shape [32] does not match the config (expected [64])");
}

TEST_F(GgufCorrupt, CliReportsOneLine) {
  std::string s = good_;
  s[0] = 'X';
  const std::string bad = dir_ + "/cli-bad.gguf";
  WriteFile(bad, s);
  auto r = RunCli({"quantize", bad, dir_ + "/out.gguf", "--type", "q4_0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: " + bad + ": header.magic: not a GGUF file (first bytes 46554758, expected 'GGUF')\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out.gguf"));
}

// ---- synthetic shapes ----

TEST(SyntheticShape, NamedShapes) {
  ModelConfig t = SyntheticShape("tiny"), r = TinyTestConfig();
  EXPECT_EQ(t.dim, r.dim);
  EXPECT_EQ(t.n_layers, r.n_layers);
  EXPECT_EQ(t.vocab_size, r.vocab_size);
  ModelConfig m = SyntheticShape("134m");
  EXPECT_EQ(m.dim, 768);
  EXPECT_EQ(m.n_layers, 12);
  EXPECT_EQ(m.n_heads, 12);
  EXPECT_EQ(m.n_kv_heads, 12);
  EXPECT_EQ(m.hidden_dim, 2048);
  EXPECT_EQ(m.vocab_size, 32000);
  EXPECT_EQ(m.max_seq_len, 1024);
  ModelConfig b = SyntheticShape("1b");
  EXPECT_EQ(b.dim, 2048);
  EXPECT_EQ(b.n_layers, 22);
  EXPECT_EQ(b.n_heads, 32);
  EXPECT_EQ(b.n_kv_heads, 4);
  EXPECT_EQ(b.hidden_dim, 5632);
  EXPECT_EQ(b.max_seq_len, 2048);
}

TEST(SyntheticShape, DimsSyntax) {
  ModelConfig c = SyntheticShape("dim=512,layers=8,heads=8,kv_heads=2,ffn=1376,vocab=32000,ctx=1024");
  EXPECT_EQ(c.dim, 512);
  EXPECT_EQ(c.n_layers, 8);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.hidden_dim, 1376);
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.max_seq_len, 1024);
  ModelConfig d = SyntheticShape("dim=256,layers=2,heads=4,ffn=512,vocab=1000,ctx=256,rope_theta=500000,eps=1e-6");
  EXPECT_EQ(d.n_kv_heads, 4);
  EXPECT_EQ(d.rope_theta, 500000.0f);
  EXPECT_EQ(d.norm_eps, 1e-6f);
}

TEST(SyntheticShape, Errors) {
  EXPECT_CONTAINS(ErrorOf([] { SyntheticShape("2b"); }), "synthetic shape '2b': unknown shape");
  EXPECT_CONTAINS(ErrorOf([] { SyntheticShape("dim=64,layers=1,heads=4,ffn=96,vocab=128,ctx=64,foo=3"); }),
                  "field 'foo': unknown");
  EXPECT_CONTAINS(ErrorOf([] { SyntheticShape("dim=64,layers=1,heads=4,ffn=96,vocab=128"); }), "field 'ctx': missing");
  EXPECT_CONTAINS(ErrorOf([] { SyntheticShape("dim=64x,layers=1,heads=4,ffn=96,vocab=128,ctx=64"); }),
                  "field 'dim': '64x' is not a number");
  EXPECT_CONTAINS(ErrorOf([] { SyntheticShape("dim=64,dim=64,layers=1,heads=4,ffn=96,vocab=128,ctx=64"); }),
                  "given twice");
  EXPECT_CONTAINS(ErrorOf([] { SyntheticShape("dim=64,layers=1,heads=5,ffn=96,vocab=128,ctx=64"); }), "n_heads");
}

TEST(SyntheticVocab, CoversTextAndRoundTrips) {
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(128));
  EXPECT_EQ(tok->vocab_size(), 128);
  const std::string text = "Hello, world! 42";
  auto ids = tok->Encode(text, true);
  EXPECT_EQ(ids[0], 1);
  for (int id : ids) EXPECT_NE(id, 0) << "no <unk> for printable ASCII";
  EXPECT_EQ(tok->Decode(ids), text);
  auto big = MakeScoreBpeTokenizer(SyntheticVocab(32000));
  EXPECT_EQ(big->vocab_size(), 32000);
  EXPECT_EQ(big->Decode(big->Encode("the quick brown fox", false)), "the quick brown fox");
  EXPECT_LT(big->Encode("the quick brown fox", false).size(), 10u);  // merges apply
}

// ---- CLI ----

TEST(GgufCli, SynthQuantizeBench) {
  const std::string dir = TempDir();
  auto r = RunCli({"synth", "--shape", "tiny", "-o", dir + "/t.gguf", "--seed", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "wrote");
  // Same seed as MakeSyntheticModel: identical weights.
  LoadedModel lm = LoadGguf(dir + "/t.gguf");
  ExpectSameModel(MakeSyntheticModel(TinyTestConfig(), 4), *lm.model);

  r = RunCli({"quantize", dir + "/t.gguf", dir + "/q.gguf", "--type", "q8_0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "blk.1.ffn_down.weight");
  EXPECT_CONTAINS(r.out, "Q8_0");
  ExpectSameModel(QuantizeModel(*lm.model, QType::Q8_0), *LoadGguf(dir + "/q.gguf").model);

  r = RunCli({"quantize", dir + "/t.gguf", dir + "/g.gguf", "--type", "q4_g128"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "--type: q4_g128 has no GGUF equivalent");

  r = RunCli({"synth", "--shape", "tiny", "-o", dir + "/x.gguf", "--tokenizer", dir + "/none.bin"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "--tokenizer");

  r = RunCli({"bench-forward", dir + "/q.gguf", "--n", "2,4", "--reps", "2", "--ctx", "8", "--json", dir + "/b.json",
              "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(ReadFile(dir + "/b.json"));
  EXPECT_EQ(j["context"]["schema_version"], 7);
  EXPECT_EQ(j["context"]["threads"], 1);
  EXPECT_EQ(j["context"]["loop"], false);
  // main() asks glibc for huge-page backed heap memory unless told otherwise.
  EXPECT_CONTAINS(j["context"]["glibc_tunables"].get<std::string>(), "glibc.malloc.hugetlb=1");
  EXPECT_TRUE(j["context"]["transparent_hugepages"].is_string());
  const double bw = j["context"]["read_bandwidth_gbs"], fma = j["context"]["fma_peak_gmacs"];
  EXPECT_GT(bw, 0.0);
  // The roofline's bandwidth is the fastest of the median reading during the timings
  // (one per repetition, two here) and the full probes before and after.
  const auto& cx = j["context"];
  const double during = cx["read_bandwidth_during_gbs"];
  EXPECT_LE(cx["read_bandwidth_during_min_gbs"].get<double>(), during);
  EXPECT_GE(cx["read_bandwidth_during_max_gbs"].get<double>(), during);
  EXPECT_EQ(bw, std::max({during, cx["read_bandwidth_before_gbs"].get<double>(),
                          cx["read_bandwidth_after_gbs"].get<double>()}));
  EXPECT_GT(fma, 0.0);
  ASSERT_EQ(j["benchmarks"].size(), 3u);  // n=1 added for T(n)/T(1)
  EXPECT_EQ(j["benchmarks"][0]["n"], 1);
  EXPECT_EQ(j["benchmarks"][0]["t_over_t1"], 1.0);
  for (const auto& b : j["benchmarks"]) {
    // Q8_0 matrices count toward memory only, so the floor is the byte stream's time.
    EXPECT_EQ(b["float_macs_per_token"], 0.0);
    EXPECT_EQ(b["floor_bound"], "memory");
    EXPECT_NEAR(b["floor_ms"].get<double>(), b["streamed_bytes"].get<double>() / (bw * 1e9) * 1e3, 1e-9);
    EXPECT_NEAR(b["roofline_fraction"].get<double>(), b["floor_ms"].get<double>() / b["real_time"].get<double>(), 1e-9);
  }
  EXPECT_EQ(j["benchmarks"][2]["name"], "bench_forward/q8_0/n:4");
  EXPECT_GT(j["benchmarks"][2]["tokens_per_s"].get<double>(), 0.0);
  EXPECT_EQ(j["benchmarks"][2]["team"], "auto");
  EXPECT_EQ(j["benchmarks"][2]["team_size"], 1);  // --threads 1

  // Decode-loop timing, team policies compared, and the loops of --decode-k.
  r = RunCli({"bench-forward", dir + "/q.gguf", "--n", "1,3", "--reps", "2", "--ctx", "4", "--loop", "--team",
              "serial,full", "--decode-k", "2", "--decode-tokens", "6", "--json", dir + "/b3.json", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "decode loop");
  j = nlohmann::json::parse(ReadFile(dir + "/b3.json"));
  EXPECT_EQ(j["context"]["loop"], true);
  ASSERT_EQ(j["benchmarks"].size(), 4u + 2u + 2u);  // 2 teams x 2 n, 2 cost ratios, ar + k:2
  EXPECT_EQ(j["benchmarks"][0]["name"], "bench_forward/q8_0/team:serial/n:1");
  EXPECT_EQ(j["benchmarks"][0]["team_size"], 1);
  EXPECT_EQ(j["benchmarks"][2]["team_size"], 2);
  const auto& spec = j["benchmarks"][7];
  EXPECT_EQ(spec["name"], "bench_forward/decode_loop/spec_same_weights/k:2");
  EXPECT_GT(spec["mean_accepted_length"].get<double>(), 2.0);  // the draft is the target: every token accepted
  EXPECT_GT(spec["cpu_ms_per_token"].get<double>(), 0.0);
  r = RunCli({"bench-forward", dir + "/q.gguf", "--team", "wide"});
  EXPECT_EQ(r.exit_code, 2);  // a refused option value: usage
  EXPECT_CONTAINS(r.err, "--team: 'wide' is not a team policy");

  // Several formats interleaved: one record per (format, n) plus the pairwise n=1 cost
  // ratios, each the median of per-repetition ratios.
  r = RunCli({"bench-forward", dir + "/q.gguf", "--n", "1,2", "--reps", "3", "--ctx", "4", "--quant", "none,f32",
              "--json", dir + "/b2.json", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "cost ratios");
  j = nlohmann::json::parse(ReadFile(dir + "/b2.json"));
  ASSERT_EQ(j["benchmarks"].size(), 6u);
  EXPECT_EQ(j["benchmarks"][2]["name"], "bench_forward/f32/n:1");
  // F32: one multiply-add per streamed matrix weight (4 bytes each; the norm vectors are
  // streamed too); the floor is the larger of the two ceilings.
  const auto& f1 = j["benchmarks"][2];
  const double macs = f1["float_macs_per_token"], streamed = f1["streamed_bytes"];
  EXPECT_GT(macs, 0.97 * streamed / 4);
  EXPECT_LT(macs, streamed / 4);
  const double bw2 = j["context"]["read_bandwidth_gbs"], fma2 = j["context"]["fma_peak_gmacs"];
  for (int k : {2, 3}) {
    const auto& b = j["benchmarks"][k];
    const double mem_ms = streamed / (bw2 * 1e9) * 1e3, fma_ms = b["n"].get<int>() * macs / (fma2 * 1e9) * 1e3;
    EXPECT_NEAR(b["floor_ms"].get<double>(), std::max(mem_ms, fma_ms), 1e-9);
    EXPECT_EQ(b["floor_bound"], fma_ms > mem_ms ? "compute" : "memory");
  }
  EXPECT_EQ(j["benchmarks"][4]["name"], "bench_forward/cost_ratio/q8_0:f32");
  EXPECT_EQ(j["benchmarks"][5]["name"], "bench_forward/cost_ratio/f32:q8_0");
  const double ab = j["benchmarks"][4]["ratio"], ba = j["benchmarks"][5]["ratio"];
  EXPECT_GT(ab, 0.0);
  EXPECT_NEAR(ab * ba, 1.0, 1e-9);  // odd repetition count: the medians are one repetition's pair

  // KV cache types compared: one variant per (format, KV type), labelled with both.
  r = RunCli({"bench-forward", dir + "/q.gguf", "--n", "1", "--reps", "2", "--ctx", "6", "--kv-type", "f32,f16",
              "--json", dir + "/b3.json", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "q8_0/kv:f16");
  j = nlohmann::json::parse(ReadFile(dir + "/b3.json"));
  ASSERT_EQ(j["benchmarks"].size(), 4u);  // two timings, two cost ratios
  EXPECT_EQ(j["benchmarks"][1]["name"], "bench_forward/q8_0/kv:f16/n:1");
  EXPECT_EQ(j["benchmarks"][1]["format"], "q8_0");
  EXPECT_EQ(j["benchmarks"][0]["kv_type"], "f32");
  EXPECT_EQ(j["benchmarks"][1]["kv_type"], "f16");
  // The last of n = 1 tokens at ctx 6 attends 7 positions: keys and values of every
  // layer, 4 or 2 bytes each.
  const LoadedModel qm = LoadGguf(dir + "/q.gguf");
  const double kv_elems = 2.0 * qm.model->config.n_layers * 7 * qm.model->config.kv_dim();
  EXPECT_EQ(j["benchmarks"][0]["kv_bytes_last_token"].get<double>(), 4 * kv_elems);
  EXPECT_EQ(j["benchmarks"][1]["kv_bytes_last_token"].get<double>(), 2 * kv_elems);
  EXPECT_EQ(j["benchmarks"][2]["name"], "bench_forward/cost_ratio/q8_0/kv:f32:q8_0/kv:f16");

  r = RunCli({"bench-forward", dir + "/q.gguf", "--kv-type", "f8"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_CONTAINS(r.err, "--kv-type");

  r = RunCli({"bench-forward", dir + "/q.gguf", "--quant", "none,q8_0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "--quant: format q8_0 listed twice");

  r = RunCli({"bench-forward", dir + "/q.gguf", "--ctx", "200"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "--ctx: 200");
}

// ---- shared models ----

TEST(GgufShared, Stories260kThroughGgufIsBitIdentical) {
  const std::string dir = SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "shared models not available";
  const std::string base = dir + "/tinystories-260k/";
  Model m = LoadLlama2cCheckpoint(base + "stories260K.bin");
  auto tok = LoadLlama2cTokenizer(base + "tok512.bin", m.config.vocab_size);
  const std::string out = TempDir();
  WriteGguf(m, *tok, out + "/s.gguf");
  LoadedModel lm = LoadGguf(out + "/s.gguf");
  ExpectSameModel(m, *lm.model);
  for (const char* text : {"Once upon a time", "Lily and Tom went to the park.", "x y z 123 !?"})
    EXPECT_EQ(tok->Encode(text, true), lm.tokenizer->Encode(text, true)) << text;
  const std::vector<int> ids = tok->Encode("Once upon a time, there was", true);
  std::vector<float> a = Logits(m, ids), b = Logits(*lm.model, ids);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));

  // Its FFN width 172 is no multiple of 32: Q4_0 keeps ffn_down as F16 (StoredQType),
  // in memory as in the file.
  Model q = QuantizeModel(m, QType::Q4_0);
  auto written = WriteGguf(q, *tok, out + "/q.gguf");
  int f16 = 0;
  for (const auto& t : written)
    if (t.name.ends_with("ffn_down.weight")) {
      EXPECT_EQ(t.type, "F16");
      ++f16;
    }
  EXPECT_EQ(f16, m.config.n_layers);
  LoadedModel lq = LoadGguf(out + "/q.gguf");
  ExpectSameMatrix(q.layers[0].wq, lq.model->layers[0].wq, "wq");
}

}  // namespace
}  // namespace specsweep

namespace specsweep {
namespace {

TEST(GgufShared, HfSafetensorsThroughGgufIsBitIdentical) {
  const std::string dir = SharedModelsDir();
  if (dir.empty()) GTEST_SKIP() << "shared models not available";
  LoadedModel hf = LoadModel("tinystories-656k", dir);
  const std::string out = TempDir() + "/h.gguf";
  WriteGguf(*hf.model, *hf.tokenizer, out);
  LoadedModel lm = LoadGguf(out);
  ExpectSameModel(*hf.model, *lm.model);
  // The HF BPE vocabulary exported as an SPM score vocabulary encodes alike.
  for (const char* text : {"Once upon a time", "The little dog ran to the park."})
    EXPECT_EQ(hf.tokenizer->Encode(text, true), lm.tokenizer->Encode(text, true)) << text;
  const std::vector<int> ids = hf.tokenizer->Encode("Once upon a time, there was", true);
  std::vector<float> a = Logits(*hf.model, ids), b = Logits(*lm.model, ids);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

}  // namespace
}  // namespace specsweep
