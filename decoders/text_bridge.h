// Text as the common ground of two vocabularies (cross-tokenizer drafting).
//
// Re-encoding a whole sequence every step would cost O(length) per step and would
// disagree with tokens already committed whenever a model emitted a non-canonical
// split. So text is appended to a token sequence without touching it:
//   window  = the last tokens (from a word start kBack or more tokens back, at most
//             kMaxWindow tokens), decoded;
//   enc     = Encode(window text + new text);
//   e       = the first enc token that reaches the end of the window text;
//   result  = the part of enc[e-1] past the window (when a token straddles the old end,
//             e.g. committed "go▁" + "to the" encodes as "go▁to▁the▁"), spelled with the
//             longest vocabulary pieces, then enc[e..].
// The result spells exactly the new text after the committed tokens; BPE without a
// pre-tokenizer (tinystories-656k) merges across spaces, which is why straddling
// tokens are normal and a window that must re-encode to itself would rarely do so.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/tokenizer.h"

namespace specsweep {

class TextBridge {
 public:
  explicit TextBridge(std::shared_ptr<const Tokenizer> tok);
  const Tokenizer& tok() const { return *tok_; }
  bool IsControl(int id) const { return id == tok_->bos_id() || id == tok_->eos_id(); }
  // First position of the text run that ends ids: just after the last BOS/EOS, else 0.
  int RunStart(std::span<const int> ids) const;
  // Start of the re-encoding window of ids (see above); < ids.size() when the run is
  // not empty.
  int WindowStart(std::span<const int> ids) const;
  // The text ids[from..to) add after ids[..from) (no control token in between),
  // decoded within a window; nullopt when the window's decoding is not prefix-stable.
  std::optional<std::string> TextAfter(std::span<const int> ids, int from, int to) const;
  // Tokens that continue ids (kept as they are) with exactly `text`; nullopt when the
  // text cannot be spelled (a character without piece or byte token).
  std::optional<std::vector<int>> Continue(std::span<const int> ids, const std::string& text) const;
  // Number of spaces when the piece is only "▁"s (a space the next word did not absorb), else 0.
  int SpaceOnly(int id) const { return id >= 0 && id < static_cast<int>(spaces_.size()) ? spaces_[id] : 0; }

  static constexpr int kBack = 2, kMaxWindow = 12;

 private:
  // Longest-piece-first spelling of s (byte tokens for what no piece covers).
  std::optional<std::vector<int>> Spell(std::string_view s) const;

  std::shared_ptr<const Tokenizer> tok_;
  std::vector<unsigned char> word_start_;           // [vocab] piece begins with "▁"
  std::vector<unsigned char> spaces_;               // [vocab] see SpaceOnly
  std::unordered_map<std::string, int> piece_ids_;  // decoded piece text -> id
  size_t longest_piece_ = 0;
  int byte_ids_[256];  // <0xNN> tokens, -1 when absent
};

}  // namespace specsweep
