// HF tokenizer.json with model.type "BPE" (the Llama/TinyStories flavour): a
// normalizer (Sequence/Prepend/Replace), no pre-tokenizer, added tokens split out of
// the text first, BPE by merge rank with byte fallback, and a decoder pipeline
// (Sequence/Replace/ByteFallback/Fuse/Strip). Semantics follow HF `tokenizers`.
#include <algorithm>
#include <array>
#include <filesystem>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "models/error.h"
#include "models/limits.h"
#include "models/tokenizer.h"
#include "models/tokenizer_util.h"

namespace specsweep {
namespace {

using json = nlohmann::json;

struct StrHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceMap = std::unordered_map<std::string, int, StrHash, std::equal_to<>>;

struct NormStep {
  enum Kind { kPrepend, kReplace } kind;
  std::string a, b;  // Prepend: a = prefix. Replace: a -> b.
};

struct DecodeStep {
  enum Kind { kReplace, kByteFallback, kFuse, kStrip } kind;
  std::string a, b;        // Replace: a -> b; Strip: a = the character stripped
  int start = 0, stop = 0;  // Strip: at most this many from each end of a token
};

struct AddedToken {
  std::string content;  // as written in tokenizer.json
  std::string pattern;  // what is matched in the text (see LoadHf)
  int id = 0;
  bool special = false, normalized = false;
};

// Field access with errors naming the file and the JSON path.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}
  [[noreturn]] void Bad(const std::string& field, const std::string& what) const {
    Fail("{}: {}: {}", path_, field, what);
  }
  const json& Obj(const json& j, const std::string& field) const {
    if (!j.is_object()) Bad(field, "expected an object");
    return j;
  }
  const json& At(const json& j, const char* key, const std::string& field) const {
    auto it = Obj(j, field).find(key);
    if (it == j.end()) Bad(field + "." + key, "missing");
    return *it;
  }
  std::string Str(const json& j, const char* key, const std::string& field) const {
    const json& v = At(j, key, field);
    if (!v.is_string()) Bad(field + "." + key, "expected a string");
    return v.get<std::string>();
  }
  // Optional bool; null counts as absent.
  bool Bool(const json& j, const char* key, const std::string& field, bool dflt) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    if (!it->is_boolean()) Bad(field + "." + key, "expected true/false");
    return it->get<bool>();
  }
  int Int(const json& j, const char* key, const std::string& field) const {
    const json& v = At(j, key, field);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 30))
      Bad(field + "." + key, "expected a non-negative integer");
    return v.get<int>();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

json ParseJsonFile(const std::string& path) {
  std::string text = ReadTokenizerFile(path);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    Fail("{}: invalid JSON: {}", path, e.what());
  }
}

// Replace patterns are {"String": s} or {"Regex": r}; only literal strings here.
std::string StringPattern(const Reader& r, const json& j, const std::string& field) {
  const json& p = r.At(j, "pattern", field);
  if (!p.is_object() || !p.contains("String") || !p["String"].is_string())
    r.Bad(field + ".pattern", "only {\"String\": ...} patterns are supported");
  std::string s = p["String"].get<std::string>();
  if (s.empty()) r.Bad(field + ".pattern", "empty pattern");
  return s;
}

void ParseNormalizer(const Reader& r, const json& j, const std::string& field, std::vector<NormStep>& out,
                     int depth = 0) {
  if (j.is_null()) return;
  if (depth > kMaxNesting) r.Bad(field, fmt::format("Sequence nested deeper than {}", kMaxNesting));
  std::string type = r.Str(j, "type", field);
  if (type == "Sequence") {
    const json& list = r.At(j, "normalizers", field);
    if (!list.is_array()) r.Bad(field + ".normalizers", "expected an array");
    for (size_t i = 0; i < list.size(); ++i)
      ParseNormalizer(r, list[i], fmt::format("{}.normalizers[{}]", field, i), out, depth + 1);
  } else if (type == "Prepend") {
    out.push_back({NormStep::kPrepend, r.Str(j, "prepend", field), ""});
  } else if (type == "Replace") {
    out.push_back({NormStep::kReplace, StringPattern(r, j, field), r.Str(j, "content", field)});
  } else {
    r.Bad(field + ".type", fmt::format("unsupported normalizer {}", Quoted(type)));
  }
}

