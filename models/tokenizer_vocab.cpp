// Token-table comparison for target/draft pairs loaded from different formats.
#include "base/error.h"
#include "models/tokenizer.h"

namespace specsweep {
namespace {

// Control characters as \xNN, so the message stays on one line.
std::string Printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) out += c < 0x20 || c == 0x7F ? fmt::format("\\x{:02X}", c) : std::string(1, c);
  return out;
}

}  // namespace

bool SameVocabulary(const Tokenizer& a, const Tokenizer& b, std::string* why) {
  auto say = [&](std::string msg) {
    if (why) *why = std::move(msg);
    return false;
  };
  if (a.vocab_size() != b.vocab_size())
    return say(fmt::format("{} tokens vs {} tokens", a.vocab_size(), b.vocab_size()));
  // ExportVocab spells pieces the same way for every format (SPM "▁", GPT-2 byte
  // characters, <0xNN> bytes), so equal tables compare equal across formats.
  const Vocab va = a.ExportVocab(), vb = b.ExportVocab();
  if (va.pieces.size() != vb.pieces.size())
    return say(fmt::format("{} pieces vs {} pieces", va.pieces.size(), vb.pieces.size()));
  size_t differ = 0, first = 0;
  for (size_t id = 0; id < va.pieces.size(); ++id)
    if (va.pieces[id] != vb.pieces[id] && differ++ == 0) first = id;
  if (differ > 0)
    return say(fmt::format("{} of {} ids have different pieces, first id {}: '{}' vs '{}'", differ, va.pieces.size(),
                           first, Printable(va.pieces[first]), Printable(vb.pieces[first])));
  if (why) why->clear();
  return true;
}

}  // namespace specsweep
