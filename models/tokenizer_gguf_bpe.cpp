// GGUF "gpt2" vocabularies -> BpeSpec. The file stores tokens, types and merges but
// not the pre-tokenizer: tokenizer.ggml.pre names it, and llama.cpp compiles the regex
// for each name in. We keep the same table (the regexes as llama.cpp spells them; its
// rewrite of HF's (?i:...) group into [sS] classes matches the same text).
#include <unordered_map>

#include "base/error.h"
#include "models/tokenizer.h"
#include "models/tokenizer_bpe.h"

namespace specsweep {
namespace {

struct PreTokenizerDef {
  const char* name;      // tokenizer.ggml.pre
  const char* regex;     // as llama.cpp applies it
  const char* hf_regex;  // as the model's tokenizer.json spells it
  bool ignore_merges;    // llama.cpp: llama-bpe looks whole words up first
  bool add_bos;          // default when tokenizer.ggml.add_bos_token is absent
  bool nfc;              // the HF tokenizer normalizes to NFC (Qwen)
};

constexpr PreTokenizerDef kPreTokenizers[] = {
    {"llama-bpe",
     R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     true, true, false},
    // llama.cpp applies no NFC for qwen2; Qwen's own tokenizer.json does, and the
    // model was trained on that, so we follow the model's tokenizer.
    {"qwen2",
     R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     false, false, true},
    {"gpt2", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
     R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", false, false, false},
};

const PreTokenizerDef* FindPre(const std::string& name) {
  // llama.cpp's aliases of llama-bpe.
  const std::string n = name == "llama3" || name == "llama-v3" ? "llama-bpe" : name;
  for (const auto& d : kPreTokenizers)
    if (n == d.name) return &d;
  return nullptr;
}

}  // namespace

std::string GgufPreFor(const BpeSpec& s) {
  // A GGUF stores only the name, so the whole pipeline must be what the name implies:
  // [NFC] Split(regex, Isolated) ByteLevel, the same ignore_merges, and added tokens
  // matched verbatim.
  const bool nfc = s.norm.size() == 1 && s.norm[0].kind == NormStep::kNfc;
  if (!s.norm.empty() && !nfc) return "";
  if (s.pre.size() != 2 || s.pre[0].kind != PreStep::kSplit || s.pre[0].behavior != SplitBehavior::kIsolated ||
      s.pre[0].invert || s.pre[1].kind != PreStep::kByteLevel || s.byte_fallback)
    return "";
  for (const AddedToken& t : s.added)
    if (t.lstrip || t.rstrip || t.normalized) return "";
  const std::string& pattern = s.pre[0].re->pattern();
  for (const auto& d : kPreTokenizers)
    if ((pattern == d.regex || pattern == d.hf_regex) && d.ignore_merges == s.ignore_merges && d.nfc == nfc)
      return d.name;
  return "";
}

std::unique_ptr<Tokenizer> MakeGgufBpeTokenizer(const Vocab& v, const std::string& file, std::optional<bool> add_bos) {
  const PreTokenizerDef* def = FindPre(v.pre);
  if (!def) {
    std::string known;
    for (const auto& d : kPreTokenizers) known += (known.empty() ? "" : ", ") + std::string(d.name);
    Fail("{}: tokenizer.ggml.pre: '{}' is not supported ({})", file, v.pre.empty() ? "(missing)" : v.pre, known);
  }
  BpeSpec s;
  s.source = file;
  s.kind = "gguf-bpe";
  s.gguf_pre = def->name;
  s.pieces = v.pieces;
  const int n = static_cast<int>(v.pieces.size());
  s.in_model.assign(n, 1);
  std::unordered_map<std::string, int> ids;
  for (int id = 0; id < n; ++id) {
    ids.emplace(v.pieces[id], id);
    // Control and user-defined tokens are found in the text before pre-tokenization,
    // as llama.cpp (and HF for its added tokens) does; control ones are special.
    if (v.types[id] == TokenType::Control || v.types[id] == TokenType::UserDefined) {
      AddedToken t;
      t.content = v.pieces[id];
      t.id = id;
      t.special = v.types[id] == TokenType::Control;
      s.in_model[id] = 0;
      if (!t.content.empty()) s.added.push_back(t);
    }
  }
  if (v.merges.empty()) Fail("{}: tokenizer.ggml.merges: missing or empty (a gpt2 vocabulary needs merges)", file);
  s.merges.reserve(v.merges.size());
  std::string both;
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string& m = v.merges[i];
    const size_t sp = m.find(' ', 1);  // byte-level pieces hold no spaces (' ' is spelled 'Ġ')
    if (sp == std::string::npos || m.find(' ', sp + 1) != std::string::npos)
      Fail("{}: tokenizer.ggml.merges[{}]: '{}' is not two pieces separated by one space", file, i, m);
    const std::string a = m.substr(0, sp), b = m.substr(sp + 1);
    both = a + b;
    auto ia = ids.find(a), ib = ids.find(b), ic = ids.find(both);
    if (ia == ids.end() || ib == ids.end() || ic == ids.end())
      Fail("{}: tokenizer.ggml.merges[{}]: '{}' + '{}' uses a piece not in tokenizer.ggml.tokens", file, i, a, b);
    s.merges.push_back({ia->second, ib->second, ic->second});
  }
  if (def->nfc) s.norm.push_back({NormStep::kNfc, "", ""});
  PreStep split{PreStep::kSplit};
  split.re = std::make_shared<Regex>(def->regex, false, file + ": tokenizer.ggml.pre '" + def->name + "'");
  s.pre = {split, PreStep{PreStep::kByteLevel}};
  s.dec = {DecodeStep{DecodeStep::kByteLevel, "", ""}};
  s.has_decoder = true;
  s.ignore_merges = def->ignore_merges;
  s.bos_id = v.bos_id;
  s.eos_id = v.eos_id;
  s.add_bos = add_bos.value_or(def->add_bos);
  return MakeRankBpeTokenizer(std::move(s));
}

}  // namespace specsweep