void ParseDecoder(const Reader& r, const json& j, const std::string& field, std::vector<DecodeStep>& out,
                  int depth = 0) {
  if (depth > kMaxNesting) r.Bad(field, fmt::format("Sequence nested deeper than {}", kMaxNesting));
  std::string type = r.Str(j, "type", field);
  if (type == "Sequence") {
    const json& list = r.At(j, "decoders", field);
    if (!list.is_array()) r.Bad(field + ".decoders", "expected an array");
    for (size_t i = 0; i < list.size(); ++i)
      ParseDecoder(r, list[i], fmt::format("{}.decoders[{}]", field, i), out, depth + 1);
  } else if (type == "Replace") {
    out.push_back({DecodeStep::kReplace, StringPattern(r, j, field), r.Str(j, "content", field)});
  } else if (type == "ByteFallback") {
    out.push_back({DecodeStep::kByteFallback, "", ""});
  } else if (type == "Fuse") {
    out.push_back({DecodeStep::kFuse, "", ""});
  } else if (type == "Strip") {
    std::string c = r.Str(j, "content", field);
    if (c.empty() || Utf8CharLen(c, 0) != c.size()) r.Bad(field + ".content", "expected one character");
    DecodeStep s{DecodeStep::kStrip, c, ""};
    s.start = r.Int(j, "start", field);
    s.stop = r.Int(j, "stop", field);
    out.push_back(s);
  } else {
    r.Bad(field + ".type", fmt::format("unsupported decoder {}", Quoted(type)));
  }
}

std::vector<std::string> SplitChars(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8CharLen(s, i);
    out.emplace_back(s.substr(i, n));
    i += n;
  }
  return out;
}

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8CharLen(s, i);
    if (n == 1 && static_cast<unsigned char>(s[i]) >= 0x80) return false;
    i += n;
  }
  return true;
}

class HfBpeTokenizer final : public Tokenizer {
 public:
  explicit HfBpeTokenizer(const std::string& path) : path_(path) {
    Reader r(path);
    const json root = ParseJsonFile(path);
    r.Obj(root, "(root)");
    const json& model = r.At(root, "model", "(root)");
    const std::string mtype = model.contains("type") ? r.Str(model, "type", "model") : "";
    if (mtype != "BPE") r.Bad("model.type", fmt::format("unsupported model type {} (only BPE)", Quoted(mtype)));
    for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (model.contains(k) && !model[k].is_null() && model[k] != "")
        r.Bad(std::string("model.") + k, "not supported");
    if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0)
      r.Bad("model.dropout", "BPE dropout is not supported (encoding would be random)");
    byte_fallback_ = r.Bool(model, "byte_fallback", "model", false);
    fuse_unk_ = r.Bool(model, "fuse_unk", "model", false);
    ignore_merges_ = r.Bool(model, "ignore_merges", "model", false);

