#include "quant/qtype.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "models/error.h"

namespace specsweep {

int BlockSize(QType t) {
  switch (t) {
    case QType::Q8_0:
    case QType::Q4_0: return 32;
    case QType::Q4_G64: return 64;
    case QType::Q4_G128: return 128;
    default: return 1;
  }
}

size_t BlockBytes(QType t) {
  switch (t) {
    case QType::F32: return 4;
    case QType::F16:
    case QType::BF16: return 2;
    case QType::Q8_0: return 2 + 32;
    case QType::Q4_0: return 2 + 16;
    case QType::Q4_G64: return 2 + 32;
    case QType::Q4_G128: return 2 + 64;
  }
  return 0;
}

bool IsQuantized(QType t) { return BlockSize(t) > 1; }

std::string_view QTypeName(QType t) {
  switch (t) {
    case QType::F32: return "f32";
    case QType::F16: return "f16";
    case QType::BF16: return "bf16";
    case QType::Q8_0: return "q8_0";
    case QType::Q4_0: return "q4_0";
    case QType::Q4_G64: return "q4_g64";
    case QType::Q4_G128: return "q4_g128";
  }
  return "?";
}

QType ParseQType(std::string_view name, std::string_view what) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  for (QType t : {QType::F32, QType::F16, QType::BF16, QType::Q8_0, QType::Q4_0, QType::Q4_G64,
                  QType::Q4_G128})
    if (s == QTypeName(t)) return t;
  Fail("{}: unknown quantization type '{}' (expected f32, f16, bf16, q8_0, q4_0, q4_g64, q4_g128)",
       what, name);
}

}  // namespace specsweep
