// Internal to the GGUF reader (gguf_header.cpp, gguf_vocab.cpp, gguf_reader.cpp): the
// tensor geometry the loader holds, typed access to a parsed header's metadata, and the
// vocabulary read from it.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "models/gguf.h"
#include "models/tokenizer.h"

namespace specsweep::gguf_detail {

// Tensor types the loader can hold in a QMatrix, with their ggml block geometry.
struct GgmlGeometry {
  QType qtype;
  int block;  // elements per block
  int bytes;  // bytes per block
};
bool Geometry(uint32_t t, GgmlGeometry* g);

// Typed access to the metadata of one file, with "FILE: KEY: what" errors.
class Meta {
 public:
  Meta(const GgufHeader& h, const std::string& file) : h_(h), file_(file) {}
  const GgufValue* Find(const std::string& key) const {
    auto it = h_.kv.find(key);
    return it == h_.kv.end() ? nullptr : &it->second;
  }
  const GgufValue& Need(const std::string& key) const {
    const GgufValue* v = Find(key);
    if (!v) Fail("{}: {}: required key is missing", file_, key);
    return *v;
  }
  std::string String(const std::string& key) const {
    const GgufValue& v = Need(key);
    if (v.type != GgufValueType::STRING)
      Fail("{}: {}: expected a string, got {}", file_, key, GgufValueTypeName(v.type));
    return v.s;
  }
  int64_t Int(const GgufValue& v, const std::string& key) const {
    if (!v.is_int()) Fail("{}: {}: expected an integer, got {}", file_, key, GgufValueTypeName(v.type));
    bool is_signed = v.type == GgufValueType::I8 || v.type == GgufValueType::I16 || v.type == GgufValueType::I32 ||
                     v.type == GgufValueType::I64;
    if (!is_signed && v.u > uint64_t{1} << 31) Fail("{}: {}: {} is out of range", file_, key, v.u);
    int64_t x = is_signed ? v.i : static_cast<int64_t>(v.u);
    if (x < INT32_MIN || x > INT32_MAX) Fail("{}: {}: {} is out of range", file_, key, x);
    return x;
  }
  int Int(const std::string& key) const { return static_cast<int>(Int(Need(key), key)); }
  int Int(const std::string& key, int dflt) const {
    const GgufValue* v = Find(key);
    return v ? static_cast<int>(Int(*v, key)) : dflt;
  }
  float Float(const std::string& key, std::optional<float> dflt = std::nullopt) const {
    const GgufValue* v = Find(key);
    if (!v) {
      if (dflt) return *dflt;
      Fail("{}: {}: required key is missing", file_, key);
    }
    if (!v->is_float()) Fail("{}: {}: expected a float, got {}", file_, key, GgufValueTypeName(v->type));
    if (!std::isfinite(v->f) || std::abs(v->f) > 3.0e38)
      Fail("{}: {}: {} is not finite or does not fit a float", file_, key, v->f);
    return static_cast<float>(v->f);
  }
  const std::vector<GgufValue>* Array(const std::string& key, GgufValueType elem, bool required) const {
    const GgufValue* v = required ? &Need(key) : Find(key);
    if (!v) return nullptr;
    if (v->type != GgufValueType::ARRAY || v->elem_type != elem)
      Fail("{}: {}: expected an array of {}", file_, key, GgufValueTypeName(elem));
    return &v->arr;
  }

 private:
  const GgufHeader& h_;
  const std::string& file_;
};

// The vocabulary of the file's tokenizer.ggml.* keys, checked.
Vocab ReadVocab(const Meta& meta, const std::string& file);
// The tokenizer of the file, without the converter's padding pieces.
std::unique_ptr<Tokenizer> MakeTokenizer(const Meta& meta, Vocab vocab, const std::string& file);

}  // namespace specsweep::gguf_detail
