// Text lengths as a reader sees them.
#pragma once
#include <cstddef>
#include <string_view>

namespace specsweep {

// UTF-8 code points of `s` (continuation bytes not counted): "1.52x ±0.08†" is 12, not 15.
inline size_t Utf8Length(std::string_view s) {
  size_t n = 0;
  for (unsigned char b : s) n += (b & 0xC0) != 0x80;
  return n;
}

}  // namespace specsweep
