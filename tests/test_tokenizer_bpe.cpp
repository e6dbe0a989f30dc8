// Byte-level BPE (tokenizer.json with Split/ByteLevel/NFC, GGUF "gpt2"), vocabulary
// comparison and llama2.c + SentencePiece: synthetic tokenizers the test writes
// itself (always run), and the reference encodings in ../shared/fixtures/tokenizers
// (skipped when absent).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "decoders/decoder.h"
#include "base/error.h"
#include "models/gguf.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "models/tokenizer.h"
#include "models/tokenizer_text.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using json = nlohmann::json;
using ::specsweep::testing::ReadFile;
using ::specsweep::testing::RunCli;
using ::specsweep::testing::SharedModelsDir;
using ::specsweep::testing::TempDir;
using ::specsweep::testing::WriteFile;

const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

template <typename F>
void ExpectError(F f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown, expected one mentioning " << needles[0];
  } catch (const Error& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "multi-line: " << e.what();
  }
}

// ---------------------------------------------------------------------------
// A tiny byte-level tokenizer.json: ids 0..255 are the GPT-2 byte characters in byte
// order, then merged pieces, then added tokens.
struct Synth {
  json root;
  int Id(const std::string& bytes) const {  // id of a piece given as raw bytes
    return root["model"]["vocab"][ByteLevelEncode(bytes)].get<int>();
  }
};

