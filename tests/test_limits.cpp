// Absurd or corrupt inputs (issue #22, fuzzing findings): each is a one-line Error naming
// the file and field, raised before anything large is allocated.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "harness/sweep/experiment.h"
#include "base/error.h"
#include "models/forward.h"
#include "models/gguf.h"
#include "models/kv_cache.h"
#include "models/limits.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::TempDir;
using testing::WriteFile;

// Runs f, expects an Error whose message contains every part; returns the message.
template <class F>
std::string ExpectError(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "no Error thrown";
  return "";
}

std::string I32(int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string F32(float v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

// ---- tokenizer.json

std::string TokenizerJson(const std::string& extra) {
  return R"({"model":{"type":"BPE","vocab":{"<unk>":0,"<s>":1,"</s>":2,"a":3},"merges":[],"unk_token":"<unk>"})" +
         extra + "}";
}

TEST(Limits, DeeplyNestedNormalizerSequenceIsAnError) {
  for (const char* kind : {"normalizer", "decoder"}) {
    const std::string list = std::string(kind) + "s";
    std::string nest, close;
    for (int i = 0; i < 100000; ++i) {
      nest += R"({"type":"Sequence",")" + list + R"(":[)";
      close += "]}";
    }
    const std::string dir = TempDir();
    WriteFile(dir + "/tokenizer.json", TokenizerJson(",\"" + std::string(kind) + "\":" + nest + close));
    ExpectError([&] { LoadHfTokenizer(dir + "/tokenizer.json"); }, {"tokenizer.json", kind, "nested deeper"});
  }
}

TEST(Limits, AddedTokenIdFarBeyondTheVocabularyIsAnError) {
  const std::string dir = TempDir();
  WriteFile(dir + "/tokenizer.json",
            TokenizerJson(R"(,"added_tokens":[{"id":1073741824,"content":"<x>","special":true}])"));
  ExpectError([&] { LoadHfTokenizer(dir + "/tokenizer.json"); }, {"tokenizer.json", "added_tokens[0].id", "2^24"});
}

TEST(Limits, TokenizerJsonWrongTypesNameTheFile) {
  const std::string dir = TempDir();
  WriteFile(dir + "/tokenizer.json", TokenizerJson(R"(,"pre_tokenizer":[1,2])"));
  const std::string msg =
      ExpectError([&] { LoadHfTokenizer(dir + "/tokenizer.json"); }, {"tokenizer.json", "pre_tokenizer"});
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
}

// ---- llama2.c

std::string Llama2cHeader(int dim, int hidden, int layers, int heads, int kv, int vocab, int seq) {
  std::string h;
  for (int v : {dim, hidden, layers, heads, kv, vocab, seq}) h += I32(v);
  return h;
}

// A valid checkpoint of zeros: dim 8, ffn 16, 1 layer, 2 heads, vocab `vocab` (shared
// classifier), 8 positions; `weights` may be edited before writing.
std::string Llama2cCheckpoint(int vocab, std::string* weights_out = nullptr) {
  const int d = 8, h = 16, t = 8, hd = 4;
  const size_t floats = size_t(vocab) * d + d + 4 * d * d + d + 3 * h * d + d + 2 * t * hd / 2;
  std::string w(floats * 4, '\0');
  if (weights_out) *weights_out = w;
  return Llama2cHeader(d, h, 1, 2, 2, vocab, t) + w;
}

TEST(Limits, Llama2cVocabSizeIntMinIsAnError) {
  const std::string path = TempDir() + "/m.bin";
  WriteFile(path, Llama2cHeader(8, 16, 1, 2, 2, INT_MIN, 8) + std::string(4096, '\0'));
  ExpectError([&] { LoadLlama2cCheckpoint(path); }, {"m.bin", "vocab_size", "out of range"});
}

TEST(Limits, Llama2cNonFiniteWeightNamesTheTensor) {
  const std::string path = TempDir() + "/m.bin";
  std::string file = Llama2cCheckpoint(32);
  ASSERT_NO_THROW({
    WriteFile(path, file);
    LoadLlama2cCheckpoint(path);
  });
  // First float of wq: after the header, the embeddings (32 x 8) and rms_att_weight (8).
  const size_t wq = 28 + 4 * (32 * 8 + 8);
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    std::string f = file;
    std::memcpy(f.data() + wq + 4 * 5, &bad, 4);
    WriteFile(path, f);
    ExpectError([&] { LoadLlama2cCheckpoint(path); }, {"m.bin", "'wq'", "NaN or Inf"});
  }
}

// The vectorized scan (256-byte chunks) and its scalar tail report the first bad element
// wherever it falls: chunk edges, mid-chunk, the tail, and the first of two.
TEST(Limits, FirstNonFiniteElementAtEveryPosition) {
  const size_t n = 1000;
  struct Case {
    QType type;
    size_t bytes;
    uint32_t finite, bad;  // bit patterns: a finite value, a NaN/Inf
  };
  for (Case c : {Case{QType::F32, 4, 0x3F800000u, 0x7F800000u}, Case{QType::F32, 4, 0xBF000000u, 0xFFC00001u},
                 Case{QType::F16, 2, 0x3C00u, 0x7C00u}, Case{QType::F16, 2, 0xFBFFu, 0xFE01u},
                 Case{QType::BF16, 2, 0x3F80u, 0x7F80u}, Case{QType::BF16, 2, 0x7F7Fu, 0xFFC1u}}) {
    std::string data(n * c.bytes, '\0');
    for (size_t i = 0; i < n; ++i) std::memcpy(data.data() + i * c.bytes, &c.finite, c.bytes);
    EXPECT_NO_THROW(CheckFinite(c.type, reinterpret_cast<const uint8_t*>(data.data()), n, "f", "t"));
    for (size_t at : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{127}, size_t{128}, size_t{255}, size_t{256},
                      size_t{511}, size_t{600}, size_t{895}, size_t{896}, size_t{999}}) {
      std::string d = data;
      std::memcpy(d.data() + at * c.bytes, &c.bad, c.bytes);
      if (at + 3 < n) std::memcpy(d.data() + (at + 3) * c.bytes, &c.bad, c.bytes);  // a later one too
      ExpectError([&] { CheckFinite(c.type, reinterpret_cast<const uint8_t*>(d.data()), n, "f", "t"); },
                  {"'t'", fmt::format("element {} ", at), "NaN or Inf"});
    }
  }
}

