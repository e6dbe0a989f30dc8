// Tokenizers: synthetic vocabularies (always run) and the shared real files
// (skipped when SharedModelsDir() is "").
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "base/error.h"
#include "models/tokenizer.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using ::specsweep::testing::SharedModelsDir;
using ::specsweep::testing::TempDir;
using ::specsweep::testing::WriteFile;

const std::string kMeta = "\xE2\x96\x81";  // "▁"

// Ordinary English with punctuation, digits, newlines and non-ASCII UTF-8.
const std::vector<std::string> kRoundTripTexts = {
    "Once upon a time, there was a little girl named Lily.",
    "She said: \"Let's go!\" and ran 3.5 km (about 2 miles) in 20 minutes.\nThe end.\n",
    "  Leading spaces,\ttabs and trailing spaces  ",
    "café – naïve résumé, 東京, emoji 🙂!",
    "Line one\n\nLine three? 100% sure; 1+1=2 & x<y.",
};

// Expects `f` to throw Error whose message contains `needle` (the file/field).
template <typename F>
void ExpectError(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown, expected one mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "multi-line: " << e.what();
  }
}

// ---------------------------------------------------------------------------
// Synthetic SPM-style vocabulary: <unk> <s> </s>, 256 byte pieces, then pieces.
struct SynthPiece {
  std::string piece;
  float score;
};
const std::vector<SynthPiece> kSynth = {
    {kMeta, 0},         {"a", 0},          {"b", 0},          {"c", 0},    // 259..262
    {"ab", -1},         {kMeta + "a", -2}, {"abc", -0.5f},    {"aa", -4},  // 263..266
    {kMeta + "ab", -3}, {"c" + kMeta, -5}, {kMeta + "c", -6},              // 267..269
};
constexpr int kByte0 = 3, kMetaId = 259, kAb = 263, kMetaA = 264, kAbc = 265, kAa = 266, kMetaAb = 267;

Vocab SynthVocab() {
  Vocab v;
  v.pieces = {"<unk>", "<s>", "</s>"};
  v.types = {TokenType::Unknown, TokenType::Control, TokenType::Control};
  v.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    v.pieces.push_back(fmt::format("<0x{:02X}>", b));
    v.types.push_back(TokenType::Byte);
    v.scores.push_back(0);
  }
  for (auto& p : kSynth) {
    v.pieces.push_back(p.piece);
    v.types.push_back(TokenType::Normal);
    v.scores.push_back(p.score);
  }
  return v;
}

// The same vocabulary in llama2.c tokenizer.bin format (spaces, "\n<s>\n").
std::string SynthTokenizerBin() {
  Vocab v = SynthVocab();
  std::string out(4, '\0');
  int32_t max_len = 0;
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    std::string p = v.pieces[i];
    for (size_t k; (k = p.find(kMeta)) != std::string::npos;) p = p.substr(0, k) + ' ' + p.substr(k + kMeta.size());
    if (i == 1) p = "\n<s>\n";
    if (i == 2) p = "\n</s>\n";
    int32_t len = static_cast<int32_t>(p.size());
    max_len = std::max(max_len, len);
    out.append(reinterpret_cast<const char*>(&v.scores[i]), 4);
    out.append(reinterpret_cast<const char*>(&len), 4);
    out += p;
  }
  std::memcpy(out.data(), &max_len, 4);
  return out;
}

// run.c's encode loop verbatim (rescan all pairs each step), over piece strings.
std::vector<int> NaiveScoreBpe(const Vocab& v, const std::string& text) {
  std::map<std::string, int> lut;
  for (size_t i = 0; i < v.pieces.size(); ++i)
    if (v.types[i] == TokenType::Normal) lut.emplace(v.pieces[i], static_cast<int>(i));
  std::string norm = kMeta;
  for (char c : text) norm += c == ' ' ? kMeta : std::string(1, c);
  std::vector<int> t;
  for (size_t i = 0; i < norm.size();) {
    size_t len = 1;
    while (len < 4 && i + len < norm.size() && (norm[i + len] & 0xC0) == 0x80) ++len;
    auto it = lut.find(norm.substr(i, len));
    if (it != lut.end())
      t.push_back(it->second);
    else
      for (size_t k = 0; k < len; ++k) t.push_back(static_cast<unsigned char>(norm[i + k]) + 3);
    i += len;
  }
  for (;;) {
    float best = -1e10f;
    int best_i = -1, best_id = -1;
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      auto it = lut.find(v.pieces[t[i]] + v.pieces[t[i + 1]]);
      if (it != lut.end() && v.scores[it->second] > best) {
        best = v.scores[it->second];
        best_i = static_cast<int>(i);
        best_id = it->second;
      }
    }
    if (best_i < 0) break;
    t[best_i] = best_id;
    t.erase(t.begin() + best_i + 1);
  }
  return t;
}

