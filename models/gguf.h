// GGUF (llama.cpp) files: a generic header parser, the "llama" model loader
// (LoadGguf, declared in models/loader.h) and a writer.
//
// Layout (little endian): magic "GGUF", u32 version (2 or 3), u64 tensor_count,
// u64 kv_count, kv pairs (string key, u32 value type, value), tensor infos (string
// name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset), padding to
// general.alignment, tensor data (each offset relative to the data section start and
// aligned). ne[0] is the fastest-varying dimension (columns), ne[1] the rows.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "models/model.h"
#include "models/tokenizer.h"
#include "quant/qtype.h"

namespace specsweep {

enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
std::string_view GgufValueTypeName(GgufValueType t);

// ggml tensor type ids used by specsweep (the rest are recognised only by name).
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30
};
// "F32", "Q6_K", ... for any ggml id; "" for ids ggml does not define.
std::string_view GgmlTypeName(uint32_t ggml_type);
// Maps our storage type to ggml; throws Error for types GGUF cannot hold (Q4_G64/G128).
GgmlType ToGgmlType(QType t, std::string_view what);
// The storage type of a ggml type id; false for types specsweep does not hold.
bool FromGgmlType(uint32_t ggml_type, QType* t);

// One metadata value. Scalars use the member matching their type class; arrays hold
// elements of one type (nested arrays are allowed by the format but unused here).
struct GgufValue {
  GgufValueType type = GgufValueType::U32;
  uint64_t u = 0;                                // U8/U16/U32/U64/BOOL
  int64_t i = 0;                                 // I8/I16/I32/I64
  double f = 0;                                  // F32/F64
  std::string s;                                 // STRING
  GgufValueType elem_type = GgufValueType::U32;  // ARRAY
  std::vector<GgufValue> arr;                    // ARRAY

  bool is_int() const;
  bool is_float() const;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> ne;  // ggml order: ne[0] = columns
  uint32_t type = 0;         // ggml type id
  uint64_t offset = 0;       // relative to the data section
  uint64_t bytes = 0;        // computed from ne and type
};

// A parsed header over the whole file; tensor data stays in the file.
struct GgufHeader {
  uint32_t version = 0;
  uint32_t alignment = 32;
  uint64_t data_offset = 0;  // absolute start of the data section
  std::map<std::string, GgufValue> kv;
  std::vector<GgufTensorInfo> tensors;
};

// Parses and validates the header of `bytes[size]` (magic, version, counts, string
// and array lengths, value and tensor types, offsets inside the file, no overlaps).
// `file` names the source in errors: "FILE: FIELD: what".
GgufHeader ParseGgufHeader(const uint8_t* bytes, size_t size, const std::string& file);

// What the writer stored for one tensor (commands print it).
struct GgufWrittenTensor {
  std::string name;
  std::string type;          // ggml name: "F32", "Q4_0", ...
  std::vector<uint64_t> ne;  // ggml order
  uint64_t bytes = 0;
  std::string note;  // why the type differs from the in-memory one, else ""
};

// Writes model + vocabulary as a GGUF v3 "llama" file (atomically: temp file, then
// rename). Matrices keep their in-memory type; a padded block-quantized matrix
// (columns not a multiple of 32) cannot be stored as such and is written as F16 with a
// note. The output tensor is omitted (tied) when the model is tied and the classifier
// is byte-identical to the embedding. Throws Error for Q4_G64/Q4_G128 and I/O errors.
std::vector<GgufWrittenTensor> WriteGguf(const Model& model, const Tokenizer& tokenizer, const std::string& path);

}  // namespace specsweep
