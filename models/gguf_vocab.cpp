// The tokenizer of a GGUF file: its tokenizer.ggml.* vocabulary, checked, as a
// SentencePiece-score or byte-level BPE tokenizer.
#include <optional>
#include <string>

#include "base/error.h"
#include "models/gguf.h"
#include "models/gguf_meta.h"
#include "models/limits.h"
#include "models/loader.h"
#include "models/mapped_file.h"

namespace specsweep {
namespace gguf_detail {

Vocab ReadVocab(const Meta& meta, const std::string& file) {
  std::string model = meta.String("tokenizer.ggml.model");
  if (model != "llama" && model != "gpt2")
    Fail("{}: tokenizer.ggml.model: {} is not supported (SentencePiece 'llama' or byte-level BPE 'gpt2')", file,
         Quoted(model));
  Vocab v;
  v.model = model;
  if (model == "gpt2") {
    v.pre = meta.Find("tokenizer.ggml.pre") ? meta.String("tokenizer.ggml.pre") : "";
    const auto* merges = meta.Array("tokenizer.ggml.merges", GgufValueType::STRING, false);
    if (!merges) Fail("{}: tokenizer.ggml.merges: required key is missing (a gpt2 vocabulary needs merges)", file);
    v.merges.reserve(merges->size());
    for (const auto& m : *merges) v.merges.push_back(m.s);
  }
  const auto& tokens = *meta.Array("tokenizer.ggml.tokens", GgufValueType::STRING, true);
  if (tokens.empty()) Fail("{}: tokenizer.ggml.tokens: empty vocabulary", file);
  const size_t n = tokens.size();
  for (const auto& t : tokens) v.pieces.push_back(t.s);
  // llama.cpp treats missing scores as 0 and missing types as normal.
  v.scores.assign(n, 0.0f);
  v.types.assign(n, TokenType::Normal);
  if (auto* s = meta.Array("tokenizer.ggml.scores", GgufValueType::F32, false)) {
    if (s->size() != n) Fail("{}: tokenizer.ggml.scores: {} scores for {} tokens", file, s->size(), n);
    for (size_t k = 0; k < n; ++k) v.scores[k] = static_cast<float>((*s)[k].f);
  }
  if (auto* t = meta.Array("tokenizer.ggml.token_type", GgufValueType::I32, false)) {
    if (t->size() != n) Fail("{}: tokenizer.ggml.token_type: {} types for {} tokens", file, t->size(), n);
    for (size_t k = 0; k < n; ++k) {
      int64_t x = (*t)[k].i;
      if (x < 0 || x > 6) Fail("{}: tokenizer.ggml.token_type: token {} has unknown type {}", file, k, x);
      v.types[k] = x == 0 ? TokenType::Normal : static_cast<TokenType>(x);  // 0 = undefined
    }
  }
  auto id = [&](const char* key, int dflt) {
    int x = meta.Int(key, dflt);
    if (x < 0 || static_cast<size_t>(x) >= n) Fail("{}: {}: {} is outside the vocabulary ({})", file, key, x, n);
    return x;
  };
  v.bos_id = id("tokenizer.ggml.bos_token_id", 1);
  v.eos_id = id("tokenizer.ggml.eos_token_id", 2);
  v.unk_id = id("tokenizer.ggml.unknown_token_id", 0);
  return v;
}

namespace {

std::optional<bool> ReadAddBos(const Meta& meta, const std::string& file) {
  const GgufValue* v = meta.Find("tokenizer.ggml.add_bos_token");
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::BOOL) Fail("{}: tokenizer.ggml.add_bos_token: expected a bool", file);
  return v->u != 0;
}

}  // namespace

// The tokenizer of the file. llama.cpp's converter fills embedding rows past the
// tokenizer's ids (Qwen2.5 pads to a multiple of 128) with "[PAD<id>]" pieces; those are
// not tokens, and are dropped here as the HF loader drops the rows (DropPaddingRows), so
// an HF folder and a GGUF file of one model have the same vocabulary.
std::unique_ptr<Tokenizer> MakeTokenizer(const Meta& meta, Vocab vocab, const std::string& file) {
  while (!vocab.pieces.empty() && vocab.pieces.back() == fmt::format("[PAD{}]", vocab.pieces.size() - 1) &&
         (vocab.types.back() == TokenType::Unused || vocab.types.back() == TokenType::UserDefined)) {
    vocab.pieces.pop_back();
    vocab.scores.pop_back();
    vocab.types.pop_back();
  }
  if (vocab.model == "gpt2") return MakeGgufBpeTokenizer(vocab, file, ReadAddBos(meta, file));
  return MakeScoreBpeTokenizer(std::move(vocab));
}

}  // namespace gguf_detail

std::unique_ptr<Tokenizer> LoadGgufTokenizer(const std::string& path) {
  using namespace gguf_detail;
  MappedFile mf(path);
  const GgufHeader h = ParseGgufHeader(mf.data(), mf.size(), path);
  const Meta meta(h, path);
  return MakeTokenizer(meta, ReadVocab(meta, path), path);
}

}  // namespace specsweep