TEST(ScoreBpe, SyntheticKnownEncodings) {
  auto tok = MakeScoreBpeTokenizer(SynthVocab());
  EXPECT_EQ(tok->kind(), "llama2c");
  EXPECT_EQ(tok->vocab_size(), 270);
  // [▁ a b]: ab (-1) beats ▁a (-2); then ▁ab (-3).
  EXPECT_EQ(tok->Encode("ab", true), (std::vector<int>{1, kMetaAb}));
  // [▁ a b c]: ab, then abc (-0.5) beats ▁ab (-3).
  EXPECT_EQ(tok->Encode("abc", false), (std::vector<int>{kMetaId, kAbc}));
  // ▁a first, then equal-score aa pairs merge leftmost first.
  EXPECT_EQ(tok->Encode("aaaaa", false), (std::vector<int>{kMetaA, kAa, kAa}));
  // é is not a piece: its two bytes, id = byte + 3.
  EXPECT_EQ(tok->Encode("\xC3\xA9", false), (std::vector<int>{kMetaId, kByte0 + 0xC3, kByte0 + 0xA9}));
  EXPECT_EQ(tok->Encode("", true), (std::vector<int>{1}));
  EXPECT_TRUE(tok->Encode("", false).empty());
  EXPECT_EQ(tok->Decode(std::vector<int>{1, kMetaAb, kMetaId, kAbc, 2}), "ab abc");
  EXPECT_EQ(tok->Decode(std::vector<int>{kByte0 + 0xC3, kByte0 + 0xA9}), "\xC3\xA9");
  EXPECT_THROW(tok->Decode(std::vector<int>{270}), Error);
  EXPECT_THROW(tok->Decode(std::vector<int>{-1}), Error);
}

TEST(ScoreBpe, UserDefinedPiecesMatchVerbatim) {
  Vocab v = SynthVocab();
  v.pieces.push_back("<tag>");
  v.scores.push_back(0);
  v.types.push_back(TokenType::UserDefined);
  auto tok = MakeScoreBpeTokenizer(v);
  // Without the verbatim match '<', 't', ... would be byte pieces.
  EXPECT_EQ(tok->Encode("ab<tag>c", false), (std::vector<int>{kMetaAb, 270, 262}));
  EXPECT_EQ(tok->Decode(tok->Encode("ab<tag>c", true)), "ab<tag>c");
}

TEST(ScoreBpe, MatchesNaiveRunCLoopOnRandomText) {
  Vocab v = SynthVocab();
  auto tok = MakeScoreBpeTokenizer(v);
  std::mt19937 rng(7);
  const char alphabet[] = "abc d\n";
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    int len = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < len; ++i) text += alphabet[rng() % 6];
    EXPECT_EQ(tok->Encode(text, false), NaiveScoreBpe(v, text)) << "text: " << text;
    EXPECT_EQ(tok->Decode(tok->Encode(text, true)), text);
  }
}