// gguf_compatible: the llama-bpe pipeline (ignore_merges, no NFC, no lstrip).
Synth MakeSynth(bool ignore_merges = false, bool gguf_compatible = false) {
  if (gguf_compatible) ignore_merges = true;
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[ByteToChar(static_cast<unsigned char>(b))] = b;
  // Merges by rank; each merged piece gets the next id.
  const std::vector<std::pair<std::string, std::string>> merges = {{"h", "e"}, {"t", "he"}, {" ", "t"}, {" t", "he"},
                                                                   {"1", "2"}, {"12", "3"}, {"a", "a"}, {"x", "y"}};
  json jm = json::array();
  int next = 256;
  for (auto& [a, b] : merges) {
    jm.push_back(ByteLevelEncode(a) + " " + ByteLevelEncode(b));
    if (!vocab.contains(ByteLevelEncode(a + b))) vocab[ByteLevelEncode(a + b)] = next++;
  }
  vocab[ByteLevelEncode("xyz")] = next++;  // reachable only by ignore_merges
  json added = json::array();
  added.push_back({{"id", next},
                   {"content", "<|bos|>"},
                   {"special", true},
                   {"normalized", false},
                   {"lstrip", false},
                   {"rstrip", false},
                   {"single_word", false}});
  added.push_back({{"id", next + 1},
                   {"content", "<mask>"},
                   {"special", false},
                   {"normalized", false},
                   {"lstrip", !gguf_compatible},
                   {"rstrip", false},
                   {"single_word", false}});
  Synth s;
  s.root =
      {{"version", "1.0"},
       {"added_tokens", added},
       {"normalizer", gguf_compatible ? json(nullptr) : json{{"type", "NFC"}}},
       {"pre_tokenizer",
        {{"type", "Sequence"},
         {"pretokenizers",
          {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Regex}}}, {"behavior", "Isolated"}, {"invert", false}},
           {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}}},
       {"post_processor",
        {{"type", "TemplateProcessing"},
         {"single",
          {{{"SpecialToken", {{"id", "<|bos|>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}}},
       {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
       {"model",
        {{"type", "BPE"},
         {"vocab", vocab},
         {"merges", jm},
         {"ignore_merges", ignore_merges},
         {"byte_fallback", false}}}};
  return s;
}

std::string WriteJson(const json& j, const std::string& name = "tokenizer.json") {
  const std::string dir = TempDir() + "/" + std::to_string(std::hash<std::string>{}(j.dump()));
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/" + name, j.dump());
  return dir + "/" + name;
}

TEST(ByteLevelBpe, SyntheticKnownEncodings) {
  Synth s = MakeSynth();
  auto tok = LoadHfTokenizer(WriteJson(s.root));
  EXPECT_EQ(tok->kind(), "hf-bpe");
  const int bos = s.root["added_tokens"][0]["id"], mask = s.root["added_tokens"][1]["id"];
  EXPECT_EQ(tok->vocab_size(), mask + 1);
  EXPECT_TRUE(tok->add_bos_default());  // TemplateProcessing starts with <|bos|>
  EXPECT_EQ(tok->bos_id(), bos);
  // "the": h+e (rank 0), then t+he. " the": h+e, then t+he (rank 1) beats " "+t (rank
  // 2), and " "+"the" is no merge: lowest rank first, not left to right.
  EXPECT_EQ(tok->Encode("the the", false), (std::vector<int>{s.Id("the"), s.Id(" "), s.Id("the")}));
  EXPECT_EQ(tok->Encode("the", true), (std::vector<int>{bos, s.Id("the")}));
  // Digits in groups of three from the left; 12+3 after 1+2.
  EXPECT_EQ(tok->Encode("12345", false), (std::vector<int>{s.Id("123"), s.Id("4"), s.Id("5")}));
  // Equal ranks merge leftmost first: aaa -> aa a.
  EXPECT_EQ(tok->Encode("aaa", false), (std::vector<int>{s.Id("aa"), s.Id("a")}));
  // Non-ASCII goes through the byte map: é is two byte pieces; NFC first, so e +
  // COMBINING ACUTE encodes like é.
  EXPECT_EQ(tok->Encode("\xC3\xA9", false), (std::vector<int>{0xC3, 0xA9}));
  EXPECT_EQ(tok->Encode("e\xCC\x81", false), tok->Encode("\xC3\xA9", false));
  // Added tokens are split out first; <mask> has lstrip, so it absorbs the space.
  EXPECT_EQ(tok->Encode("the<|bos|>the", false), (std::vector<int>{s.Id("the"), bos, s.Id("the")}));
  EXPECT_EQ(tok->Encode("the  <mask>x", false), (std::vector<int>{s.Id("the"), mask, s.Id("x")}));
  // No ignore_merges: xyz is x y z merged as far as merges go (x+y only).
  EXPECT_EQ(tok->Encode("xyz", false), (std::vector<int>{s.Id("xy"), s.Id("z")}));
  EXPECT_TRUE(tok->Encode("", false).empty());

  // Decoding: byte map back; special tokens dropped with kSkip, kept with kKeep.
  std::vector<int> ids = tok->Encode("<|bos|>the 123 caf\xC3\xA9<mask>!", false);
  EXPECT_EQ(tok->Decode(ids, Specials::kKeep), "<|bos|>the 123 caf\xC3\xA9<mask>!");
  EXPECT_EQ(tok->Decode(ids), "the 123 caf\xC3\xA9<mask>!");
  // A lone UTF-8 lead byte decodes to U+FFFD, not to invalid text.
  EXPECT_EQ(tok->Decode(std::vector<int>{0xC3, 'a'}),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_THROW(tok->Decode(std::vector<int>{mask + 1}), Error);
}

TEST(ByteLevelBpe, IgnoreMergesLooksWholeWordsUp) {
  Synth s = MakeSynth(/*ignore_merges=*/true);
  auto tok = LoadHfTokenizer(WriteJson(s.root));
  EXPECT_EQ(tok->Encode("xyz", false), (std::vector<int>{s.Id("xyz")}));
  EXPECT_EQ(tok->Encode("xyzz", false), (std::vector<int>{s.Id("xy"), s.Id("z"), s.Id("z")}));
}

TEST(ByteLevelBpe, SplitBehaviors) {
  Regex re("-", true, "test");
  auto split = [&](SplitBehavior b, bool invert) {
    std::vector<std::string> out;
    SplitByRegex(re, b, invert, "a-b--c-", out);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(split(SplitBehavior::kIsolated, false), (V{"a", "-", "b", "-", "-", "c", "-"}));
  EXPECT_EQ(split(SplitBehavior::kRemoved, false), (V{"a", "b", "c"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithPrevious, false), (V{"a-", "b-", "-", "c-"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithNext, false), (V{"a", "-b", "-", "-c", "-"}));
  EXPECT_EQ(split(SplitBehavior::kContiguous, false), (V{"a", "-", "b", "--", "c", "-"}));
  // Inverted: the gaps are the matches; each '-' match was its own span.
  EXPECT_EQ(split(SplitBehavior::kRemoved, true), (V{"-", "-", "-", "-"}));
  // \p{L} is Unicode-aware (UCP): Greek letters are one word, digits apart.
  Regex words(R"(\p{L}+|\p{N}+)", false, "test");
  std::vector<std::string> out;
  SplitByRegex(words, SplitBehavior::kIsolated, false,
               "\xCE\xB1\xCE\xB2"
               "12 x",
               out);
  EXPECT_EQ(out, (V{"\xCE\xB1\xCE\xB2", "12", " ", "x"}));
}

TEST(ByteLevelBpe, Utf8LossyReplacesMaximalSubparts) {
  EXPECT_EQ(Utf8Lossy("ok"), "ok");
  EXPECT_EQ(Utf8Lossy("\xE2\x82"), "\xEF\xBF\xBD");  // truncated 3-byte: one U+FFFD
  EXPECT_EQ(Utf8Lossy("\xE2\x82"
                      "a"),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(Utf8Lossy("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong: each byte
  EXPECT_EQ(Utf8Lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(Utf8Lossy("\xF0\x9F\x99\x82"), "\xF0\x9F\x99\x82");
}

TEST(ByteLevelBpe, BadFilesNameTheField) {
  auto load = [](const json& j) { return [j] { LoadHfTokenizer(WriteJson(j)); }; };
  Synth s = MakeSynth();
  json bad = s.root;
  bad["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(?i:'s|[";
  ExpectError(load(bad), {"tokenizer.json", "pre_tokenizer.pretokenizers[0].pattern", "bad regex"});
  bad = s.root;
  bad["pre_tokenizer"]["pretokenizers"][1]["type"] = "Whitespace";
  ExpectError(load(bad), {"pre_tokenizer.pretokenizers[1].type", "Whitespace"});
  bad = s.root;
  bad["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways";
  ExpectError(load(bad), {"pre_tokenizer.pretokenizers[0].behavior"});
  bad = s.root;
  bad["model"].erase("merges");
  ExpectError(load(bad), {"model.merges", "missing"});
  bad = s.root;
  bad["model"]["merges"].push_back("q \xE2\x82\xAC");
  ExpectError(load(bad), {"model.merges[8]", "not in model.vocab"});
  bad = s.root;
  bad["normalizer"] = {{"type", "NFKD"}};
  ExpectError(load(bad), {"normalizer.type", "NFKD"});
  bad = s.root;
  bad["post_processor"] = {{"type", "RobertaProcessing"}};
  ExpectError(load(bad), {"post_processor.type"});
  bad = s.root;
  bad["added_tokens"][1]["single_word"] = true;
  ExpectError(load(bad), {"added_tokens[1].single_word"});
}

TEST(ByteLevelBpe, TokenizerConfigDecidesBos) {
  Synth s = MakeSynth();
  const std::string path = WriteJson(s.root);
  WriteFile(std::filesystem::path(path).parent_path() / "tokenizer_config.json",
            R"({"add_bos_token": false, "eos_token": "<mask>"})");
  auto tok = LoadHfTokenizer(path);
  EXPECT_FALSE(tok->add_bos_default());
  EXPECT_EQ(tok->eos_id(), s.root["added_tokens"][1]["id"].get<int>());
}

// ---------------------------------------------------------------------------
// GGUF "gpt2": the HF tokenizer exported through the GGUF writer and read back.
std::string WriteGgufWith(const Tokenizer& tok, const std::string& name) {
  ModelConfig c = TinyTestConfig();
  c.dim = 32;
  c.hidden_dim = 32;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 2;
  c.vocab_size = tok.vocab_size();
  Model m = MakeSyntheticModel(c, 1);
  const std::string path = TempDir() + "/" + name + ".gguf";
  WriteGguf(m, tok, path);
  return path;
}

TEST(GgufBpe, SyntheticRoundTripThroughGgufWriter) {
  Synth s = MakeSynth(true, /*gguf_compatible=*/true);
  auto hf = LoadHfTokenizer(WriteJson(s.root));
  const std::string path = WriteGgufWith(*hf, "synth-bpe");
  auto gg = LoadGgufTokenizer(path);
  EXPECT_EQ(gg->kind(), "gguf-bpe");
  for (const char* text : {"the the 12345 aaa xyz", "caf\xC3\xA9 e\xCC\x81!", "the<|bos|>x  <mask>xyz"})
    EXPECT_EQ(gg->Encode(text, false), hf->Encode(text, false)) << text;
  std::string why;
  EXPECT_TRUE(SameVocabulary(*hf, *gg, &why)) << why;
  // LoadGguf (weights too) gives the same tokenizer and the model's BOS/EOS.
  LoadedModel lm = LoadGguf(path);
  EXPECT_EQ(lm.tokenizer->Encode("the the", true), hf->Encode("the the", true));
  // A pipeline no llama.cpp pre-tokenizer name describes (NFC with llama-bpe's regex
  // and no ignore_merges) is refused rather than written as something else.
  auto nfc = LoadHfTokenizer(WriteJson(MakeSynth().root));
  ExpectError([&] { WriteGgufWith(*nfc, "nfc"); }, {"nfc.gguf", "tokenizer.ggml.pre"});
}

TEST(GgufBpe, BadVocabulariesNameTheKey) {
  Vocab v;
  v.model = "gpt2";
  for (int b = 0; b < 256; ++b) v.pieces.push_back(ByteToChar(static_cast<unsigned char>(b)));
  v.pieces.push_back("he");
  v.scores.assign(v.pieces.size(), 0);
  v.types.assign(v.pieces.size(), TokenType::Normal);
  v.merges = {"h e"};
  v.pre = "llama-bpe";
  EXPECT_EQ(MakeGgufBpeTokenizer(v, "f.gguf", std::nullopt)->Encode("the", false), (std::vector<int>{'t', 256}));
  Vocab bad = v;
  bad.pre = "falcon";
  ExpectError([&] { MakeGgufBpeTokenizer(bad, "f.gguf", std::nullopt); }, {"f.gguf", "tokenizer.ggml.pre", "falcon"});
  bad.pre = "";
  ExpectError([&] { MakeGgufBpeTokenizer(bad, "f.gguf", std::nullopt); }, {"tokenizer.ggml.pre", "missing"});
  bad = v;
  bad.merges.clear();
  ExpectError([&] { MakeGgufBpeTokenizer(bad, "f.gguf", std::nullopt); }, {"f.gguf", "tokenizer.ggml.merges"});
  bad = v;
  bad.merges = {"h q"};
  ExpectError([&] { MakeGgufBpeTokenizer(bad, "f.gguf", std::nullopt); }, {"tokenizer.ggml.merges[0]"});
  bad.merges = {"he"};
  ExpectError([&] { MakeGgufBpeTokenizer(bad, "f.gguf", std::nullopt); }, {"tokenizer.ggml.merges[0]"});
}

// ---------------------------------------------------------------------------
TEST(SameVocabulary, ComparesPiecesNotOnlySizes) {
  Synth s = MakeSynth();
  auto a = LoadHfTokenizer(WriteJson(s.root));
  json other = s.root;
  other["model"]["ignore_merges"] = true;  // same table, other pipeline
  auto b = LoadHfTokenizer(WriteJson(other));
  std::string why;
  EXPECT_TRUE(SameVocabulary(*a, *b, &why)) << why;
  // Same size, one piece renamed.
  json renamed = s.root;
  renamed["model"]["vocab"].erase(ByteLevelEncode("xyz"));
  renamed["model"]["vocab"][ByteLevelEncode("xyw")] = s.Id("xyz");
  auto c = LoadHfTokenizer(WriteJson(renamed));
  ASSERT_EQ(a->vocab_size(), c->vocab_size());
  EXPECT_FALSE(SameVocabulary(*a, *c, &why));
  EXPECT_NE(why.find(fmt::format("first id {}", s.Id("xyz"))), std::string::npos) << why;
  // Different sizes.
  auto d = MakeScoreBpeTokenizer(SyntheticVocab(300));
  EXPECT_FALSE(SameVocabulary(*a, *d, &why));
  EXPECT_NE(why.find("tokens"), std::string::npos) << why;
}

// The speculative decoder compares a separate draft's token table, not only its size: a
// draft with another table of the same size is a cross-tokenizer draft (greedy only).
TEST(SameVocabulary, AssistedDecoderTreatsAnotherTokenTableAsAnotherTokenizer) {
  Synth s = MakeSynth();
  json renamed = s.root;
  renamed["model"]["vocab"].erase(ByteLevelEncode("xyz"));
  renamed["model"]["vocab"][ByteLevelEncode("xyw")] = s.Id("xyz");
  std::shared_ptr<const Tokenizer> tok = LoadHfTokenizer(WriteJson(s.root));
  ModelConfig c = TinyTestConfig();
  c.vocab_size = tok->vocab_size();
  LoadedModel target{"target", std::make_shared<Model>(MakeSyntheticModel(c, 1)), tok};
  LoadedModel draft{"draft", std::make_shared<Model>(MakeSyntheticModel(c, 2)), LoadHfTokenizer(WriteJson(renamed))};
  DecoderOptions o;
  o.kind = DecoderKind::Speculative;
  o.sampling.temperature = 0.7f;
  ExpectError([&] { MakeDecoder(target, o, draft); }, {"draft 'draft'", "another tokenizer", "greedy"});
  draft.tokenizer = LoadHfTokenizer(WriteJson(s.root));
  EXPECT_NO_THROW(MakeDecoder(target, o, draft));
}

// ---------------------------------------------------------------------------
// Reference encodings (../shared/fixtures/tokenizers/*/reference.jsonl).
std::string FixturesDir() {
  const std::string models = SharedModelsDir();
  if (models.empty()) return "";
  const auto dir = std::filesystem::path(models).parent_path() / "fixtures" / "tokenizers";
  return std::filesystem::is_directory(dir) ? dir.string() : "";
}

struct Reference {
  std::string text, decoded;
  std::vector<int> ids, ids_with_special;
};
std::vector<Reference> ReadReference(const std::string& path) {
  std::vector<Reference> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    if (line.empty()) continue;
    json j = json::parse(line);
    out.push_back({j["text"], j["decoded_no_cleanup"], j["ids"], j["ids_with_special"]});
  }
  return out;
}

// Lines whose ids and decoding both match; every mismatch is reported.
int CountMatches(const Tokenizer& tok, const std::vector<Reference>& ref, const std::string& what) {
  int matched = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const Reference& r = ref[i];
    std::vector<int> ids = tok.Encode(r.text, false);
    EXPECT_EQ(ids, r.ids) << what << " line " << i + 1 << ": " << r.text;
    EXPECT_EQ(tok.Encode(r.text, tok.add_bos_default()), r.ids_with_special) << what << " line " << i + 1;
    std::string decoded = tok.Decode(r.ids, Specials::kKeep);
    EXPECT_EQ(decoded, r.decoded) << what << " line " << i + 1;
    matched += ids == r.ids && decoded == r.decoded;
  }
  return matched;
}

class ReferenceFixtures : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceFixtures, TokenizerJsonReproducesEveryLine) {
  const std::string dir = FixturesDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/fixtures/tokenizers not found";
  const std::string name = GetParam();
  auto tok = LoadTokenizer(dir + "/" + name);  // a folder with only the tokenizer files
  const auto ref = ReadReference(dir + "/" + name + "/reference.jsonl");
  ASSERT_GT(ref.size(), 200u);
  const int matched = CountMatches(*tok, ref, name);
  EXPECT_EQ(matched, static_cast<int>(ref.size()));
  std::printf("[ reference ] %s tokenizer.json: %d of %zu lines match\n", name.c_str(), matched, ref.size());
}

TEST_P(ReferenceFixtures, GgufGpt2ReproducesEveryLine) {
  const std::string dir = FixturesDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/fixtures/tokenizers not found";
  const std::string name = GetParam();
  auto hf = LoadTokenizer(dir + "/" + name);
  const std::string path = WriteGgufWith(*hf, name);
  auto gg = LoadGgufTokenizer(path);
  std::string why;
  EXPECT_TRUE(SameVocabulary(*hf, *gg, &why)) << why;
  const auto ref = ReadReference(dir + "/" + name + "/reference.jsonl");
  // ids_with_special follows the HF config (no BOS); llama-bpe GGUFs add BOS as
  // llama.cpp does unless the file says otherwise, and ours say what the HF one does.
  const int matched = CountMatches(*gg, ref, name + " gguf");
  EXPECT_EQ(matched, static_cast<int>(ref.size()));
  std::printf("[ reference ] %s GGUF gpt2: %d of %zu lines match\n", name.c_str(), matched, ref.size());
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, ReferenceFixtures, ::testing::Values("llama3", "qwen3"));

// ---------------------------------------------------------------------------
// llama2.c checkpoint + SentencePiece tokenizer.model beside it.
std::string Llama2cZeros(int vocab) {
  const int dim = 8, hid = 16, L = 1, heads = 2, T = 4, hd = dim / heads;
  int32_t h[7] = {dim, hid, L, heads, heads, vocab, T};
  size_t floats = size_t(vocab) * dim + L * (2 * dim + 4 * dim * dim + 3 * dim * hid) + dim + 2 * T * (hd / 2);
  std::string out(reinterpret_cast<const char*>(h), sizeof h);
  out.append(floats * sizeof(float), '\0');
  return out;
}

TEST(Llama2cSentencePiece, MissingTokenizerNamesTheFiles) {
  const std::string dir = TempDir() + "/l2c-none";
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/stories.bin", Llama2cZeros(300));
  ExpectError([&] { LoadModel(dir + "/stories.bin"); }, {dir, "tokenizer.model", "stories.model"});
}

TEST(Llama2cSentencePiece, LoadsTokenizerModelBesideTheCheckpoint) {
  const std::string models = SharedModelsDir();
  const std::string spm = models + "/llama2-tokenizer/tokenizer.model";
  if (models.empty() || !std::filesystem::exists(spm)) GTEST_SKIP() << "llama2-tokenizer/tokenizer.model not found";
  auto ref = LoadSentencePieceTokenizer(spm);
  for (const std::string name : {"tokenizer.model", "stories.model"}) {
    const std::string dir = TempDir() + "/l2c-" + name;
    std::filesystem::create_directories(dir);
    WriteFile(dir + "/stories.bin", Llama2cZeros(ref->vocab_size()));
    std::filesystem::copy_file(spm, dir + "/" + name);
    LoadedModel lm = LoadModel(dir + "/stories.bin");
    EXPECT_EQ(lm.tokenizer->kind(), "sentencepiece");
    EXPECT_EQ(lm.tokenizer->Encode("Hello world", true), ref->Encode("Hello world", true));
    EXPECT_EQ(lm.model->source.files.back(), dir + "/" + name);
    auto only = LoadTokenizer(dir);  // tokenize command path: no weights
    EXPECT_TRUE(SameVocabulary(*only, *ref));
  }
  // The llama2.c tokenizer.bin of the same vocabulary has the same token table.
  if (std::filesystem::exists(models + "/llama2-tokenizer/tokenizer.bin")) {
    auto b = LoadLlama2cTokenizer(models + "/llama2-tokenizer/tokenizer.bin", ref->vocab_size());
    std::string why;
    EXPECT_TRUE(SameVocabulary(*b, *ref, &why)) << why;
  }
}

// ---------------------------------------------------------------------------
TEST(TokenizeCommand, JsonPerLineFromATokenizerFolder) {
  Synth s = MakeSynth();
  const std::string path = WriteJson(s.root);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  WriteFile(dir + "/in.txt", "the the\n12345\n");
  auto r = RunCli({"tokenize", "--model", dir, "--file", dir + "/in.txt", "--json", "--decode"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> lines;
  std::istringstream ss(r.out);
  for (std::string line; std::getline(ss, line);) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const int bos = s.root["added_tokens"][0]["id"];
  EXPECT_EQ(lines[0]["ids"], (std::vector<int>{bos, s.Id("the"), s.Id(" "), s.Id("the")}));
  EXPECT_EQ(lines[0]["decoded"], "<|bos|>the the");
  EXPECT_EQ(lines[1]["text"], "12345");
  r = RunCli({"tokenize", "--model", dir, "--text", "the", "--no-bos"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, fmt::format("{}\n", s.Id("the")));
  r = RunCli({"tokenize", "--model", dir});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--text or --file"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace specsweep
