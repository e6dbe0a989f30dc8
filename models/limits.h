// Limits on what an input file may declare, checked before anything is allocated, and
// the checks every loader shares: non-finite weights, over-long quoted values.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "quant/qmatrix.h"

namespace specsweep {

// Nested containers a parser follows (tokenizer.json Sequence normalizers/decoders).
constexpr int kMaxNesting = 32;
// Token ids and vocabulary sizes: 4M is 16x the largest real vocabulary (256k).
constexpr int64_t kMaxVocab = int64_t{1} << 22;
// Nodes an experiment file may expand to once YAML aliases are followed (billion laughs):
// 65536 is hundreds of times any real grid or inline prompt list, and a bomb fails in
// milliseconds (at 2^20 each fuzzed bomb took ~50 ms under ASan).
constexpr int64_t kMaxYamlNodes = 1 << 16;
// Elements of one tensor (GGUF, safetensors): 2^48 is ~10^5 times the largest real
// tensor, and keeps every byte count below 2^64.
constexpr uint64_t kMaxTensorElements = uint64_t{1} << 48;
// Bytes of a value quoted in an error message.
constexpr size_t kMaxQuoted = 64;

// `s` in quotes, cut to kMaxQuoted bytes with its full length after: 'abc...' (100000 bytes).
std::string Quoted(std::string_view s);

// Throws Error("FILE: TENSOR: element E (row R) is NaN/Inf") for a row-layout matrix
// holding a non-finite weight (float types: any element; block types: any scale).
void CheckFinite(const QMatrix& w, std::string_view file, std::string_view tensor);
void CheckFinite(std::span<const float> v, std::string_view file, std::string_view tensor);
// `count` values of float type `type` (F32, F16, BF16) at `data` (any alignment).
void CheckFinite(QType type, const uint8_t* data, size_t count, std::string_view file, std::string_view tensor);

}  // namespace specsweep
