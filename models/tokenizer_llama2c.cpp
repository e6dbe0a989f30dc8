// BPE by piece score, as llama2.c run.c encodes and SentencePiece's BPE model does:
// split text into UTF-8 characters (byte pieces <0xNN> for unknown ones), then
// greedily merge the adjacent pair whose concatenation is the best-scoring piece.
// One implementation serves llama2.c tokenizer.bin (pieces spelled with ' ') and
// GGUF/SPM vocabularies (pieces spelled with U+2581 "▁").
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <unordered_map>

#include "base/error.h"
#include "models/limits.h"
#include "models/tokenizer.h"
#include "models/tokenizer_util.h"

namespace specsweep {
namespace {

constexpr std::string_view kMeta = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// unordered_map<std::string, int> that can be probed with a string_view.
struct StrHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceMap = std::unordered_map<std::string, int, StrHash, std::equal_to<>>;

class ScoreBpeTokenizer final : public Tokenizer {
 public:
  // `space` is how pieces spell a space: " " (llama2.c) or "▁" (SPM/GGUF).
  // `origin` names the source in error messages.
  ScoreBpeTokenizer(Vocab v, std::string space, const std::string& origin)
      : v_(std::move(v)), space_(std::move(space)) {
    const int n = static_cast<int>(v_.pieces.size());
    if (n < 1) Fail("{}: pieces: empty vocabulary", origin);
    if (v_.scores.size() != v_.pieces.size()) Fail("{}: scores: {} scores for {} pieces", origin, v_.scores.size(), n);
    if (v_.types.empty()) v_.types = InferTypes(v_);
    if (v_.types.size() != v_.pieces.size()) Fail("{}: types: {} types for {} pieces", origin, v_.types.size(), n);
    for (auto [name, id] : {std::pair{"bos_id", v_.bos_id}, {"eos_id", v_.eos_id}})
      if (id < 0 || id >= n) Fail("{}: {}: {} outside vocabulary of {}", origin, name, id, n);
    if (v_.unk_id >= n) Fail("{}: unk_id: {} outside vocabulary of {}", origin, v_.unk_id, n);

    byte_id_.fill(-1);
    decoded_.resize(n);  // [n] text each id decodes to
    skip_.assign(n, 0);  // [n] 1 for control/unused ids, which decode to nothing
    for (int id = 0; id < n; ++id) {
      const std::string& p = v_.pieces[id];
      if (!std::isfinite(v_.scores[id])) Fail("{}: scores: score of piece {} is not finite", origin, id);
      int t = static_cast<int>(v_.types[id]);
      if (t < 1 || t > 6) Fail("{}: types: piece {} has invalid type {}", origin, id, t);
      switch (v_.types[id]) {
        case TokenType::Byte: {
          int b = ParseBytePiece(p);
          if (b < 0) Fail("{}: pieces: byte piece {} is {}, expected <0xNN>", origin, id, Quoted(p));
          if (byte_id_[b] < 0) byte_id_[b] = id;
          decoded_[id] = std::string(1, static_cast<char>(b));
          break;
        }
        case TokenType::Control:
        case TokenType::Unused: skip_[id] = 1; break;
        case TokenType::Unknown: decoded_[id] = p; break;
        case TokenType::Normal:
        case TokenType::UserDefined:
          if (p.empty()) Fail("{}: pieces: piece {} is empty", origin, id);
          decoded_[id] = space_ == " " ? p : ReplaceAll(p, space_, " ");
          // First occurrence wins for duplicated pieces, like a stable sorted lookup.
          piece_id_.emplace(p, id);
          if (v_.types[id] == TokenType::UserDefined) user_defined_.push_back(id);
          break;
      }
    }
  }

  std::vector<int> Encode(std::string_view text, bool add_bos) const override {
    std::vector<int> out;
    if (add_bos) out.push_back(v_.bos_id);
    if (text.empty()) return out;
    // Dummy prefix: run.c prepends the " " piece; SPM prepends "▁" and maps spaces.
    std::string norm = space_;
    norm += space_ == " " ? std::string(text) : ReplaceAll(text, " ", space_);

    std::vector<int> ids;  // [chars..] one id per character, or per byte on fallback
    ids.reserve(norm.size());
    // Characters as run.c cuts them: a lead byte plus up to 3 continuation bytes.
    // SentencePiece first matches user-defined pieces verbatim (longest first).
    for (size_t i = 0; i < norm.size();) {
      if (int ud = MatchUserDefined(norm, i); ud >= 0) {
        ids.push_back(ud);
        i += v_.pieces[ud].size();
        continue;
      }
      size_t len = 1;
      while (len < 4 && i + len < norm.size() && (static_cast<unsigned char>(norm[i + len]) & 0xC0) == 0x80) ++len;
      std::string_view ch(norm.data() + i, len);
      if (auto it = piece_id_.find(ch); it != piece_id_.end()) {
        ids.push_back(it->second);
      } else {
        for (unsigned char b : ch) {
          int id = byte_id_[b] >= 0 ? byte_id_[b] : v_.unk_id;
          if (id < 0) Fail("score-bpe: encode: byte 0x{:02X} has no piece and the vocabulary no <unk>", b);
          ids.push_back(id);
        }
      }
      i += len;
    }
    // run.c's test, without its rescans: (a, b) merges into the piece spelled
    // piece(a) + piece(b), if any (only normal pieces are in piece_id_).
    std::string both;
    MergePairs(ids, [&](int a, int b) {
      both.assign(v_.pieces[a]).append(v_.pieces[b]);
      auto it = piece_id_.find(both);
      if (it == piece_id_.end()) return PairMerge{};
      return PairMerge{it->second, -static_cast<double>(v_.scores[it->second])};
    });
    out.insert(out.end(), ids.begin(), ids.end());
    return out;
  }