TEST(Limits, TokenizerLargerThanTheModelVocabularyIsAnError) {
  const std::string dir = TempDir();
  WriteFile(dir + "/model.bin", Llama2cCheckpoint(6));
  std::string tok = I32(8);
  for (std::string p : {"<unk>", "\n<s>\n", "\n</s>\n", "a", "b", "c", "d", "e", "f", "g"})
    tok += F32(0) + I32(static_cast<int>(p.size())) + p;
  WriteFile(dir + "/tokenizer.bin", tok);
  ExpectError([&] { LoadModel(dir + "/model.bin"); }, {"tokenizer.bin", "vocab_size", "6 tokens"});
}

TEST(Limits, Llama2cCheckpointsStopAtBos) {
  const std::string dir = TempDir();
  WriteFile(dir + "/m.bin", Llama2cCheckpoint(32));
  Model m = LoadLlama2cCheckpoint(dir + "/m.bin");
  EXPECT_TRUE(m.config.IsStop(m.config.bos_id));
  EXPECT_TRUE(m.config.IsStop(m.config.eos_id));
  EXPECT_FALSE(m.config.IsStop(3));
  EXPECT_FALSE(TinyTestConfig().IsStop(TinyTestConfig().bos_id));  // other formats: EOS only
}

// ---- HF config.json + safetensors

const char* kConfig =
    R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":8,"intermediate_size":16,)"
    R"("num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":32,)"
    R"("max_position_embeddings":16,"rms_norm_eps":1e-05})";

std::string Safetensors(const std::string& header_json, size_t data_bytes) {
  uint64_t n = header_json.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + header_json + std::string(data_bytes, '\0');
}

std::string HfDir(const std::string& config, const std::string& safetensors) {
  const std::string dir = TempDir();
  WriteFile(dir + "/config.json", config);
  WriteFile(dir + "/model.safetensors", safetensors);
  return dir;
}

TEST(Limits, ConfigIntegersDoNotWrap) {
  std::string cfg = kConfig;
  cfg.replace(cfg.find("\"hidden_size\":8"), 15, "\"hidden_size\":4294967304");
  const std::string dir = HfDir(cfg, Safetensors("{}", 0));
  ExpectError([&] { LoadHfSafetensors(dir); }, {"config.json", "hidden_size", "4294967304", "out of range"});
}

