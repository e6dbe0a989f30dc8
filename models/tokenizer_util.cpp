#include "models/tokenizer_util.h"

#include <fstream>
#include <sstream>

#include "base/error.h"

namespace specsweep {

std::string ReadTokenizerFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) Fail("{}: cannot open", path);
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) Fail("{}: read error", path);
  return ss.str();
}

static int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int ParseBytePiece(std::string_view p) {
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return -1;
  int hi = HexDigit(p[3]), lo = HexDigit(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string BytePieceName(int byte) { return fmt::format("<0x{:02X}>", byte & 0xFF); }

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  if (from.empty()) return std::string(s);
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    out.append(s.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(s.substr(pos));
  return out;
}

size_t Utf8CharLen(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + len > s.size()) return 1;
  for (size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  return len;
}

}  // namespace specsweep
