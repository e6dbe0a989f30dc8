// HF tokenizer.json with model.type "BPE" -> BpeSpec. Both flavours in use: the
// SentencePiece-like one (Llama-2, TinyStories: Prepend/Replace normalizer, byte
// fallback, no pre-tokenizer) and GPT-2 byte-level (Llama-3, Qwen, SmolLM: Split
// regex + ByteLevel pre-tokenizers, NFC, ByteLevel decoder). Every field the
// pipeline does not model is an error naming the file and the JSON path.
#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "models/limits.h"
#include "models/tokenizer.h"
#include "models/tokenizer_bpe.h"
#include "models/tokenizer_util.h"

namespace specsweep {
namespace {

using json = nlohmann::json;

struct StrHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceIds = std::unordered_map<std::string, int, StrHash, std::equal_to<>>;

// HF ByteLevel(use_regex=true) splits with GPT-2's pattern first.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

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
  const json& Array(const json& j, const char* key, const std::string& field) const {
    const json& v = At(j, key, field);
    if (!v.is_array()) Bad(field + "." + key, "expected an array");
    return v;
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

// Replace patterns here must be {"String": s}.
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
    const json& list = r.Array(j, "normalizers", field);
    for (size_t i = 0; i < list.size(); ++i)
      ParseNormalizer(r, list[i], fmt::format("{}.normalizers[{}]", field, i), out, depth + 1);
  } else if (type == "Prepend") {
    out.push_back({NormStep::kPrepend, r.Str(j, "prepend", field), ""});
  } else if (type == "Replace") {
    out.push_back({NormStep::kReplace, StringPattern(r, j, field), r.Str(j, "content", field)});
  } else if (type == "NFC") {
    out.push_back({NormStep::kNfc, "", ""});
  } else {
    r.Bad(field + ".type", fmt::format("unsupported normalizer {}", Quoted(type)));
  }
}

SplitBehavior ParseBehavior(const Reader& r, const json& j, const std::string& field) {
  const std::string b = r.Str(j, "behavior", field);
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  r.Bad(field + ".behavior", fmt::format("unknown split behavior '{}'", b));
}

void ParsePreTokenizer(const Reader& r, const json& j, const std::string& field, std::vector<PreStep>& out,
                       int depth = 0) {
  if (j.is_null()) return;
  if (depth > kMaxNesting) r.Bad(field, fmt::format("Sequence nested deeper than {}", kMaxNesting));
  std::string type = r.Str(j, "type", field);
  if (type == "Sequence") {
    const json& list = r.Array(j, "pretokenizers", field);
    for (size_t i = 0; i < list.size(); ++i)
      ParsePreTokenizer(r, list[i], fmt::format("{}.pretokenizers[{}]", field, i), out, depth + 1);
  } else if (type == "Split") {
    const json& p = r.At(j, "pattern", field);
    const bool regex = p.is_object() && p.contains("Regex") && p["Regex"].is_string();
    if (!regex && !(p.is_object() && p.contains("String") && p["String"].is_string()))
      r.Bad(field + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
    const std::string pat = p[regex ? "Regex" : "String"].get<std::string>();
    PreStep s{PreStep::kSplit};
    s.re = std::make_shared<Regex>(pat, !regex, fmt::format("{}: {}.pattern", r.path(), field));
    s.behavior = ParseBehavior(r, j, field);
    s.invert = r.Bool(j, "invert", field, false);
    out.push_back(s);
  } else if (type == "ByteLevel") {
    if (r.Bool(j, "add_prefix_space", field, true)) out.push_back(PreStep(PreStep::kPrefixSpace));
    if (r.Bool(j, "use_regex", field, true)) {
      PreStep s{PreStep::kSplit};
      s.re = std::make_shared<Regex>(kGpt2Pattern, false, "GPT-2 pattern");
      out.push_back(s);
    }
    out.push_back(PreStep(PreStep::kByteLevel));
  } else if (type == "Digits") {
    PreStep s{PreStep::kSplit};  // HF: char::is_numeric runs (or single digits), isolated
    s.re = std::make_shared<Regex>(r.Bool(j, "individual_digits", field, false) ? "\\p{N}" : "\\p{N}+", false, field);
    out.push_back(s);
  } else {
    r.Bad(field + ".type", fmt::format("unsupported pre_tokenizer '{}'", type));
  }
}

void ParseDecoder(const Reader& r, const json& j, const std::string& field, std::vector<DecodeStep>& out,
                  int depth = 0) {
  if (depth > kMaxNesting) r.Bad(field, fmt::format("Sequence nested deeper than {}", kMaxNesting));
  std::string type = r.Str(j, "type", field);
  if (type == "Sequence") {
    const json& list = r.Array(j, "decoders", field);
    for (size_t i = 0; i < list.size(); ++i)
      ParseDecoder(r, list[i], fmt::format("{}.decoders[{}]", field, i), out, depth + 1);
  } else if (type == "Replace") {
    out.push_back({DecodeStep::kReplace, StringPattern(r, j, field), r.Str(j, "content", field)});
  } else if (type == "ByteFallback") {
    out.push_back({DecodeStep::kByteFallback, "", ""});
  } else if (type == "Fuse") {
    out.push_back({DecodeStep::kFuse, "", ""});
  } else if (type == "ByteLevel") {
    out.push_back({DecodeStep::kByteLevel, "", ""});
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

int IdOf(const Reader& r, const std::string& field, const BpeSpec& s, const std::string& piece) {
  for (const AddedToken& t : s.added)
    if (t.content == piece) return t.id;
  for (size_t id = 0; id < s.pieces.size(); ++id)
    if (s.in_model[id] && s.pieces[id] == piece) return static_cast<int>(id);
  r.Bad(field, fmt::format("'{}' is not in the vocabulary", piece));
}

// The post-processor's BOS: the first SpecialToken of a TemplateProcessing "single"
// template (also inside a Sequence). ByteLevel post-processing changes no ids.
void ParsePostProcessor(const Reader& r, const json& j, const std::string& field, BpeSpec& s) {
  if (j.is_null()) return;
  std::string type = r.Str(j, "type", field);
  if (type == "Sequence") {
    const json& list = r.Array(j, "processors", field);
    for (size_t i = 0; i < list.size(); ++i)
      ParsePostProcessor(r, list[i], fmt::format("{}.processors[{}]", field, i), s);
  } else if (type == "TemplateProcessing") {
    const json& single = r.Array(j, "single", field);
    if (!single.empty() && single[0].is_object() && single[0].contains("SpecialToken")) {
      const std::string f = field + ".single[0].SpecialToken";
      s.bos_id = IdOf(r, f + ".id", s, r.Str(single[0]["SpecialToken"], "id", f));
      s.add_bos = true;
    }
  } else if (type != "ByteLevel") {
    r.Bad(field + ".type", fmt::format("unsupported post_processor '{}'", type));
  }
}

// tokenizer_config.json beside the file, when present: add_bos_token, bos/eos/pad.
void ReadTokenizerConfig(const Reader& r, BpeSpec& s, int* pad) {
  std::filesystem::path cfg_path = std::filesystem::path(r.path()).parent_path() / "tokenizer_config.json";
  if (!std::filesystem::exists(cfg_path)) return;
  Reader c(cfg_path.string());
  const json cfg = ParseJsonFile(cfg_path.string());
  c.Obj(cfg, "(root)");
  s.add_bos = c.Bool(cfg, "add_bos_token", "(root)", s.add_bos);
  // bos_token/eos_token/pad_token: a string, {"content": ...} or null.
  for (auto [key, dst] : {std::pair{"bos_token", &s.bos_id}, {"eos_token", &s.eos_id}, {"pad_token", pad}}) {
    if (!cfg.contains(key) || cfg[key].is_null()) continue;
    const json& v = cfg[key];
    std::string piece = v.is_string() ? v.get<std::string>() : v.is_object() ? c.Str(v, "content", key) : "";
    if (piece.empty()) c.Bad(key, "expected a string or {\"content\": ...}");
    *dst = IdOf(c, key, s, piece);
  }
}

void ParseVocabAndMerges(const Reader& r, const json& root, const json& model, BpeSpec& s) {
  PieceIds ids;
  const json& vocab = r.At(model, "vocab", "model");
  if (!vocab.is_object()) r.Bad("model.vocab", "expected an object piece -> id");
  int n = 0;
  std::vector<std::pair<std::string, int>> entries;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() >= (1 << 24))
      r.Bad("model.vocab", fmt::format("id of '{}' is not an integer in [0, 2^24)", it.key()));
    entries.emplace_back(it.key(), it.value().get<int>());
    n = std::max(n, entries.back().second + 1);
  }
  if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
    const json& list = root["added_tokens"];
    if (!list.is_array()) r.Bad("added_tokens", "expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string f = fmt::format("added_tokens[{}]", i);
      AddedToken t;
      t.id = r.Int(list[i], "id", f);
      if (t.id >= (1 << 24)) r.Bad(f + ".id", "id beyond 2^24");
      t.content = r.Str(list[i], "content", f);
      if (t.content.empty()) r.Bad(f + ".content", "empty");
      t.special = r.Bool(list[i], "special", f, false);
      t.normalized = r.Bool(list[i], "normalized", f, !t.special);
      t.lstrip = r.Bool(list[i], "lstrip", f, false);
      t.rstrip = r.Bool(list[i], "rstrip", f, false);
      if (r.Bool(list[i], "single_word", f, false)) r.Bad(f + ".single_word", "true is not supported");
      n = std::max(n, t.id + 1);
      s.added.push_back(t);
    }
  }
  s.pieces.assign(n, "");
  s.in_model.assign(n, 0);
  std::vector<char> seen(n, 0);  // [n] id has a piece
  for (auto& [p, id] : entries) {
    if (seen[id]) r.Bad("model.vocab", fmt::format("id {} used twice", id));
    s.pieces[id] = p;
    s.in_model[id] = seen[id] = 1;
    ids.emplace(p, id);
  }
  for (const AddedToken& t : s.added) {
    if (seen[t.id] && s.pieces[t.id] != t.content)
      r.Bad("added_tokens", fmt::format("id {} is '{}' in model.vocab but '{}' here", t.id, s.pieces[t.id], t.content));
    s.pieces[t.id] = t.content;
    seen[t.id] = 1;
  }
  for (int id = 0; id < n; ++id)
    if (!seen[id]) r.Bad("model.vocab", fmt::format("id {} has no piece (ids must be dense)", id));

  // Merges: "a b" strings or [a, b] pairs; rank = position.
  const json& merges = r.Array(model, "merges", "model");
  s.merges.reserve(merges.size());
  std::string both;
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    std::string_view a, b;
    if (m.is_string()) {
      const std::string& str = m.get_ref<const std::string&>();
      size_t sp = str.find(' ');
      if (sp == std::string::npos || str.find(' ', sp + 1) != std::string::npos)
        r.Bad(fmt::format("model.merges[{}]", i), fmt::format("'{}' is not two pieces separated by one space", str));
      a = std::string_view(str).substr(0, sp);
      b = std::string_view(str).substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get_ref<const std::string&>();
      b = m[1].get_ref<const std::string&>();
    } else {
      r.Bad(fmt::format("model.merges[{}]", i), "expected \"a b\" or [\"a\", \"b\"]");
    }
    both.assign(a).append(b);
    auto ia = ids.find(a), ib = ids.find(b), ic = ids.find(both);
    if (ia == ids.end() || ib == ids.end() || ic == ids.end())
      r.Bad(fmt::format("model.merges[{}]", i), fmt::format("'{}' + '{}' uses a piece not in model.vocab", a, b));
    s.merges.push_back({ia->second, ib->second, ic->second});
  }
}

