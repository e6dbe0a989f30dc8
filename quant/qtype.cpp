#include "quant/qtype.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "base/error.h"

namespace specsweep {

int BlockSize(QType t) {
  switch (t) {
    case QType::Q8_0:
    case QType::Q4_0:
    case QType::Q4_1:
    case QType::Q5_0:
    case QType::Q5_1:
    case QType::IQ4_NL: return 32;
    case QType::Q4_G64: return 64;
    case QType::Q4_G128: return 128;
    case QType::Q2_K:
    case QType::Q3_K:
    case QType::Q4_K:
    case QType::Q5_K:
    case QType::Q6_K:
    case QType::IQ4_XS: return 256;
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
    case QType::Q2_K: return 84;   // sizes of ggml's block_qN_K (static_asserts in blocks_k.h)
    case QType::Q3_K: return 110;
    case QType::Q4_K: return 144;
    case QType::Q5_K: return 176;
    case QType::Q6_K: return 210;
    case QType::Q4_1: return 20;   // ggml's block_q4_1 .. block_iq4_xs (blocks_legacy.h)
    case QType::Q5_0: return 22;
    case QType::Q5_1: return 24;
    case QType::IQ4_NL: return 18;
    case QType::IQ4_XS: return 136;
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
    case QType::Q2_K: return "q2_k";
    case QType::Q3_K: return "q3_k";
    case QType::Q4_K: return "q4_k";
    case QType::Q5_K: return "q5_k";
    case QType::Q6_K: return "q6_k";
    case QType::Q4_1: return "q4_1";
    case QType::Q5_0: return "q5_0";
    case QType::Q5_1: return "q5_1";
    case QType::IQ4_NL: return "iq4_nl";
    case QType::IQ4_XS: return "iq4_xs";
  }
  return "?";
}

QType ParseQType(std::string_view name, std::string_view what) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  for (int t = 0; t < kQTypeCount; ++t)
    if (s == QTypeName(static_cast<QType>(t))) return static_cast<QType>(t);
  Fail("{}: unknown quantization type '{}' (expected f32, f16, bf16, q8_0, q4_0, q4_g64, q4_g128, "
       "q2_k, q3_k, q4_k, q5_k, q6_k, q4_1, q5_0, q5_1, iq4_nl, iq4_xs)",
       what, name);
}

bool CanQuantizeTo(QType t) { return t != QType::Q2_K && t != QType::Q3_K; }

std::string LoadOnlyReason(QType t) {
  return fmt::format("{} is load-only (GGUF files of it are read and run; there is no quantizer for it): use "
                     "q4_k, q5_k, q6_k, q4_0 or q8_0", QTypeName(t));
}

QType ParseQuantizeTarget(std::string_view name, std::string_view what) {
  const QType t = ParseQType(name, what);
  if (!CanQuantizeTo(t)) Fail("{}: {}", what, LoadOnlyReason(t));
  return t;
}

}  // namespace specsweep