TEST(Limits, ConfigWrongTypesNameTheField) {
  std::string cfg = kConfig;
  cfg.replace(cfg.find("\"model_type\":\"llama\""), 20, "\"model_type\":7");
  const std::string dir = HfDir(cfg, Safetensors("{}", 0));
  const std::string msg = ExpectError([&] { LoadHfSafetensors(dir); }, {"config.json", "model_type"});
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
}

TEST(Limits, ConfigNonFiniteRopeThetaIsAnError) {
  std::string cfg = kConfig;
  cfg.insert(cfg.size() - 1, R"(,"rope_theta":1e39)");
  const std::string dir = HfDir(cfg, Safetensors("{}", 0));
  ExpectError([&] { LoadHfSafetensors(dir); }, {"config.json", "rope_theta", "not finite"});
}

TEST(Limits, SafetensorsShapeMustBeASmallArray) {
  const std::string as_object = R"({"model.norm.weight":{"dtype":"F32","shape":{"a":8},"data_offsets":[0,32]}})";
  std::string dir = HfDir(kConfig, Safetensors(as_object, 32));
  ExpectError([&] { LoadHfSafetensors(dir); }, {"model.safetensors", "model.norm.weight", "shape"});
  // 2^32 x 2^32 elements would wrap to 0 bytes in 64 bits.
  const std::string huge =
      R"({"model.norm.weight":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})";
  dir = HfDir(kConfig, Safetensors(huge, 0));
  ExpectError([&] { LoadHfSafetensors(dir); }, {"model.safetensors", "model.norm.weight", "absurdly large"});
}

TEST(Limits, SafetensorsNonFiniteWeightNamesTheTensor) {
  const std::string hdr = R"({"model.norm.weight":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})";
  std::string st = Safetensors(hdr, 32);
  const float inf = INFINITY;
  std::memcpy(st.data() + 8 + hdr.size() + 12, &inf, 4);
  const std::string dir = HfDir(kConfig, st);
  ExpectError([&] { LoadHfSafetensors(dir); }, {"model.safetensors", "model.norm.weight", "element 3", "NaN or Inf"});
}

// ---- GGUF

TEST(Limits, GgufNonFiniteWeightsAndRopeBaseAreErrors) {
  Model m = MakeSyntheticModel(TinyTestConfig(), 3);
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(m.config.vocab_size));
  const std::string path = TempDir() + "/m.gguf";
  {
    Model bad = m;
    bad.layers[0].ffn_norm[2] = NAN;
    WriteGguf(bad, *tok, path);
    ExpectError([&] { LoadGguf(path); }, {"m.gguf", "blk.0.ffn_norm.weight", "NaN or Inf"});
  }
  {
    Model bad = m;
    bad.output = QMatrix(m.output);
    bad.tied_embeddings = false;
    ASSERT_EQ(bad.output.type, QType::F32);
    reinterpret_cast<float*>(bad.output.data.data())[7] = INFINITY;
    WriteGguf(bad, *tok, path);
    ExpectError([&] { LoadGguf(path); }, {"m.gguf", "output.weight", "NaN or Inf"});
  }
  {
    // The writer refuses inf, so the file is patched: the value follows its key and type.
    Model odd = m;
    odd.config.rope_theta = 12345.0f;
    WriteGguf(odd, *tok, path);
    std::string bytes = testing::ReadFile(path);
    const size_t key = bytes.find("llama.rope.freq_base");
    ASSERT_NE(key, std::string::npos);
    const size_t at = key + std::strlen("llama.rope.freq_base") + 4;  // u32 value type, then f32
    float v;
    std::memcpy(&v, bytes.data() + at, 4);
    ASSERT_EQ(v, 12345.0f);
    const float inf = INFINITY;
    std::memcpy(bytes.data() + at, &inf, 4);
    WriteFile(path, bytes);
    ExpectError([&] { LoadGguf(path); }, {"m.gguf", "llama.rope.freq_base", "not finite"});
  }
}