TEST(ScoreBpe, Llama2cFileMatchesVocabAndExportsGgufConvention) {
  std::string dir = TempDir();
  WriteFile(dir + "/tok.bin", SynthTokenizerBin());
  auto bin = LoadLlama2cTokenizer(dir + "/tok.bin", 270);
  auto all = LoadLlama2cTokenizer(dir + "/tok.bin", 0);  // read to EOF
  auto mem = MakeScoreBpeTokenizer(SynthVocab());
  EXPECT_EQ(all->vocab_size(), 270);
  EXPECT_EQ(bin->bos_id(), 1);
  EXPECT_EQ(bin->eos_id(), 2);
  EXPECT_TRUE(bin->add_bos_default());
  for (const std::string t : {"ab", "abc aa c", "a b c\n\xC3\xA9", " lead", "caab  cab"}) {
    EXPECT_EQ(bin->Encode(t, true), mem->Encode(t, true)) << t;
    EXPECT_EQ(bin->Decode(bin->Encode(t, true)), t);
  }
  Vocab ex = bin->ExportVocab(), ref = SynthVocab();
  EXPECT_EQ(ex.pieces, ref.pieces);  // spaces -> ▁, "\n<s>\n" -> "<s>"
  EXPECT_EQ(ex.scores, ref.scores);
  EXPECT_EQ(ex.types, ref.types);
  EXPECT_EQ(ex.bos_id, 1);
  EXPECT_EQ(ex.eos_id, 2);
  EXPECT_EQ(ex.unk_id, 0);
  std::filesystem::remove_all(dir);
}

TEST(ScoreBpe, BadVocabularies) {
  Vocab v = SynthVocab();
  v.scores.pop_back();
  ExpectError([&] { MakeScoreBpeTokenizer(v); }, "vocab: scores");
  v = SynthVocab();
  v.bos_id = 999;
  ExpectError([&] { MakeScoreBpeTokenizer(v); }, "vocab: bos_id");
  v = SynthVocab();
  v.types[3] = TokenType::Byte;
  v.pieces[3] = "<0xZZ>";
  ExpectError([&] { MakeScoreBpeTokenizer(v); }, "vocab: pieces");
}

TEST(ScoreBpe, BadTokenizerBinFiles) {
  std::string dir = TempDir();
  const std::string good = SynthTokenizerBin();
  auto load = [&](const std::string& bytes, int n) {
    WriteFile(dir + "/bad.bin", bytes);
    return LoadLlama2cTokenizer(dir + "/bad.bin", n);
  };
  ExpectError([&] { LoadLlama2cTokenizer(dir + "/missing.bin", 270); }, dir + "/missing.bin: cannot open");
  ExpectError([&] { load(good.substr(0, 2), 270); }, "bad.bin: max_token_length");
  ExpectError([&] { load(good.substr(0, good.size() - 1), 270); }, "token 269: piece of");
  ExpectError([&] { load(good.substr(0, good.size() - 5), 270); }, "token 269: score/len truncated");
  ExpectError([&] { load(good, 271); }, "bad.bin: token 270");
  std::string neg = good;
  int32_t bad_len = -5;
  std::memcpy(neg.data() + 4 + 4, &bad_len, 4);  // token 0's len
  ExpectError([&] { load(neg, 270); }, "bad.bin: token 0: len -5");
  std::string huge = good;
  bad_len = 1 << 30;
  std::memcpy(huge.data() + 4 + 4, &bad_len, 4);
  ExpectError([&] { load(huge, 270); }, "token 0: len 1073741824");
  std::string zero_max = good;
  std::memset(zero_max.data(), 0, 4);
  ExpectError([&] { load(zero_max, 270); }, "bad.bin: max_token_length: 0");
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------
// Synthetic HF tokenizer.json: chars + bytes, merges in both spellings.
std::string SynthHfJson(const std::string& normalizer, const std::string& model_type = "BPE",
                        const std::string& pre_tokenizer = "null") {
  std::string vocab = R"("<unk>": 0, "<s>": 1, "</s>": 2, "<|sep|>": 3)";
  int id = 4;
  for (int b = 0; b < 256; ++b) vocab += fmt::format(R"(, "<0x{:02X}>": {})", b, id++);
  for (const std::string& p : std::vector<std::string>{kMeta, "a", "b", "c", "a" + kMeta, "ab", kMeta + "ab", "aa"})
    vocab += fmt::format(R"(, "{}": {})", p, id++);
  return fmt::format(R"({{
  "version": "1.0",
  "added_tokens": [
    {{"id": 0, "content": "<unk>", "special": true, "normalized": false}},
    {{"id": 1, "content": "<s>", "special": true, "normalized": false}},
    {{"id": 2, "content": "</s>", "special": true, "normalized": false}},
    {{"id": 3, "content": "<|sep|>", "special": true, "normalized": true}}
  ],
  "normalizer": {},
  "pre_tokenizer": {},
  "post_processor": {{"type": "TemplateProcessing", "single": [{{"SpecialToken": {{"id": "<s>", "type_id": 0}}}},
                     {{"Sequence": {{"id": "A", "type_id": 0}}}}]}},
  "decoder": {{"type": "Sequence", "decoders": [
    {{"type": "Replace", "pattern": {{"String": "{}"}}, "content": " "}},
    {{"type": "ByteFallback"}}, {{"type": "Fuse"}},
    {{"type": "Strip", "content": " ", "start": 1, "stop": 0}}]}},
  "model": {{"type": "{}", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
    "vocab": {{{}}},
    "merges": ["a b", ["{}", "ab"], "a {}", "a a"]}}
}})",
                     normalizer, pre_tokenizer, kMeta, model_type, vocab, kMeta, kMeta);
}
const std::string kPrependReplace = R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": ")" + kMeta +
                                    R"("}, {"type": "Replace", "pattern": {"String": " "}, "content": ")" + kMeta +
                                    R"("}]})";