    // Vocabulary: model.vocab plus added_tokens (which may extend it).
    const json& vocab = r.At(model, "vocab", "model");
    if (!vocab.is_object()) r.Bad("model.vocab", "expected an object piece -> id");
    int n = 0;
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() >= (1 << 24))
        r.Bad("model.vocab", fmt::format("id of {} is not an integer in [0, 2^24)", Quoted(it.key())));
      int id = it.value().get<int>();
      vocab_.emplace(it.key(), id);
      n = std::max(n, id + 1);
    }
    if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
      const json& list = root["added_tokens"];
      if (!list.is_array()) r.Bad("added_tokens", "expected an array");
      for (size_t i = 0; i < list.size(); ++i) {
        std::string f = fmt::format("added_tokens[{}]", i);
        AddedToken t;
        t.id = r.Int(list[i], "id", f);
        t.content = r.Str(list[i], "content", f);
        if (t.content.empty()) r.Bad(f + ".content", "empty");
        t.special = r.Bool(list[i], "special", f, false);
        t.normalized = r.Bool(list[i], "normalized", f, !t.special);
        for (const char* k : {"lstrip", "rstrip", "single_word"})
          if (r.Bool(list[i], k, f, false)) r.Bad(f + "." + k, "true is not supported");
        n = std::max(n, t.id + 1);
        added_.push_back(t);
      }
    }
    // Ids must be dense: a gap is found here, in the ids themselves, before allocating
    // per id (an added token id of 2^30 would otherwise allocate 2^30 strings).
    if (static_cast<size_t>(n) > vocab_.size() + added_.size()) {
      std::vector<int> ids;  // [pieces] every id given
      for (const auto& [p, id] : vocab_) ids.push_back(id);
      for (const AddedToken& t : added_) ids.push_back(t.id);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      int gap = 0;
      while (gap < static_cast<int>(ids.size()) && ids[gap] == gap) ++gap;
      r.Bad("model.vocab", fmt::format("id {} has no piece (ids must be dense; the largest id is {})", gap, n - 1));
    }
    pieces_.assign(n, "");
    std::vector<char> seen(n, 0);  // [n] id has a piece
    for (const auto& [p, id] : vocab_) {
      if (seen[id]) r.Bad("model.vocab", fmt::format("id {} used twice", id));
      pieces_[id] = p;
      seen[id] = 1;
    }
    special_.assign(n, 0);
    for (const AddedToken& t : added_) {
      if (seen[t.id] && pieces_[t.id] != t.content)
        r.Bad("added_tokens", fmt::format("id {} is {} in model.vocab but {} here", t.id, Quoted(pieces_[t.id]), Quoted(t.content)));
      pieces_[t.id] = t.content;
      seen[t.id] = 1;
      special_[t.id] = t.special;
    }
    for (int id = 0; id < n; ++id)
      if (!seen[id]) r.Bad("model.vocab", fmt::format("id {} has no piece (ids must be dense)", id));

    // Merges: "a b" strings or [a, b] pairs; rank = position. A later duplicate
    // overrides an earlier one, as in HF's HashMap collect.
    const json& merges = r.At(model, "merges", "model");
    if (!merges.is_array()) r.Bad("model.merges", "expected an array");
    for (size_t i = 0; i < merges.size(); ++i) {
      std::string f = fmt::format("model.merges[{}]", i);
      std::string a, b;
      const json& m = merges[i];
      if (m.is_string()) {
        std::string s = m.get<std::string>();
        size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          r.Bad(f, fmt::format("{} is not two pieces separated by one space", Quoted(s)));
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        a = m[0].get<std::string>();
        b = m[1].get<std::string>();
      } else {
        r.Bad(f, "expected \"a b\" or [\"a\", \"b\"]");
      }
      auto ia = vocab_.find(a), ib = vocab_.find(b), ic = vocab_.find(a + b);
      if (ia == vocab_.end() || ib == vocab_.end() || ic == vocab_.end())
        r.Bad(f, fmt::format("{} + {} uses a piece not in model.vocab", Quoted(a), Quoted(b)));
      merges_.insert_or_assign(Key(ia->second, ib->second), PairMerge{ic->second, static_cast<double>(i)});
    }

    unk_id_ = -1;
    if (model.contains("unk_token") && !model["unk_token"].is_null()) {
      std::string unk = r.Str(model, "unk_token", "model");
      auto it = vocab_.find(unk);
      if (it == vocab_.end()) r.Bad("model.unk_token", fmt::format("{} not in model.vocab", Quoted(unk)));
      unk_id_ = it->second;
    }
    byte_id_.fill(-1);
    if (byte_fallback_)
      for (int b = 0; b < 256; ++b)
        if (auto it = vocab_.find(BytePieceName(b)); it != vocab_.end()) byte_id_[b] = it->second;

    if (root.contains("normalizer")) ParseNormalizer(r, root["normalizer"], "normalizer", norm_);
    if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null())
      r.Bad("pre_tokenizer.type", fmt::format("unsupported pre_tokenizer {} (only null)",
                                              Quoted(root["pre_tokenizer"].dump())));
    has_decoder_ = root.contains("decoder") && !root["decoder"].is_null();
    if (has_decoder_) ParseDecoder(r, root["decoder"], "decoder", dec_);

    // HF matches normalized added tokens against the normalized text, using the
    // normalized content as the pattern: with Prepend("▁") "<|end_story|>" is found as
    // "▁<|end_story|>", i.e. at the text start or after a space (which it absorbs).
    for (AddedToken& t : added_) t.pattern = t.normalized ? Normalize(t.content) : t.content;

    ConfigureSpecials(r, root);
  }

  std::vector<int> Encode(std::string_view text, bool add_bos) const override {
    std::vector<int> out;
    if (add_bos) out.push_back(bos_);
    // Raw text: split out non-normalized added tokens; then normalize each remaining
    // piece and split out normalized added tokens; BPE the rest (no pre-tokenizer,
    // so each remaining piece is one BPE word).
    SplitAdded(text, false, out, [&](std::string_view raw) {
      std::string norm = Normalize(raw);
      SplitAdded(norm, true, out, [&](std::string_view word) { BpeWord(word, out); });
    });
    return out;
  }

  std::string Decode(std::span<const int> ids) const override {
    std::vector<std::string> toks;  // [kept ids] piece text, then transformed by steps
    for (int id : ids) {
      if (id < 0 || id >= vocab_size()) Fail("{}: decode: id {} outside vocabulary of {}", path_, id, vocab_size());
      if (!special_[id] && id != bos_ && id != eos_) toks.push_back(pieces_[id]);
    }
    if (!has_decoder_) {  // HF without a decoder joins tokens with spaces
      std::string out;
      for (size_t i = 0; i < toks.size(); ++i) out += (i ? " " : "") + toks[i];
      return out;
    }
    for (const DecodeStep& s : dec_) toks = Apply(s, std::move(toks));
    std::string out;
    for (auto& t : toks) out += t;
    return out;
  }

  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  int bos_id() const override { return bos_; }
  int eos_id() const override { return eos_; }
  bool add_bos_default() const override { return add_bos_; }
  std::string_view kind() const override { return "hf-bpe"; }

  // SPM-style export: score = -(rank of the first merge producing the piece), so the
  // score-BPE picks merges in rank order. Exact where each piece has one merge and
  // no unlisted concatenation is a piece; the GGUF writer should prefer storing merges.
  Vocab ExportVocab() const override {
    Vocab v;
    const int n = vocab_size();
    v.pieces = pieces_;
    v.scores.assign(n, 0.0f);
    v.types.assign(n, TokenType::Normal);
    std::vector<double> best(n, 1e300);  // [n] lowest rank producing the id
    for (const auto& [key, m] : merges_) best[m.merged] = std::min(best[m.merged], m.priority);
    for (int id = 0; id < n; ++id) {
      if (best[id] < 1e300) v.scores[id] = -static_cast<float>(best[id]) - 1.0f;
      if (ParseBytePiece(pieces_[id]) >= 0) v.types[id] = TokenType::Byte;
      if (special_[id]) v.types[id] = TokenType::Control;
    }
    if (unk_id_ >= 0) v.types[unk_id_] = TokenType::Unknown;
    v.types[bos_] = v.types[eos_] = TokenType::Control;
    v.bos_id = bos_;
    v.eos_id = eos_;
    v.unk_id = unk_id_ >= 0 ? unk_id_ : 0;
    return v;
  }

 private:
  static uint64_t Key(int a, int b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

  std::string Normalize(std::string_view s) const {
    std::string out(s);
    for (const NormStep& n : norm_) {
      if (n.kind == NormStep::kPrepend) {
        if (!out.empty()) out = n.a + out;  // HF prepends only to non-empty text
      } else {
        out = ReplaceAll(out, n.a, n.b);
      }
    }
    return out;
  }

  // Leftmost-longest matching of added tokens whose `normalized` flag equals
  // `normalized`; ids of matches go to out, the text between them to on_text.
  template <typename F>
  void SplitAdded(std::string_view s, bool normalized, std::vector<int>& out, const F& on_text) const {
    std::vector<const AddedToken*> pats;
    for (const AddedToken& t : added_)
      if (t.normalized == normalized) pats.push_back(&t);
    std::vector<size_t> next(pats.size());  // [pats] first hit at or after pos (cached)
    for (size_t k = 0; k < pats.size(); ++k) next[k] = s.find(pats[k]->pattern);
    size_t pos = 0, text_start = 0;
    while (!pats.empty()) {
      size_t best = std::string_view::npos;
      const AddedToken* hit = nullptr;
      for (size_t k = 0; k < pats.size(); ++k) {
        if (next[k] != std::string_view::npos && next[k] < pos) next[k] = s.find(pats[k]->pattern, pos);
        if (next[k] == std::string_view::npos) continue;
        if (next[k] < best || (next[k] == best && pats[k]->pattern.size() > hit->pattern.size())) {
          best = next[k];
          hit = pats[k];
        }
      }
      if (!hit) break;
      if (best > text_start) on_text(s.substr(text_start, best - text_start));
      out.push_back(hit->id);
      pos = text_start = best + hit->pattern.size();
    }
    if (text_start < s.size()) on_text(s.substr(text_start));
  }

  void BpeWord(std::string_view w, std::vector<int>& out) const {
    if (w.empty()) return;
    if (ignore_merges_)
      if (auto it = vocab_.find(w); it != vocab_.end()) return out.push_back(it->second);
    std::vector<int> ids;  // [chars..] one id per character (bytes on fallback)
    ids.reserve(w.size());
    bool last_unk = false;
    for (size_t i = 0; i < w.size();) {
      size_t len = Utf8CharLen(w, i);
      std::string_view ch = w.substr(i, len);
      i += len;
      if (auto it = vocab_.find(ch); it != vocab_.end()) {
        ids.push_back(it->second);
        last_unk = false;
        continue;
      }
      if (byte_fallback_ &&
          std::all_of(ch.begin(), ch.end(), [&](char c) { return byte_id_[static_cast<unsigned char>(c)] >= 0; })) {
        for (unsigned char c : ch) ids.push_back(byte_id_[c]);
        last_unk = false;
        continue;
      }
      if (unk_id_ < 0) Fail("{}: model.unk_token: '{}' is not in the vocabulary and there is no unk_token", path_, ch);
      if (!(fuse_unk_ && last_unk)) ids.push_back(unk_id_);
      last_unk = true;
    }
    MergePairs(ids, [this](int a, int b) {
      auto it = merges_.find(Key(a, b));
      return it == merges_.end() ? PairMerge{} : it->second;
    });
    out.insert(out.end(), ids.begin(), ids.end());
  }

  static std::vector<std::string> Apply(const DecodeStep& s, std::vector<std::string> toks) {
    switch (s.kind) {
      case DecodeStep::kReplace:
        for (auto& t : toks) t = ReplaceAll(t, s.a, s.b);
        return toks;
      case DecodeStep::kFuse: {
        std::string all;
        for (auto& t : toks) all += t;
        return {all};
      }
      case DecodeStep::kByteFallback: {
        // Runs of <0xNN> become their bytes if those form valid UTF-8, else one
        // U+FFFD per byte, as HF does.
        std::vector<std::string> out;
        std::string bytes;
        auto flush = [&] {
          if (bytes.empty()) return;
          if (ValidUtf8(bytes)) out.push_back(bytes);
          else for (size_t i = 0; i < bytes.size(); ++i) out.push_back("\xEF\xBF\xBD");
          bytes.clear();
        };
        for (auto& t : toks) {
          if (int b = ParseBytePiece(t); b >= 0) {
            bytes += static_cast<char>(b);
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        return out;
      }
      case DecodeStep::kStrip:
        for (auto& t : toks) {
          std::vector<std::string> ch = SplitChars(t);
          size_t a = 0, b = ch.size();
          while (a < b && a < static_cast<size_t>(s.start) && ch[a] == s.a) ++a;
          while (b > a && ch.size() - b < static_cast<size_t>(s.stop) && ch[b - 1] == s.a) --b;
          std::string r;
          for (size_t i = a; i < b; ++i) r += ch[i];
          t = r;
        }
        return toks;
    }
    return toks;
  }

  int IdOf(const Reader& r, const std::string& field, const std::string& piece) const {
    for (const AddedToken& t : added_)
      if (t.content == piece) return t.id;
    if (auto it = vocab_.find(piece); it != vocab_.end()) return it->second;
    r.Bad(field, fmt::format("{} is not in the vocabulary", Quoted(piece)));
  }

  // BOS/EOS and add_bos: tokenizer_config.json beside the file, else the
  // post_processor template, else <s>/</s> or ids 1/2.
  void ConfigureSpecials(const Reader& r, const json& root) {
    bos_ = vocab_.count("<s>") ? vocab_.at("<s>") : 1;
    eos_ = vocab_.count("</s>") ? vocab_.at("</s>") : 2;
    add_bos_ = false;
    const json* pp = root.contains("post_processor") ? &root["post_processor"] : nullptr;
    if (pp && pp->is_object() && pp->value("type", "") == "TemplateProcessing" && pp->contains("single") &&
        (*pp)["single"].is_array() && !(*pp)["single"].empty()) {
      const json& first = (*pp)["single"][0];
      if (first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].contains("id") &&
          first["SpecialToken"]["id"].is_string()) {
        bos_ = IdOf(r, "post_processor.single[0].SpecialToken.id", first["SpecialToken"]["id"].get<std::string>());
        add_bos_ = true;
      }
    }
    std::filesystem::path cfg_path = std::filesystem::path(path_).parent_path() / "tokenizer_config.json";
    if (std::filesystem::exists(cfg_path)) {
      Reader c(cfg_path.string());
      const json cfg = ParseJsonFile(cfg_path.string());
      c.Obj(cfg, "(root)");
      add_bos_ = c.Bool(cfg, "add_bos_token", "(root)", add_bos_);
      // bos_token/eos_token: a string, {"content": ...} or null.
      for (auto [key, dst] : {std::pair{"bos_token", &bos_}, {"eos_token", &eos_}}) {
        if (!cfg.contains(key) || cfg[key].is_null()) continue;
        const json& v = cfg[key];
        std::string piece = v.is_string() ? v.get<std::string>() : v.is_object() ? c.Str(v, "content", key) : "";
        if (piece.empty()) c.Bad(key, "expected a string or {\"content\": ...}");
        *dst = IdOf(c, key, piece);
      }
    }
    if (bos_ >= vocab_size() || eos_ >= vocab_size())
      r.Bad("post_processor", fmt::format("BOS/EOS ids {}/{} outside vocabulary of {}", bos_, eos_, vocab_size()));
  }

  std::string path_;
  PieceMap vocab_;                                  // model.vocab piece -> id
  std::vector<std::string> pieces_;                 // [vocab] id -> piece
  std::vector<char> special_;                       // [vocab] special added token
  std::vector<AddedToken> added_;
  std::unordered_map<uint64_t, PairMerge> merges_;  // (a << 32 | b) -> merged id, rank
  std::array<int, 256> byte_id_;                    // byte -> <0xNN> id, -1 if absent
  std::vector<NormStep> norm_;
  std::vector<DecodeStep> dec_;
  bool has_decoder_ = false, byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
  bool add_bos_ = false;
  int unk_id_ = -1, bos_ = 1, eos_ = 2;
};

}  // namespace

std::unique_ptr<Tokenizer> LoadHfTokenizer(const std::string& tokenizer_json_path) {
  try {
    return std::make_unique<HfBpeTokenizer>(tokenizer_json_path);
  } catch (const json::exception& e) {  // a shape the field checks missed: still name the file
    Fail("{}: {}", tokenizer_json_path, e.what());
  }
}

}  // namespace specsweep
