// SentencePiece .model files through libsentencepiece: a thin wrapper that maps its
// status codes to Error and exports the vocabulary for GGUF.
#include <filesystem>

#include <sentencepiece_processor.h>

#include "base/error.h"
#include "models/tokenizer.h"

namespace specsweep {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& path) : path_(path) {
    if (!std::filesystem::is_regular_file(path)) Fail("{}: cannot open", path);
    if (auto st = sp_.Load(path); !st.ok()) Fail("{}: model: {}", path, st.ToString());
    n_ = sp_.GetPieceSize();
    if (n_ <= 0) Fail("{}: pieces: empty vocabulary", path);
    // Models without BOS/EOS (-1) keep the llama convention so ids stay valid.
    bos_ = sp_.bos_id() >= 0 ? sp_.bos_id() : 1;
    eos_ = sp_.eos_id() >= 0 ? sp_.eos_id() : 2;
    if (bos_ >= n_ || eos_ >= n_) Fail("{}: bos_id/eos_id: {}/{} outside vocabulary of {}", path, bos_, eos_, n_);
  }

  std::vector<int> Encode(std::string_view text, bool add_bos) const override {
    std::vector<int> ids;
    if (add_bos) ids.push_back(bos_);
    std::vector<int> body;
    if (auto st = sp_.Encode(text, &body); !st.ok()) Fail("{}: encode: {}", path_, st.ToString());
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
  }

  std::string Decode(std::span<const int> ids, Specials specials) const override {
    for (int id : ids)
      if (id < 0 || id >= n_) Fail("{}: decode: id {} outside vocabulary of {}", path_, id, n_);
    if (specials == Specials::kSkip) return DecodeRun(ids);
    // libsentencepiece drops control ids: decode the runs between them, and write
    // each control piece itself.
    std::string text;
    size_t start = 0;
    for (size_t i = 0; i <= ids.size(); ++i) {
      if (i < ids.size() && !sp_.IsControl(ids[i])) continue;
      text += DecodeRun(ids.subspan(start, i - start));
      if (i < ids.size()) text += sp_.IdToPiece(ids[i]);
      start = i + 1;
    }
    return text;
  }

  int vocab_size() const override { return n_; }
  int bos_id() const override { return bos_; }
  int eos_id() const override { return eos_; }
  std::string_view kind() const override { return "sentencepiece"; }

  Vocab ExportVocab() const override {
    Vocab v;
    for (int i = 0; i < n_; ++i) {
      v.pieces.push_back(sp_.IdToPiece(i));
      v.scores.push_back(sp_.GetScore(i));
      TokenType t = TokenType::Normal;
      if (sp_.IsControl(i))
        t = TokenType::Control;
      else if (sp_.IsUnknown(i))
        t = TokenType::Unknown;
      else if (sp_.IsByte(i))
        t = TokenType::Byte;
      else if (sp_.IsUnused(i))
        t = TokenType::Unused;
      v.types.push_back(t);
    }
    v.bos_id = bos_;
    v.eos_id = eos_;
    v.unk_id = sp_.unk_id();
    return v;
  }

 private:
  std::string DecodeRun(std::span<const int> ids) const {
    std::string text;
    if (auto st = sp_.Decode(std::vector<int>(ids.begin(), ids.end()), &text); !st.ok())
      Fail("{}: decode: {}", path_, st.ToString());
    return text;
  }

  std::string path_;
  sentencepiece::SentencePieceProcessor sp_;
  int n_ = 0, bos_ = 1, eos_ = 2;
};

}  // namespace

std::unique_ptr<Tokenizer> LoadSentencePieceTokenizer(const std::string& path) {
  return std::make_unique<SentencePieceTokenizer>(path);
}

}  // namespace specsweep