// Ids in SynthHfJson: bytes 4..259, then ▁ 260, a 261, b 262, c 263, a▁ 264, ab 265, ▁ab 266, aa 267.
constexpr int kHfByte0 = 4, kHfMeta = 260, kHfA = 261, kHfC = 263, kHfAMeta = 264, kHfAb = 265, kHfMetaAb = 266,
              kHfAa = 267;

TEST(HfBpe, SyntheticKnownEncodings) {
  std::string dir = TempDir();
  WriteFile(dir + "/tokenizer.json", SynthHfJson(kPrependReplace));
  auto tok = LoadHfTokenizer(dir + "/tokenizer.json");
  EXPECT_EQ(tok->kind(), "hf-bpe");
  EXPECT_EQ(tok->vocab_size(), 268);
  EXPECT_EQ(tok->bos_id(), 1);  // from the post_processor, no tokenizer_config.json
  EXPECT_TRUE(tok->add_bos_default());
  // "▁ab": rank 0 a+b, then rank 1 ▁+ab.
  EXPECT_EQ(tok->Encode("ab", true), (std::vector<int>{1, kHfMetaAb}));
  // "▁aab": a+b (rank 0) at index 2 beats a+a (rank 3) at index 1.
  EXPECT_EQ(tok->Encode("aab", false), (std::vector<int>{kHfMeta, kHfA, kHfAb}));
  // "▁a▁a": a+▁ (rank 2) merges; "▁" + "a▁" + "a".
  EXPECT_EQ(tok->Encode("a a", false), (std::vector<int>{kHfMeta, kHfAMeta, kHfA}));
  EXPECT_EQ(tok->Encode("aaaa", false), (std::vector<int>{kHfMeta, kHfAa, kHfAa}));
  // Byte fallback for é (C3 A9).
  EXPECT_EQ(tok->Encode("c\xC3\xA9", false), (std::vector<int>{kHfMeta, kHfC, kHfByte0 + 0xC3, kHfByte0 + 0xA9}));
  // Non-normalized specials match raw text; normalized ones match the normalized
  // content "▁<|sep|>" (HF semantics), i.e. at the start or after a space.
  EXPECT_EQ(tok->Encode("ab</s>ab", false), (std::vector<int>{kHfMetaAb, 2, kHfMetaAb}));
  EXPECT_EQ(tok->Encode("<|sep|>ab", false), (std::vector<int>{3, kHfAb}));
  EXPECT_EQ(tok->Encode("c <|sep|>", false), (std::vector<int>{kHfMeta, kHfC, 3}));
  EXPECT_EQ(tok->Decode(std::vector<int>{1, kHfMetaAb, kHfMeta, kHfAMeta, 2}), "ab a ");
  for (const std::string& t : kRoundTripTexts) EXPECT_EQ(tok->Decode(tok->Encode(t, true)), t);
  EXPECT_THROW(tok->Decode(std::vector<int>{268}), Error);

  Vocab ex = tok->ExportVocab();
  EXPECT_EQ(ex.pieces.size(), 268u);
  EXPECT_EQ(ex.types[kHfByte0 + 0x41], TokenType::Byte);
  EXPECT_EQ(ex.types[1], TokenType::Control);
  EXPECT_EQ(ex.types[0], TokenType::Unknown);
  EXPECT_GT(ex.scores[kHfAb], ex.scores[kHfMetaAb]);  // rank 0 before rank 1
  std::filesystem::remove_all(dir);
}