BpeSpec ParseTokenizerJson(const std::string& path) {
  Reader r(path);
  const json root = ParseJsonFile(path);
  r.Obj(root, "(root)");
  const json& model = r.At(root, "model", "(root)");
  const std::string mtype = model.contains("type") ? r.Str(model, "type", "model") : "";
  if (mtype != "BPE") r.Bad("model.type", fmt::format("unsupported model type '{}' (only BPE)", mtype));
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(k) && !model[k].is_null() && model[k] != "") r.Bad(std::string("model.") + k, "not supported");
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0)
    r.Bad("model.dropout", "BPE dropout is not supported (encoding would be random)");

  BpeSpec s;
  s.source = path;
  s.kind = "hf-bpe";
  s.byte_fallback = r.Bool(model, "byte_fallback", "model", false);
  s.fuse_unk = r.Bool(model, "fuse_unk", "model", false);
  s.ignore_merges = r.Bool(model, "ignore_merges", "model", false);
  ParseVocabAndMerges(r, root, model, s);
  if (model.contains("unk_token") && !model["unk_token"].is_null())
    s.unk_id = IdOf(r, "model.unk_token", s, r.Str(model, "unk_token", "model"));

  if (root.contains("normalizer")) ParseNormalizer(r, root["normalizer"], "normalizer", s.norm);
  if (root.contains("pre_tokenizer")) ParsePreTokenizer(r, root["pre_tokenizer"], "pre_tokenizer", s.pre);
  s.has_decoder = root.contains("decoder") && !root["decoder"].is_null();
  if (s.has_decoder) ParseDecoder(r, root["decoder"], "decoder", s.dec);
  s.gguf_pre = GgufPreFor(s);  // for export to GGUF

  // BOS/EOS: tokenizer_config.json, else the post-processor template, else the
  // SentencePiece names <s> </s>; a tokenizer with no BOS at all (Qwen) uses its pad
  // or EOS token, which add_bos (false there) never inserts.
  auto find = [&](const char* piece) {
    for (size_t id = 0; id < s.pieces.size(); ++id)
      if (s.pieces[id] == piece) return static_cast<int>(id);
    return -1;
  };
  s.bos_id = find("<s>");
  s.eos_id = find("</s>");
  if (root.contains("post_processor")) ParsePostProcessor(r, root["post_processor"], "post_processor", s);
  int pad = -1;
  ReadTokenizerConfig(r, s, &pad);
  const int n = static_cast<int>(s.pieces.size());
  if (s.eos_id < 0) s.eos_id = find("<|endoftext|>") >= 0 ? find("<|endoftext|>") : std::min(2, n - 1);
  if (s.bos_id < 0) s.bos_id = pad >= 0 ? pad : s.eos_id;
  if (s.add_bos && s.bos_id < 0) r.Bad("post_processor", "adds BOS but the vocabulary has none");
  return s;
}

}  // namespace

std::unique_ptr<Tokenizer> LoadHfTokenizer(const std::string& tokenizer_json_path) {
  try {
    return MakeRankBpeTokenizer(ParseTokenizerJson(tokenizer_json_path));
  } catch (const json::exception& e) {  // a shape the field checks missed: still name the file
    Fail("{}: {}", tokenizer_json_path, e.what());
  }
}

}  // namespace specsweep