TEST(Limits, LongValuesAreCutInMessages) {
  Vocab v = SyntheticVocab(128);
  v.pieces[100] = std::string(100000, 'x');
  v.types[100] = TokenType::Byte;
  const std::string msg = ExpectError([&] { MakeScoreBpeTokenizer(v); }, {"byte piece 100", "100000 bytes"});
  EXPECT_LT(msg.size(), 300u);
  EXPECT_EQ(Quoted("abc"), "'abc'");
}

// ---- KV cache: memory follows the positions used

TEST(Limits, KvCacheGrowsWithUseNotWithTheContextLength) {
  ModelConfig c = TinyTestConfig();
  c.max_seq_len = 1 << 22;  // a 4M-position context
  Model m = MakeSyntheticModel(c, 7);
  KVCache cache(m.config);
  EXPECT_EQ(cache.capacity(), 1 << 22);
  EXPECT_EQ(cache.bytes(), 0u);
  std::vector<int> toks(40);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = int(i * 7 % c.vocab_size);
  Forward(testing::Serial(), m, toks, 0, cache);
  EXPECT_LE(cache.reserved(), 256);
  EXPECT_EQ(cache.bytes(), size_t(cache.reserved()) * cache.bytes_per_position());
}

TEST(Limits, KvCacheGrowthKeepsTheLogits) {
  ModelConfig c = TinyTestConfig();
  c.max_seq_len = 1024;
  Model m = MakeSyntheticModel(c, 9);
  std::vector<int> toks(600);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = int((i * 13 + 5) % c.vocab_size);
  // Reserved up front vs grown (256 -> 512 -> 1024) one token at a time past 256 and 512.
  KVCache whole(m.config), grown(m.config);
  whole.Reserve(1024);
  auto a = Forward(testing::Serial(), m, std::span<const int>(toks).first(599), 0, whole);
  (void)a;
  auto la = Forward(testing::Serial(), m, std::span<const int>(toks).subspan(599), 599, whole);
  std::vector<float> ref(la.begin(), la.end());
  for (int p = 0; p < 599; p += 50) {
    const int n = std::min(50, 599 - p);
    Forward(testing::Serial(), m, std::span<const int>(toks).subspan(p, n), p, grown);
  }
  EXPECT_EQ(grown.reserved(), 1024);
  auto lb = Forward(testing::Serial(), m, std::span<const int>(toks).subspan(599), 599, grown);
  EXPECT_EQ(ref, std::vector<float>(lb.begin(), lb.end()));
}

// ---- experiment files

TEST(Limits, YamlAliasBombIsAnError) {
  const std::string path = TempDir() + "/laughs.yaml";
  std::string y = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i < 10; ++i) {
    y += fmt::format("a{}: &a{} [", i, i);
    for (int k = 0; k < 10; ++k) y += fmt::format("{}*a{}", k ? ", " : "", i - 1);
    y += "]\n";
  }
  y += "name: *a9\n";
  WriteFile(path, y);
  ExpectError([&] { LoadExperiment(path); }, {"laughs.yaml", "expands to more than"});
}

// Fuzz finding (fuzz_experiment): an anchor used inside its own definition makes a
// cyclic node graph; the conversion recursed until the stack overflowed.
TEST(Limits, YamlAliasInsideItsOwnAnchorIsAnError) {
  const std::string path = TempDir() + "/cycle.yaml";
  WriteFile(path, "a1: &a1 [x, y]\na2: &a2 [*a1, *a2, *a1]\nname: *a2\n");
  ExpectError([&] { LoadExperiment(path); }, {"cycle.yaml", "nesting deeper than"});
}

// Fuzz finding (fuzz_experiment, 2026-11-26): yaml-cpp's LoadAll, used to find a second
// document, looped without end on this malformed flow map, growing memory (a libFuzzer
// timeout). Documents are now walked one at a time, at most two.
TEST(Limits, MalformedYamlAfterTheFirstDocumentEndsInAnError) {
  const std::string path = TempDir() + "/flow.yaml";
  WriteFile(path,
            "{\"name\": \"t\", {\"temperature\": [0, 0.7], \"seed\": [1]}},\n \"decoders\": [\"ar*\" copy of "
            "the t, {\"decoder\": \"self-spec\", \"draft_quant\": [\"q8_0\", \"none\"]}]}\n");
  ExpectError([&] { LoadExperiment(path); }, {"flow.yaml", "yaml"});
}

}  // namespace
}  // namespace specsweep