TEST(HfBpe, TokenizerConfigAndUnknownCharacters) {
  std::string dir = TempDir();
  std::string json = SynthHfJson(kPrependReplace);
  // Without byte pieces: unknown characters become <unk>, consecutive ones fused.
  json.replace(json.find("\"byte_fallback\": true"), 21, "\"byte_fallback\": false");
  WriteFile(dir + "/tokenizer.json", json);
  WriteFile(dir + "/tokenizer_config.json",
            R"({"add_bos_token": false, "bos_token": {"content": "<|sep|>"}, "eos_token": "<s>"})");
  auto tok = LoadHfTokenizer(dir + "/tokenizer.json");
  EXPECT_FALSE(tok->add_bos_default());
  EXPECT_EQ(tok->bos_id(), 3);
  EXPECT_EQ(tok->eos_id(), 1);
  EXPECT_EQ(tok->Encode("a\xC3\xA9\xC3\xA9", false), (std::vector<int>{kHfMeta, kHfA, 0}));
  WriteFile(dir + "/tokenizer_config.json", R"({"bos_token": "<nope>"})");
  ExpectError([&] { LoadHfTokenizer(dir + "/tokenizer.json"); }, "tokenizer_config.json: bos_token");
  WriteFile(dir + "/tokenizer_config.json", "{not json");
  ExpectError([&] { LoadHfTokenizer(dir + "/tokenizer.json"); }, "tokenizer_config.json: invalid JSON");
  std::filesystem::remove_all(dir);
}

TEST(HfBpe, BadFiles) {
  std::string dir = TempDir();
  const std::string path = dir + "/tokenizer.json";
  auto load_json = [&](const std::string& text) {
    WriteFile(path, text);
    return LoadHfTokenizer(path);
  };
  ExpectError([&] { LoadHfTokenizer(dir + "/none.json"); }, dir + "/none.json: cannot open");
  ExpectError([&] { load_json("{\"model\": [1, 2"); }, path + ": invalid JSON");
  ExpectError([&] { load_json(SynthHfJson(kPrependReplace, "Unigram")); }, path + ": model.type");
  ExpectError([&] { load_json(SynthHfJson(R"({"type": "NFKC"})")); }, path + ": normalizer.type");
  ExpectError([&] { load_json(SynthHfJson(R"({"type": "Sequence", "normalizers": [{"type": "Lowercase"}]})")); },
              "normalizer.normalizers[0].type");
  ExpectError([&] { load_json(SynthHfJson(R"({"type": "Replace", "pattern": {"Regex": " +"}, "content": "x"})")); },
              "normalizer.pattern");
  ExpectError([&] { load_json(SynthHfJson("null", "BPE", R"({"type": "Whitespace"})")); }, "pre_tokenizer.type");
  std::string bad_merge = SynthHfJson("null");
  bad_merge.replace(bad_merge.find("\"a a\""), 5, "\"a q\"");
  ExpectError([&] { load_json(bad_merge); }, "model.merges[3]");
  ExpectError([&] { load_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})"); }, "model.merges: missing");
  ExpectError([&] { load_json(R"({"model": {"type": "BPE", "vocab": {"a": 1}, "merges": []}})"); },
              "model.vocab: id 0 has no piece");
  std::filesystem::remove_all(dir);
}

