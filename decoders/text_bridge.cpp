#include "decoders/text_bridge.h"

#include <algorithm>
#include <cstdio>

namespace specsweep {
namespace {

const std::string kMeta = "\u2581";

std::string Spaced(const std::string& piece) {
  std::string out;
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kMeta.size(), kMeta) == 0) {
      out += ' ';
      i += kMeta.size();
    } else {
      out += piece[i++];
    }
  }
  return out;
}

}  // namespace

TextBridge::TextBridge(std::shared_ptr<const Tokenizer> tok) : tok_(std::move(tok)) {
  const Vocab v = tok_->ExportVocab();  // pieces spelled with "▁" whatever the format
  const size_t n = v.pieces.size();
  word_start_.resize(n);
  spaces_.resize(n);
  std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
  for (size_t i = 0; i < n; ++i) {
    const std::string& p = v.pieces[i];
    word_start_[i] = p.starts_with(kMeta);
    size_t m = 0;
    while (m * kMeta.size() < p.size() && p.compare(m * kMeta.size(), kMeta.size(), kMeta) == 0) ++m;
    if (!p.empty() && m * kMeta.size() == p.size() && m < 256) spaces_[i] = static_cast<unsigned char>(m);
    unsigned byte = 0;
    if (p.size() == 6 && std::sscanf(p.c_str(), "<0x%2X>", &byte) == 1) {
      if (byte_ids_[byte] < 0) byte_ids_[byte] = static_cast<int>(i);
      continue;
    }
    const TokenType t = i < v.types.size() ? v.types[i] : TokenType::Normal;
    if (t != TokenType::Normal && t != TokenType::UserDefined) continue;
    if (static_cast<int>(i) == tok_->bos_id() || static_cast<int>(i) == tok_->eos_id()) continue;
    const std::string s = Spaced(p);
    if (s.empty()) continue;
    piece_ids_.emplace(s, static_cast<int>(i));  // first id wins, as a tokenizer would
    longest_piece_ = std::max(longest_piece_, s.size());
  }
}

int TextBridge::RunStart(std::span<const int> ids) const {
  for (int i = static_cast<int>(ids.size()) - 1; i >= 0; --i)
    if (IsControl(ids[i])) return i + 1;
  return 0;
}

int TextBridge::WindowStart(std::span<const int> ids) const {
  const int floor = RunStart(ids), n = static_cast<int>(ids.size());
  const int lowest = std::max(floor, n - kMaxWindow);
  for (int j = n - kBack; j > lowest; --j)
    if (ids[j] >= 0 && ids[j] < static_cast<int>(word_start_.size()) && word_start_[ids[j]]) return j;
  return std::min(lowest, n);
}

std::optional<std::string> TextBridge::TextAfter(std::span<const int> ids, int from, int to) const {
  const int j = WindowStart(ids.first(from));
  const std::string head = tok_->Decode(ids.subspan(j, from - j));
  const std::string full = tok_->Decode(ids.subspan(j, to - j));
  if (!full.starts_with(head)) return std::nullopt;
  return full.substr(head.size());
}

std::optional<std::vector<int>> TextBridge::Spell(std::string_view s) const {
  std::vector<int> out;
  for (size_t i = 0; i < s.size();) {
    size_t len = std::min(longest_piece_, s.size() - i);
    for (; len > 0; --len) {
      auto it = piece_ids_.find(std::string(s.substr(i, len)));
      if (it == piece_ids_.end()) continue;
      out.push_back(it->second);
      break;
    }
    if (len == 0) {
      const int b = byte_ids_[static_cast<unsigned char>(s[i])];
      if (b < 0) return std::nullopt;
      out.push_back(b);
      len = 1;
    }
    i += len;
  }
  return out;
}

std::optional<std::vector<int>> TextBridge::Continue(std::span<const int> ids, const std::string& text) const {
  if (text.empty()) return std::vector<int>{};
  const int j = WindowStart(ids);
  const std::string wtext = tok_->Decode(ids.subspan(j));
  if (wtext.empty()) {  // start of a run: the text is encoded as a prompt would be
    if (ids.size() > static_cast<size_t>(j)) return std::nullopt;  // only tokens without text
    return tok_->Encode(text, /*add_bos=*/false);
  }
  const std::vector<int> enc = tok_->Encode(wtext + text, /*add_bos=*/false);
  // The first token reaching the end of the window text (prefix decodes grow monotonically).
  for (size_t e = 1; e <= enc.size(); ++e) {
    const std::string d = tok_->Decode(std::span<const int>(enc).first(e));
    if (d.size() < wtext.size()) continue;
    if (!d.starts_with(wtext)) return std::nullopt;
    std::vector<int> out;
    if (d.size() > wtext.size()) {  // enc[e-1] straddles the committed end
      auto part = Spell(std::string_view(d).substr(wtext.size()));
      if (!part) return std::nullopt;
      out = std::move(*part);
    }
    out.insert(out.end(), enc.begin() + e, enc.end());
    return out;
  }
  return std::nullopt;
}

}  // namespace specsweep
