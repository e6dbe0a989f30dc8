#include "models/tokenizer_bpe.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "models/tokenizer_util.h"

namespace specsweep {
namespace {

struct StrHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceMap = std::unordered_map<std::string, int, StrHash, std::equal_to<>>;

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

// Start of the UTF-8 character that ends just before s[i] (i > 0).
size_t PrevCharStart(std::string_view s, size_t i) {
  size_t p = i - 1;
  while (p > 0 && i - p < 4 && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
  return Utf8CharLen(s, p) == i - p ? p : i - 1;
}

// A token on its way through the decoder steps; added tokens skip byte-level decoding.
struct Tok {
  std::string text;
  bool added = false;
};

class RankBpeTokenizer final : public Tokenizer {
 public:
  explicit RankBpeTokenizer(BpeSpec spec) : s_(std::move(spec)) {
    const int n = static_cast<int>(s_.pieces.size());
    for (int id = 0; id < n; ++id)
      if (s_.in_model[id]) vocab_.emplace(s_.pieces[id], id);
    for (size_t r = 0; r < s_.merges.size(); ++r) {  // a later duplicate wins, as in HF's HashMap collect
      const auto& m = s_.merges[r];
      merges_.insert_or_assign(Key(m[0], m[1]), PairMerge{m[2], static_cast<double>(r)});
    }
    special_.assign(n, 0);
    added_id_.assign(n, 0);
    for (const AddedToken& t : s_.added) {
      special_[t.id] = t.special;
      added_id_[t.id] = 1;
    }
    byte_id_.fill(-1);
    if (s_.byte_fallback)
      for (int b = 0; b < 256; ++b)
        if (auto it = vocab_.find(BytePieceName(b)); it != vocab_.end()) byte_id_[b] = it->second;
    for (const DecodeStep& d : s_.dec) byte_level_ |= d.kind == DecodeStep::kByteLevel;
    // HF matches normalized added tokens against the normalized text, using the
    // normalized content as the pattern: with Prepend("▁") "<|end_story|>" is found as
    // "▁<|end_story|>", i.e. at the text start or after a space (which it absorbs).
    for (const AddedToken& t : s_.added) patterns_.push_back(t.normalized ? Normalize(t.content) : t.content);
  }

  std::vector<int> Encode(std::string_view text, bool add_bos) const override {
    std::vector<int> out;
    if (add_bos) out.push_back(s_.bos_id);
    // Raw text: split out non-normalized added tokens; then normalize each remaining
    // piece, split out normalized added tokens, pre-tokenize and BPE each word.
    SplitAdded(text, false, out, [&](std::string_view raw) {
      std::string norm = Normalize(raw);
      SplitAdded(norm, true, out, [&](std::string_view piece) {
        for (const std::string& w : PreTokenize(piece)) BpeWord(w, out);
      });
    });
    return out;
  }

  std::string Decode(std::span<const int> ids, Specials specials) const override {
    std::vector<Tok> toks;  // [kept ids] piece text, then transformed by the steps
    for (int id : ids) {
      if (id < 0 || id >= vocab_size()) Fail("{}: decode: id {} outside vocabulary of {}", s_.source, id, vocab_size());
      if (specials == Specials::kSkip && (special_[id] || id == s_.bos_id || id == s_.eos_id)) continue;
      toks.push_back({s_.pieces[id], added_id_[id] != 0});
    }
    std::string out;
    if (!s_.has_decoder) {  // HF without a decoder joins tokens with spaces
      for (size_t i = 0; i < toks.size(); ++i) out += (i ? " " : "") + toks[i].text;
      return out;
    }
    for (const DecodeStep& s : s_.dec) toks = Apply(s, std::move(toks));
    for (auto& t : toks) out += t.text;
    return out;
  }

  int vocab_size() const override { return static_cast<int>(s_.pieces.size()); }
  int bos_id() const override { return s_.bos_id; }
  int eos_id() const override { return s_.eos_id; }
  bool add_bos_default() const override { return s_.add_bos; }
  std::string_view kind() const override { return s_.kind; }

  // Byte-level: a GGUF "gpt2" vocabulary (merges in rank order). Otherwise an SPM-style
  // export: score = -(rank of the first merge producing the piece), so the score-BPE
  // picks merges in rank order. Exact where each piece has one merge and no unlisted
  // concatenation is a piece.
  Vocab ExportVocab() const override {
    Vocab v;
    const int n = vocab_size();
    v.pieces = s_.pieces;
    v.scores.assign(n, 0.0f);
    v.types.assign(n, TokenType::Normal);
    if (byte_level_) {
      v.model = "gpt2";
      v.pre = s_.gguf_pre;
      for (const auto& m : s_.merges) v.merges.push_back(s_.pieces[m[0]] + " " + s_.pieces[m[1]]);
      for (const AddedToken& t : s_.added) v.types[t.id] = t.special ? TokenType::Control : TokenType::UserDefined;
    } else {
      std::vector<double> best(n, 1e300);  // [n] lowest rank producing the id
      for (const auto& [key, m] : merges_) best[m.merged] = std::min(best[m.merged], m.priority);
      for (int id = 0; id < n; ++id) {
        if (best[id] < 1e300) v.scores[id] = -static_cast<float>(best[id]) - 1.0f;
        if (ParseBytePiece(s_.pieces[id]) >= 0) v.types[id] = TokenType::Byte;
        if (special_[id]) v.types[id] = TokenType::Control;
      }
      if (s_.unk_id >= 0) v.types[s_.unk_id] = TokenType::Unknown;
      v.types[s_.bos_id] = v.types[s_.eos_id] = TokenType::Control;
    }
    v.bos_id = s_.bos_id;
    v.eos_id = s_.eos_id;
    v.unk_id = s_.unk_id >= 0 ? s_.unk_id : 0;
    v.add_bos = s_.add_bos;
    return v;
  }

 private:
  static uint64_t Key(int a, int b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

  std::string Normalize(std::string_view s) const {
    std::string out(s);
    for (const NormStep& n : s_.norm) {
      switch (n.kind) {
        case NormStep::kPrepend:
          if (!out.empty()) out = n.a + out;  // HF prepends only to non-empty text
          break;
        case NormStep::kReplace: out = ReplaceAll(out, n.a, n.b); break;
        case NormStep::kNfc: out = NfcNormalize(out, s_.source + ": normalizer NFC"); break;
      }
    }
    return out;
  }

  std::vector<std::string> PreTokenize(std::string_view piece) const {
    std::vector<std::string> words{std::string(piece)}, next;
    for (const PreStep& p : s_.pre) {
      next.clear();
      for (std::string& w : words) {
        if (p.kind == PreStep::kSplit) {
          SplitByRegex(*p.re, p.behavior, p.invert, w, next);
        } else if (p.kind == PreStep::kPrefixSpace) {
          if (w[0] != ' ') w = " " + w;
          next.push_back(std::move(w));
        } else {
          next.push_back(ByteLevelEncode(w));
        }
      }
      words.swap(next);
    }
    return words;
  }

  // Leftmost-longest matching of added tokens whose `normalized` flag equals
  // `normalized`; ids of matches go to out, the text between them to on_text.
  template <typename F>
  void SplitAdded(std::string_view s, bool normalized, std::vector<int>& out, const F& on_text) const {
    std::vector<size_t> pats;  // indices into s_.added
    for (size_t k = 0; k < s_.added.size(); ++k)
      if (s_.added[k].normalized == normalized) pats.push_back(k);
    std::vector<size_t> next(pats.size());  // [pats] first hit at or after pos (cached)
    for (size_t k = 0; k < pats.size(); ++k) next[k] = s.find(patterns_[pats[k]]);
    size_t pos = 0, text_start = 0;
    while (!pats.empty()) {
      size_t best = std::string_view::npos, hit = 0;
      for (size_t k = 0; k < pats.size(); ++k) {
        const std::string& p = patterns_[pats[k]];
        if (next[k] != std::string_view::npos && next[k] < pos) next[k] = s.find(p, pos);
        if (next[k] == std::string_view::npos) continue;
        if (next[k] < best || (next[k] == best && p.size() > patterns_[pats[hit]].size())) {
          best = next[k];
          hit = k;
        }
      }
      if (best == std::string_view::npos) break;
      const AddedToken& t = s_.added[pats[hit]];
      size_t b = best, e = best + patterns_[pats[hit]].size(), len = 0;
      if (t.lstrip)
        for (size_t p; b > text_start && IsUnicodeSpace(s, p = PrevCharStart(s, b), &len) && p + len == b;) b = p;
      if (t.rstrip)
        while (e < s.size() && IsUnicodeSpace(s, e, &len)) e += len;
      if (b > text_start) on_text(s.substr(text_start, b - text_start));
      out.push_back(t.id);
      pos = text_start = e;
    }
    if (text_start < s.size()) on_text(s.substr(text_start));
  }

  void BpeWord(std::string_view w, std::vector<int>& out) const {
    if (w.empty()) return;
    if (s_.ignore_merges)
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
      if (s_.byte_fallback &&
          std::all_of(ch.begin(), ch.end(), [&](char c) { return byte_id_[static_cast<unsigned char>(c)] >= 0; })) {
        for (unsigned char c : ch) ids.push_back(byte_id_[c]);
        last_unk = false;
        continue;
      }
      if (s_.unk_id < 0)
        Fail("{}: model.unk_token: '{}' is not in the vocabulary and there is no unk_token", s_.source, ch);
      if (!(s_.fuse_unk && last_unk)) ids.push_back(s_.unk_id);
      last_unk = true;
    }
    MergePairs(ids, [this](int a, int b) {
      auto it = merges_.find(Key(a, b));
      return it == merges_.end() ? PairMerge{} : it->second;
    });
    out.insert(out.end(), ids.begin(), ids.end());
  }

  static std::vector<Tok> Apply(const DecodeStep& s, std::vector<Tok> toks) {
    switch (s.kind) {
      case DecodeStep::kReplace:
        for (auto& t : toks) t.text = ReplaceAll(t.text, s.a, s.b);
        return toks;
      case DecodeStep::kFuse: {
        Tok all;
        for (auto& t : toks) all.text += t.text;
        return {all};
      }
      case DecodeStep::kByteFallback: {
        // Runs of <0xNN> become their bytes if those form valid UTF-8, else one
        // U+FFFD per byte, as HF does.
        std::vector<Tok> out;
        std::string bytes;
        auto flush = [&] {
          if (bytes.empty()) return;
          if (ValidUtf8(bytes))
            out.push_back({bytes});
          else
            for (size_t i = 0; i < bytes.size(); ++i) out.push_back({"\xEF\xBF\xBD"});
          bytes.clear();
        };
        for (auto& t : toks) {
          if (int b = ParseBytePiece(t.text); b >= 0) {
            bytes += static_cast<char>(b);
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        return out;
      }
      case DecodeStep::kByteLevel: {
        // Runs of ordinary tokens map back to bytes, then to UTF-8 (invalid parts
        // become U+FFFD); added tokens are text already and stay as they are. A token
        // with a character outside the byte map keeps its own bytes (HF).
        std::vector<Tok> out;
        std::string bytes;
        bool open = false;
        for (auto& t : toks) {
          if (t.added) {
            if (open) out.push_back({Utf8Lossy(bytes)});
            bytes.clear();
            open = false;
            out.push_back(std::move(t));
            continue;
          }
          if (!ByteLevelDecode(t.text, bytes)) bytes += t.text;
          open = true;
        }
        if (open) out.push_back({Utf8Lossy(bytes)});
        return out;
      }
      case DecodeStep::kStrip:
        for (auto& t : toks) {
          std::vector<std::string> ch = SplitChars(t.text);
          size_t a = 0, b = ch.size();
          while (a < b && a < static_cast<size_t>(s.start) && ch[a] == s.a) ++a;
          while (b > a && ch.size() - b < static_cast<size_t>(s.stop) && ch[b - 1] == s.a) --b;
          std::string r;
          for (size_t i = a; i < b; ++i) r += ch[i];
          t.text = r;
        }
        return toks;
    }
    return toks;
  }

  BpeSpec s_;
  PieceMap vocab_;                                  // model pieces -> id
  std::unordered_map<uint64_t, PairMerge> merges_;  // (a << 32 | b) -> merged id, rank
  std::vector<char> special_, added_id_;            // [vocab] special / added token
  std::vector<std::string> patterns_;               // [added] text matched for each added token
  std::array<int, 256> byte_id_;                    // byte -> <0xNN> id, -1 if absent
  bool byte_level_ = false;                         // decoder maps bytes (GPT-2 style)
};

}  // namespace

std::unique_ptr<Tokenizer> MakeRankBpeTokenizer(BpeSpec spec) {
  return std::make_unique<RankBpeTokenizer>(std::move(spec));
}

}  // namespace specsweep