TEST(Spm, MissingAndCorruptFiles) {
  std::string dir = TempDir();
  ExpectError([&] { LoadSentencePieceTokenizer(dir + "/none.model"); }, dir + "/none.model: cannot open");
  WriteFile(dir + "/bad.model", "this is not a protobuf");
  ExpectError([&] { LoadSentencePieceTokenizer(dir + "/bad.model"); }, dir + "/bad.model: model");
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------
// Real files.
#define REQUIRE_SHARED()                        \
  const std::string models = SharedModelsDir(); \
  if (models.empty()) GTEST_SKIP() << "shared models directory not found"

// ~20 sentences for the tokenizer.bin vs tokenizer.model cross-check.
const std::vector<std::string> kSentences = {
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Once upon a time, there was a little girl named Lily.",
    "She loved to play outside in the park with her friends.",
    "It's 3:45 PM on Tuesday, 12 March 2024.",
    "Speculative decoding drafts tokens cheaply and verifies them in one batch.",
    "The price rose by 12.5% (from $40 to $45) overnight!",
    "\"Are you sure?\" he asked. \"Yes,\" she replied.",
    "Line one\nLine two\n\nLine four",
    "Tabs\tand   multiple   spaces",
    "  leading and trailing spaces  ",
    "café – naïve résumé",
    "Ünïcödé: 東京 and Москва and 🙂",
    "e-mail: someone@example.com, web: https://example.org/path?q=1&r=2",
    "int main() { return 0; }",
    "antidisestablishmentarianism supercalifragilisticexpialidocious",
    "Llama 2 is a family of large language models released in 2023.",
    "Wait... what?! No way!!!",
    "1234567890 0987654321",
    "The end.",
};

TEST(RealTokenizers, Llama2BinMatchesSentencePieceModel) {
  REQUIRE_SHARED();
  auto bin = LoadLlama2cTokenizer(models + "/llama2-tokenizer/tokenizer.bin", 32000);
  auto spm = LoadSentencePieceTokenizer(models + "/llama2-tokenizer/tokenizer.model");
  auto gguf = MakeScoreBpeTokenizer(spm->ExportVocab());      // SPM vocab as GGUF stores it
  auto bin_gguf = MakeScoreBpeTokenizer(bin->ExportVocab());  // llama2.c -> GGUF round trip
  EXPECT_EQ(spm->vocab_size(), 32000);
  EXPECT_EQ(spm->kind(), "sentencepiece");
  EXPECT_EQ(spm->bos_id(), 1);
  EXPECT_EQ(spm->eos_id(), 2);
  for (const std::string& s : kSentences) {
    std::vector<int> want = spm->Encode(s, true);
    EXPECT_EQ(bin->Encode(s, true), want) << s;
    EXPECT_EQ(gguf->Encode(s, true), want) << s;
    EXPECT_EQ(bin_gguf->Encode(s, true), want) << s;
    EXPECT_EQ(bin->Decode(want), s);
    EXPECT_EQ(spm->Decode(want), s);
    EXPECT_EQ(gguf->Decode(want), s);
  }
  // Exported vocabularies agree piece by piece (the GGUF writer may use either).
  Vocab a = bin->ExportVocab(), b = spm->ExportVocab();
  EXPECT_EQ(a.pieces, b.pieces);
  EXPECT_EQ(a.scores, b.scores);
  EXPECT_EQ(a.types, b.types);
  // Pinned from sentencepiece: "Hello world" = ▁Hello ▁world.
  EXPECT_EQ(bin->Encode("Hello world", true), (std::vector<int>{1, 15043, 3186}));
}

TEST(RealTokenizers, Stories260kKnownEncodings) {
  REQUIRE_SHARED();
  auto tok = LoadLlama2cTokenizer(models + "/tinystories-260k/tok512.bin", 512);
  EXPECT_EQ(tok->vocab_size(), 512);
  // Expected ids from a python3 transcription of run.c's encode() (rescanning all
  // pairs every step), run once over tok512.bin:
  //   python3 oracle.py -> 'Once upon a time, there was a little girl named Lily.'
  //   [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426]
  EXPECT_EQ(tok->Encode("Once upon a time, there was a little girl named Lily.", true),
            (std::vector<int>{1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426}));
  EXPECT_EQ(tok->Encode("She loved to play outside in the park!\nThe end.", true),
            (std::vector<int>{1,   338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322,
                              265, 282, 295, 433, 443, 13,  434, 260, 344, 264, 426}));
  // 'é' (485) and '–' (476) are pieces; 'ï' is not: bytes C3 AF -> 198, 178 (byte + 3).
  EXPECT_EQ(tok->Encode("café – naïve 42", true),
            (std::vector<int>{1, 280, 412, 431, 485, 410, 476, 297, 412, 198, 178, 360, 410, 484, 479}));
  for (const std::string& t : kRoundTripTexts) EXPECT_EQ(tok->Decode(tok->Encode(t, true)), t);
  EXPECT_EQ(tok->Decode(tok->Encode("Once upon a time", false)), "Once upon a time");
}

TEST(RealTokenizers, Stories656kKnownEncodings) {
  REQUIRE_SHARED();
  auto tok = LoadHfTokenizer(models + "/tinystories-656k/tokenizer.json");
  EXPECT_EQ(tok->vocab_size(), 2048);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->add_bos_default());
  // Expected ids from a python3 BPE written independently (lowest-rank pair found by
  // rescanning each step; normalizer Prepend+Replace; added tokens matched by their
  // normalized content), run once over tokenizer.json.
  EXPECT_EQ(tok->Encode("Once upon a time, there was a little girl named Lily.", true),
            (std::vector<int>{1, 80, 147, 201, 282, 215, 286, 598, 629, 10}));
  EXPECT_EQ(tok->Encode("One day, Tim saw a big dog named Max.", true),
            (std::vector<int>{1, 80, 299, 285, 614, 2047, 10}));
  EXPECT_EQ(tok->Encode("She loved to play outside in the park!\nThe end.", true),
            (std::vector<int>{1, 80, 892, 887, 1584, 872, 1254, 247, 183, 10}));
  // Specials: BOS/EOS in text become their ids; characters outside the vocabulary
  // (no byte pieces in this vocab) become fused <unk> (0).
  EXPECT_EQ(tok->Encode("The end. <|end_story|>", true), (std::vector<int>{1, 80, 247, 183, 10, 2}));
  EXPECT_EQ(tok->Encode("<|start_story|>Once upon a time", false), (std::vector<int>{1, 147, 201, 282, 57}));
  EXPECT_EQ(tok->Encode("café – naïve 42", true),
            (std::vector<int>{1, 80, 295, 58, 0, 80, 0, 80, 557, 0, 218, 15, 13}));
  // Round trip on text inside the vocabulary's character set (it has no '(', '&', ...).
  for (const std::string t : {"Once upon a time, there was a little girl named Lily.",
                              "\"Can I play?\" asked Tom. 'Yes!' said Mom: 12 toys; 3 balls.\nThe end.\n",
                              "  two leading spaces and trailing  "})
    EXPECT_EQ(tok->Decode(tok->Encode(t, true)), t);
  EXPECT_EQ(tok->Decode(std::vector<int>{1, 80, 247, 183, 10, 2}), "The end.");
  // The SPM-style export (scores from merge ranks) encodes these texts identically,
  // so a GGUF copy of this model keeps its tokenization.
  auto gguf = MakeScoreBpeTokenizer(tok->ExportVocab());
  for (const std::string t :
       {"Once upon a time, there was a little girl named Lily.", "One day, Tim saw a big dog named Max.",
        "She loved to play outside in the park!\nThe end.",
        "\"Can I have it?\" asked Sue. Mom said no, so she was sad."}) {
    EXPECT_EQ(gguf->Encode(t, true), tok->Encode(t, true)) << t;
    EXPECT_EQ(gguf->Decode(gguf->Encode(t, true)), t);
  }
}

TEST(RealTokenizers, SentencePieceRoundTrip) {
  REQUIRE_SHARED();
  auto tok = LoadSentencePieceTokenizer(models + "/llama2-tokenizer/tokenizer.model");
  for (const std::string& t : kRoundTripTexts) EXPECT_EQ(tok->Decode(tok->Encode(t, true)), t);
  EXPECT_TRUE(tok->add_bos_default());
  EXPECT_THROW(tok->Decode(std::vector<int>{32000}), Error);
}

}  // namespace
}  // namespace specsweep
