#include "models/tokenizer_text.h"

#include <algorithm>
#include <array>
#include <cstdlib>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include "base/error.h"
#include "models/tokenizer_util.h"

namespace specsweep {

struct Regex::Impl {
  pcre2_code* code = nullptr;
};

Regex::Regex(const std::string& pattern, bool literal, const std::string& where)
    : pattern_(pattern), impl_(std::make_unique<Impl>()) {
  if (pattern.empty()) Fail("{}: empty pattern", where);
  // UCP makes \s \d \w and POSIX classes Unicode-aware; PCRE2 refuses it with LITERAL.
  uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  int err = 0;
  PCRE2_SIZE off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), opts, &err, &off, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    Fail("{}: bad regex: {} at offset {}", where, reinterpret_cast<const char*>(msg), off);
  }
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // optional speed-up; the interpreter is the fallback
}

Regex::~Regex() { pcre2_code_free(impl_->code); }

std::vector<TextSpan> Regex::FindAll(std::string_view s) const {
  std::vector<TextSpan> out;
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> md(pcre2_match_data_create_from_pattern(impl_->code,
                                                                                                         nullptr),
                                                                    pcre2_match_data_free);
  if (!md) Fail("regex '{}': out of memory", pattern_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t pos = 0, prev = 0;
  while (pos <= s.size()) {
    int rc = pcre2_match(impl_->code, subject, s.size(), pos, 0, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      Fail("regex '{}': match failed: {}", pattern_, reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const size_t b = ov[0], e = ov[1];
    if (b > prev) out.push_back({prev, b, false});
    if (e > b) out.push_back({b, e, true});
    prev = e;
    // An empty match: the next search starts one character on (as find_iter does).
    pos = e > b ? e : e < s.size() ? e + Utf8CharLen(s, e) : s.size() + 1;
  }
  if (prev < s.size()) out.push_back({prev, s.size(), false});
  return out;
}

void SplitByRegex(const Regex& re, SplitBehavior behavior, bool invert, std::string_view s,
                  std::vector<std::string>& out) {
  std::vector<TextSpan> spans = re.FindAll(s);
  if (invert)
    for (TextSpan& t : spans) t.match = !t.match;
  // The folds of HF's NormalizedString::split, over [begin, end) spans.
  std::vector<TextSpan> merged;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const TextSpan& t : spans)
        if (!t.match) merged.push_back(t);
      break;
    case SplitBehavior::kIsolated: merged = spans; break;
    case SplitBehavior::kMergedWithPrevious: {
      bool prev_match = false;
      for (const TextSpan& t : spans) {
        if (t.match && !prev_match && !merged.empty())
          merged.back().end = t.end;
        else
          merged.push_back(t);
        prev_match = t.match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool prev_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->match && !prev_match && !merged.empty())
          merged.back().begin = it->begin;
        else
          merged.push_back(*it);
        prev_match = it->match;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    }
    case SplitBehavior::kContiguous:
      for (size_t k = 0; k < spans.size(); ++k) {
        if (k > 0 && spans[k].match == spans[k - 1].match)
          merged.back().end = spans[k].end;
        else
          merged.push_back(spans[k]);
      }
      break;
  }
  for (const TextSpan& t : merged)
    if (t.end > t.begin) out.emplace_back(s.substr(t.begin, t.end - t.begin));
}

std::string NfcNormalize(std::string_view s, const std::string& where) {
  bool ascii = true;
  for (char c : s) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(s);  // NFC leaves ASCII alone
  utf8proc_uint8_t* dst = nullptr;
  utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()), &dst,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) Fail("{}: text is not valid UTF-8 ({})", where, utf8proc_errmsg(n));
  std::string out(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
  return out;
}

namespace {

// Code point at s[i] (1..4 bytes, *len set), or -1 for an invalid sequence (*len = 1).
int32_t DecodeCodePoint(std::string_view s, size_t i, size_t* len) {
  const size_t n = Utf8CharLen(s, i);
  *len = n;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + i);
  if (n == 1) return p[0] < 0x80 ? p[0] : -1;
  int32_t cp = p[0] & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (p[k] & 0x3F);
  return cp;
}

void AppendUtf8(int32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other
// 68 bytes take code points 256, 257, ... in byte order.
struct ByteMap {
  std::array<std::string, 256> to_char;
  std::array<int16_t, 512> to_byte;  // code point -> byte, -1 if none
  ByteMap() {
    to_byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const int cp = printable ? b : next++;
      AppendUtf8(cp, to_char[b]);
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};
const ByteMap& Map() {
  static const ByteMap m;
  return m;
}

}  // namespace

const std::string& ByteToChar(unsigned char b) { return Map().to_char[b]; }

std::string ByteLevelEncode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += Map().to_char[b];
  return out;
}

bool ByteLevelDecode(std::string_view token, std::string& out) {
  std::string bytes;
  for (size_t i = 0, len = 0; i < token.size(); i += len) {
    int32_t cp = DecodeCodePoint(token, i, &len);
    if (cp < 0 || cp >= 512 || Map().to_byte[cp] < 0) return false;
    bytes += static_cast<char>(Map().to_byte[cp]);
  }
  out += bytes;
  return true;
}

std::string Utf8Lossy(std::string_view s) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // Continuation count and the allowed range of the second byte (no overlongs,
    // surrogates or code points past U+10FFFF).
    int need = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
      need = 1;
    else if (c == 0xE0)
      need = 2, lo = 0xA0;
    else if (c == 0xED)
      need = 2, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF)
      need = 2;
    else if (c == 0xF0)
      need = 3, lo = 0x90;
    else if (c == 0xF4)
      need = 3, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3)
      need = 3;
    size_t j = i + 1;
    int k = 0;
    while (k < need && j < s.size()) {
      const unsigned char b = static_cast<unsigned char>(s[j]);
      if (k == 0 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
      ++j;
      ++k;
    }
    if (need > 0 && k == need)
      out.append(s.substr(i, j - i));
    else
      out.append(kReplacement);
    i = j;  // past the maximal invalid subpart (at least one byte)
  }
  return out;
}

bool IsUnicodeSpace(std::string_view s, size_t i, size_t* len) {
  const int32_t c = DecodeCodePoint(s, i, len);
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace specsweep
