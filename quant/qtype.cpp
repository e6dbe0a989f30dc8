#include "quant/qtype.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "base/error.h"

namespace specsweep {

QType ParseQType(std::string_view name, std::string_view what) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string names;  // every format, in table order
  for (const QTypeTraits& t : kQTypes) {
    if (s == t.name) return t.type;
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  }
  Fail("{}: unknown quantization type '{}' (expected {})", what, name, names);
}

std::string LoadOnlyReason(QType t) {
  return fmt::format(
      "{} is load-only (GGUF files of it are read and run; there is no quantizer for it): use "
      "q4_k, q5_k, q6_k, q4_0 or q8_0",
      QTypeName(t));
}

QType ParseQuantizeTarget(std::string_view name, std::string_view what) {
  const QType t = ParseQType(name, what);
  if (!CanQuantizeTo(t)) Fail("{}: {}", what, LoadOnlyReason(t));
  return t;
}

}  // namespace specsweep
