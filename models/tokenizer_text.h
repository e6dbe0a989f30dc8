// Unicode text tools of the byte-level BPE pipeline: PCRE2 regex splitting (the
// pre-tokenizer patterns need \p{L} \p{N}, which PCRE2 has in UTF + UCP mode), NFC
// through utf8proc, GPT-2's byte <-> printable-character map, and lossy UTF-8.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace specsweep {

// One piece of a split: [begin, end) byte offsets and whether it was a match.
struct TextSpan {
  size_t begin = 0, end = 0;
  bool match = false;
};

// A compiled pattern. Construction fails with "<where>: <pcre2 message> at offset N"
// so a bad pattern names its file and field. Invalid UTF-8 in the subject never
// matches (PCRE2_MATCH_INVALID_UTF) instead of aborting the search.
class Regex {
 public:
  // literal: match `pattern` as plain text (HF {"String": ...} patterns).
  Regex(const std::string& pattern, bool literal, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  // Matches and the gaps between them, in order, covering all of s; empty gaps are
  // left out (HF Pattern::find_matches). Safe to call from several threads.
  std::vector<TextSpan> FindAll(std::string_view s) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// HF SplitDelimiterBehavior.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
// Splits s like HF's Split pre-tokenizer; appends the non-empty pieces to out.
void SplitByRegex(const Regex& re, SplitBehavior behavior, bool invert, std::string_view s,
                  std::vector<std::string>& out);

// Unicode NFC; Error "<where>: text is not valid UTF-8" when it cannot be decoded.
std::string NfcNormalize(std::string_view s, const std::string& where);

// GPT-2 byte-level map: every byte to one printable character (UTF-8 of it).
const std::string& ByteToChar(unsigned char b);
std::string ByteLevelEncode(std::string_view bytes);
// Inverse for one token: false (out untouched) if a character is not in the map.
bool ByteLevelDecode(std::string_view token, std::string& out);

// Bytes to valid UTF-8, each maximal invalid subpart replaced by U+FFFD (the
// WHATWG/Unicode practice of TextDecoder and Rust's from_utf8_lossy).
std::string Utf8Lossy(std::string_view bytes);

// Unicode White_Space of the code point starting at s[i]; *len gets its byte length.
bool IsUnicodeSpace(std::string_view s, size_t i, size_t* len);

}  // namespace specsweep