  std::string Decode(std::span<const int> ids, Specials specials) const override {
    std::string out;
    bool first = true;
    for (int id : ids) {
      if (id < 0 || id >= vocab_size()) Fail("score-bpe: decode: id {} outside vocabulary of {}", id, vocab_size());
      if (skip_[id]) {
        if (specials == Specials::kKeep) out.append(v_.pieces[id]);
        continue;
      }
      std::string_view s = decoded_[id];
      // The dummy prefix: run.c strips it after BOS, SentencePiece at the start.
      if (first && !s.empty() && s[0] == ' ') s.remove_prefix(1);
      first = false;
      out.append(s);
    }
    return out;
  }

  int vocab_size() const override { return static_cast<int>(v_.pieces.size()); }
  int bos_id() const override { return v_.bos_id; }
  int eos_id() const override { return v_.eos_id; }
  std::string_view kind() const override { return "llama2c"; }

  Vocab ExportVocab() const override {
    Vocab out = v_;
    if (space_ != kMeta)
      for (size_t i = 0; i < out.pieces.size(); ++i)
        if (out.types[i] == TokenType::Normal || out.types[i] == TokenType::UserDefined)
          out.pieces[i] = ReplaceAll(out.pieces[i], space_, kMeta);
    return out;
  }

 private:
  // Longest user-defined piece starting at s[i], else -1 (GGUF vocabularies only;
  // llama2.c ones have none, so this costs nothing there).
  int MatchUserDefined(std::string_view s, size_t i) const {
    int best = -1;
    for (int id : user_defined_) {
      const std::string& p = v_.pieces[id];
      if (s.compare(i, p.size(), p) == 0 && (best < 0 || p.size() > v_.pieces[best].size())) best = id;
    }
    return best;
  }

  // Types for vocabularies that carry none (llama2.c): bytes by name, BOS/EOS control.
  static std::vector<TokenType> InferTypes(const Vocab& v) {
    std::vector<TokenType> t(v.pieces.size(), TokenType::Normal);
    for (size_t i = 0; i < t.size(); ++i) {
      if (ParseBytePiece(v.pieces[i]) >= 0) t[i] = TokenType::Byte;
      if (v.pieces[i] == "<unk>" || static_cast<int>(i) == v.unk_id) t[i] = TokenType::Unknown;
      if (static_cast<int>(i) == v.bos_id || static_cast<int>(i) == v.eos_id) t[i] = TokenType::Control;
    }
    return t;
  }

  Vocab v_;
  std::string space_;
  PieceMap piece_id_;                 // normal pieces -> id
  std::vector<int> user_defined_;     // ids of UserDefined pieces
  std::array<int, 256> byte_id_;      // byte -> <0xNN> id, -1 if absent
  std::vector<std::string> decoded_;  // [vocab] decoded text per id
  std::vector<char> skip_;            // [vocab] control ids
};

int32_t ReadI32(const std::string& d, size_t pos) {
  int32_t v;
  std::memcpy(&v, d.data() + pos, 4);
  return v;
}

}  // namespace

std::unique_ptr<Tokenizer> LoadLlama2cTokenizer(const std::string& path, int vocab_size) {
  const std::string d = ReadTokenizerFile(path);
  if (d.size() < 4) Fail("{}: max_token_length: file truncated ({} bytes)", path, d.size());
  const int32_t max_len = ReadI32(d, 0);
  if (max_len <= 0 || max_len > 65536) Fail("{}: max_token_length: {} out of range [1, 65536]", path, max_len);
  Vocab v;
  size_t pos = 4;
  for (int i = 0; vocab_size > 0 ? i < vocab_size : pos < d.size(); ++i) {
    if (pos + 8 > d.size())
      Fail("{}: token {}: score/len truncated at offset {} (file {} bytes, vocab_size {})", path, i, pos, d.size(),
           vocab_size);
    float score;
    std::memcpy(&score, d.data() + pos, 4);
    const int32_t len = ReadI32(d, pos + 4);
    pos += 8;
    if (len < 1 || len > max_len) Fail("{}: token {}: len {} outside [1, max_token_length={}]", path, i, len, max_len);
    if (pos + static_cast<size_t>(len) > d.size())
      Fail("{}: token {}: piece of {} bytes runs past end of file at offset {}", path, i, len, pos);
    v.pieces.emplace_back(d.data() + pos, static_cast<size_t>(len));
    v.scores.push_back(score);
    pos += static_cast<size_t>(len);
  }
  // A tokenizer for a larger vocabulary (tokenizer.bin of 32000 beside a 512-token
  // checkpoint) would load its first pieces and decode garbage.
  if (vocab_size > 0 && pos != d.size())
    Fail("{}: vocab_size: the model has {} tokens but the file holds more pieces ({} bytes left after token {})", path,
         vocab_size, d.size() - pos, vocab_size - 1);
  if (v.pieces.size() < 3) Fail("{}: vocab_size: {} pieces, need <unk>, <s>, </s> at 0..2", path, v.pieces.size());
  // llama2.c's export spells BOS/EOS "\n<s>\n" and "\n</s>\n"; use SPM's names.
  for (int id : {1, 2}) {
    std::string& p = v.pieces[id];
    if (p.size() > 2 && p.front() == '\n' && p.back() == '\n') p = p.substr(1, p.size() - 2);
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  return std::make_unique<ScoreBpeTokenizer>(std::move(v), " ", path);
}

std::unique_ptr<Tokenizer> MakeScoreBpeTokenizer(Vocab vocab) {
  return std::make_unique<ScoreBpeTokenizer>(std::move(vocab), std::string(kMeta), "vocab");
}

}  // namespace specsweep
