// GGUF reader: a bounds-checked header parser (every length and count is checked
// against the bytes left before anything is allocated) and the "llama" loader that
// copies tensor data out of the memory-mapped file into Model matrices.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <utility>

#include "base/error.h"
#include "base/status_line.h"
#include "models/gguf.h"
#include "models/limits.h"
#include "models/loader.h"
#include "models/mapped_file.h"
#include "quant/huge_pages.h"
#include "quant/matmul.h"

namespace specsweep {

static_assert(std::endian::native == std::endian::little, "GGUF reader assumes a little-endian host");

std::string_view GgufValueTypeName(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: return "u8";
    case GgufValueType::I8: return "i8";
    case GgufValueType::U16: return "u16";
    case GgufValueType::I16: return "i16";
    case GgufValueType::U32: return "u32";
    case GgufValueType::I32: return "i32";
    case GgufValueType::F32: return "f32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::U64: return "u64";
    case GgufValueType::I64: return "i64";
    case GgufValueType::F64: return "f64";
  }
  return "?";
}

std::string_view GgmlTypeName(uint32_t t) {
  // ggml.h enum ggml_type; gaps are ids ggml removed.
  static constexpr std::string_view kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",   "",       "",       "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",   "Q4_K",   "Q5_K",   "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S",  "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",    "F64",    "IQ1_M",  "BF16",  "",
      "",        "",       "TQ1_0",   "TQ2_0",  "",       "",       "",      "MXFP4"};
  return t < std::size(kNames) ? kNames[t] : std::string_view{};
}

GgmlType ToGgmlType(QType t, std::string_view what) {
  switch (t) {
    case QType::F32: return GgmlType::F32;
    case QType::F16: return GgmlType::F16;
    case QType::BF16: return GgmlType::BF16;
    case QType::Q8_0: return GgmlType::Q8_0;
    case QType::Q4_0: return GgmlType::Q4_0;
    case QType::Q2_K: return GgmlType::Q2_K;
    case QType::Q3_K: return GgmlType::Q3_K;
    case QType::Q4_K: return GgmlType::Q4_K;
    case QType::Q5_K: return GgmlType::Q5_K;
    case QType::Q6_K: return GgmlType::Q6_K;
    case QType::Q4_1: return GgmlType::Q4_1;
    case QType::Q5_0: return GgmlType::Q5_0;
    case QType::Q5_1: return GgmlType::Q5_1;
    case QType::IQ4_NL: return GgmlType::IQ4_NL;
    case QType::IQ4_XS: return GgmlType::IQ4_XS;
    default: break;
  }
  Fail("{}: {} has no GGUF equivalent (use any type but q4_g64 and q4_g128)", what, QTypeName(t));
}

bool FromGgmlType(uint32_t ggml_type, QType* t) {
  for (int k = 0; k < kQTypeCount; ++k) {
    const QType q = static_cast<QType>(k);
    if (q != QType::Q4_G64 && q != QType::Q4_G128 && static_cast<uint32_t>(ToGgmlType(q, "")) == ggml_type) {
      *t = q;
      return true;
    }
  }
  return false;
}

bool GgufValue::is_int() const {
  switch (type) {
    case GgufValueType::U8: case GgufValueType::U16: case GgufValueType::U32: case GgufValueType::U64:
    case GgufValueType::I8: case GgufValueType::I16: case GgufValueType::I32: case GgufValueType::I64:
      return true;
    default: return false;
  }
}
bool GgufValue::is_float() const { return type == GgufValueType::F32 || type == GgufValueType::F64; }

namespace {

// Tensor types the loader can hold in a QMatrix, with their ggml block geometry.
struct GgmlGeometry {
  QType qtype;
  int block;     // elements per block
  int bytes;     // bytes per block
};
bool Geometry(uint32_t t, GgmlGeometry* g) {
  QType q;
  if (!FromGgmlType(t, &q)) return false;
  *g = {q, BlockSize(q), static_cast<int>(BlockBytes(q))};
  return true;
}

// Smallest encoding of one value of a type (for "is this count absurd" checks).
size_t MinValueBytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::BOOL: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
    case GgufValueType::STRING: return 8;      // u64 length
    case GgufValueType::ARRAY: return 4 + 8;   // u32 type + u64 count
  }
  return 1;
}

constexpr uint64_t kMaxCount = uint64_t{1} << 24;  // no sane file has 16M tensors or keys

// Sequential reader over the header; `field` callables build the error field name only
// when something is wrong.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n, const std::string& file) : p_(p), n_(n), file_(file) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return n_ - pos_; }
  const std::string& file() const { return file_; }

  template <typename T, typename F>
  T Read(F&& field) {
    Need(sizeof(T), field);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  template <typename F>
  std::string ReadString(F&& field) {
    uint64_t len = Read<uint64_t>(field);
    if (len > remaining())
      Fail("{}: {}: string length {} runs past the end of the file ({} bytes left)", file_, field(), len,
           remaining());
    std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return s;
  }

  // Count of `min_bytes`-sized items, checked against a hard cap and the bytes left so
  // that nothing is allocated for a corrupt count.
  template <typename F>
  uint64_t ReadCount(size_t min_bytes, F&& field) {
    uint64_t n = Read<uint64_t>(field);
    if (n > kMaxCount) Fail("{}: {}: count {} is absurd (limit {})", file_, field(), n, kMaxCount);
    CheckFits(n, min_bytes, field);
    return n;
  }
  template <typename F>
  void CheckFits(uint64_t n, size_t min_bytes, F&& field) {
    if (n * min_bytes > remaining())
      Fail("{}: {}: {} items cannot fit in the {} bytes left (corrupt count or truncated file)", file_, field(),
           n, remaining());
  }

 private:
  template <typename F>
  void Need(size_t k, F&& field) {
    if (k > remaining())
      Fail("{}: {}: truncated (needs {} bytes at offset {}, file has {})", file_, field(), k, pos_, n_);
  }
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const std::string& file_;
};

GgufValueType CheckValueType(Cursor& c, uint32_t t, const std::string& field) {
  if (t > static_cast<uint32_t>(GgufValueType::F64))
    Fail("{}: {}: unknown value type {}", c.file(), field, t);
  return static_cast<GgufValueType>(t);
}

GgufValue ReadValue(Cursor& c, GgufValueType t, const std::string& field, int depth) {
  auto f = [&] { return field; };
  GgufValue v;
  v.type = t;
  switch (t) {
    case GgufValueType::U8: v.u = c.Read<uint8_t>(f); break;
    case GgufValueType::I8: v.i = c.Read<int8_t>(f); break;
    case GgufValueType::U16: v.u = c.Read<uint16_t>(f); break;
    case GgufValueType::I16: v.i = c.Read<int16_t>(f); break;
    case GgufValueType::U32: v.u = c.Read<uint32_t>(f); break;
    case GgufValueType::I32: v.i = c.Read<int32_t>(f); break;
    case GgufValueType::U64: v.u = c.Read<uint64_t>(f); break;
    case GgufValueType::I64: v.i = c.Read<int64_t>(f); break;
    case GgufValueType::F32: v.f = c.Read<float>(f); break;
    case GgufValueType::F64: v.f = c.Read<double>(f); break;
    case GgufValueType::BOOL: {
      uint8_t b = c.Read<uint8_t>(f);
      if (b > 1) Fail("{}: {}: bool value {} is neither 0 nor 1", c.file(), field, b);
      v.u = b;
      break;
    }
    case GgufValueType::STRING: v.s = c.ReadString(f); break;
    case GgufValueType::ARRAY: {
      if (depth >= 2) Fail("{}: {}: arrays nested too deeply", c.file(), field);
      v.elem_type = CheckValueType(c, c.Read<uint32_t>(f), field + ".type");
      uint64_t n = c.ReadCount(MinValueBytes(v.elem_type), [&] { return field + ".count"; });
      v.arr.reserve(n);
      for (uint64_t k = 0; k < n; ++k) {
        // Field names per element only matter on error; build them lazily for speed.
        if (v.elem_type == GgufValueType::STRING) {
          GgufValue e;
          e.type = GgufValueType::STRING;
          e.s = c.ReadString([&] { return fmt::format("{}[{}]", field, k); });
          v.arr.push_back(std::move(e));
        } else {
          v.arr.push_back(ReadValue(c, v.elem_type, field, depth + 1));
        }
      }
      break;
    }
  }
  return v;
}

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

GgufHeader ParseGgufHeader(const uint8_t* bytes, size_t size, const std::string& file) {
  Cursor c(bytes, size, file);
  GgufHeader h;
  uint32_t magic = c.Read<uint32_t>([] { return "header.magic"; });
  if (magic != 0x46554747u)  // "GGUF" little endian
    Fail("{}: header.magic: not a GGUF file (first bytes {:08x}, expected 'GGUF')", file, magic);
  h.version = c.Read<uint32_t>([] { return "header.version"; });
  if (h.version != 2 && h.version != 3)
    Fail("{}: header.version: {} is not supported (2 or 3)", file, h.version);
  // Tensor infos follow the metadata: their count is checked against the bytes left after it.
  const uint64_t n_tensors = c.Read<uint64_t>([] { return "header.tensor_count"; });
  if (n_tensors > kMaxCount)
    Fail("{}: header.tensor_count: count {} is absurd (limit {})", file, n_tensors, kMaxCount);
  // Minimum kv: key length + 1 byte, value type, one byte of value.
  uint64_t n_kv = c.ReadCount(8 + 1 + 4 + 1, [] { return "header.kv_count"; });

  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = c.ReadString([&] { return fmt::format("kv[{}].key", k); });
    if (key.empty()) Fail("{}: kv[{}].key: empty key", file, k);
    std::string field = "kv '" + key + "'";
    auto t = CheckValueType(c, c.Read<uint32_t>([&] { return field + ".type"; }), field + ".type");
    GgufValue v = ReadValue(c, t, field, 0);
    if (!h.kv.emplace(key, std::move(v)).second) Fail("{}: {}: duplicate key", file, field);
  }

  if (auto it = h.kv.find("general.alignment"); it != h.kv.end()) {
    const GgufValue& a = it->second;
    // Scalars keep unsigned values in .u and signed ones in .i; the other is 0.
    uint64_t al = a.is_int() ? (a.i > 0 ? static_cast<uint64_t>(a.i) : a.u) : 0;
    if (!a.is_int() || al == 0 || al > 65536 || (al & (al - 1)))
      Fail("{}: general.alignment: must be a power of two integer <= 65536", file);
    h.alignment = static_cast<uint32_t>(al);
  }

  // Minimum tensor info: name length + 1 byte, n_dims, one ne, type, offset.
  c.CheckFits(n_tensors, 8 + 1 + 4 + 8 + 4 + 8, [] { return "header.tensor_count"; });
  std::set<std::string> names;
  h.tensors.reserve(n_tensors);
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo ti;
    ti.name = c.ReadString([&] { return fmt::format("tensor[{}].name", k); });
    std::string field = "tensor '" + ti.name + "'";
    if (!names.insert(ti.name).second) Fail("{}: {}: duplicate tensor name", file, field);
    uint32_t n_dims = c.Read<uint32_t>([&] { return field + ".n_dims"; });
    if (n_dims < 1 || n_dims > 4) Fail("{}: {}.n_dims: {} is out of range (1..4)", file, field, n_dims);
    uint64_t elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = c.Read<uint64_t>([&] { return fmt::format("{}.ne[{}]", field, d); });
      if (ne == 0 || ne > (uint64_t{1} << 40) || elems > (uint64_t{1} << 40) / ne)
        Fail("{}: {}.ne[{}]: {} is absurd", file, field, d, ne);
      elems *= ne;
      ti.ne.push_back(ne);
    }
    ti.type = c.Read<uint32_t>([&] { return field + ".type"; });
    GgmlGeometry g{};
    if (!Geometry(ti.type, &g)) {
      std::string_view tn = GgmlTypeName(ti.type);
      if (tn.empty()) Fail("{}: {}.type: unknown ggml tensor type {}", file, field, ti.type);
      Fail("{}: {}.type: ggml type {} ({}) is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS)", file, field, tn,
           ti.type);
    }
    if (ti.ne[0] % g.block)
      Fail("{}: {}.ne[0]: {} columns are not a multiple of the {} block size {}", file, field, ti.ne[0],
           GgmlTypeName(ti.type), g.block);
    ti.bytes = elems / g.block * g.bytes;
    ti.offset = c.Read<uint64_t>([&] { return field + ".offset"; });
    if (ti.offset % h.alignment)
      Fail("{}: {}.offset: {} is not aligned to {}", file, field, ti.offset, h.alignment);
    h.tensors.push_back(std::move(ti));
  }

  h.data_offset = AlignUp(c.pos(), h.alignment);
  const uint64_t data_size = h.data_offset <= size ? size - h.data_offset : 0;
  if (n_tensors > 0 && h.data_offset > size)
    Fail("{}: header.data_offset: data section starts at {} beyond the end of the file ({})", file,
         h.data_offset, size);
  for (const auto& ti : h.tensors)
    if (ti.offset > data_size || ti.bytes > data_size - ti.offset)
      Fail("{}: tensor '{}'.offset: data [{}, {}) is outside the data section ({} bytes)", file, ti.name,
           ti.offset, ti.offset + ti.bytes, data_size);
  std::vector<const GgufTensorInfo*> by_off;
  for (const auto& ti : h.tensors) by_off.push_back(&ti);
  std::sort(by_off.begin(), by_off.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < by_off.size(); ++k)
    if (by_off[k - 1]->offset + by_off[k - 1]->bytes > by_off[k]->offset)
      Fail("{}: tensor '{}'.offset: data overlaps tensor '{}'", file, by_off[k]->name, by_off[k - 1]->name);
  return h;
}

namespace {

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
    bool is_signed = v.type == GgufValueType::I8 || v.type == GgufValueType::I16 ||
                     v.type == GgufValueType::I32 || v.type == GgufValueType::I64;
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
    if (!std::isfinite(v->f) || std::abs(v->f) > 3.0e38) Fail("{}: {}: {} is not finite or does not fit a float", file_, key, v->f);
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

Vocab ReadVocab(const Meta& meta, const std::string& file) {
  std::string model = meta.String("tokenizer.ggml.model");
  if (model != "llama" && model != "gpt2")
    Fail("{}: tokenizer.ggml.model: {} is not supported (SentencePiece 'llama' or byte-level BPE 'gpt2')",
         file, Quoted(model));
  Vocab v;
  v.model = model;
  if (model == "gpt2") {
    v.pre = meta.Find("tokenizer.ggml.pre") ? meta.String("tokenizer.ggml.pre") : "";
    const auto* merges = meta.Array("tokenizer.ggml.merges", GgufValueType::STRING, false);
    if (!merges) Fail("{}: tokenizer.ggml.merges: required key is missing (a gpt2 vocabulary needs merges)", file);
    v.merges.reserve(merges->size());
    for (const auto& m : *merges) v.merges.push_back(m.s);
  }
  const auto& tokens = *meta.Array("tokenizer.ggml.tokens", GgufValueType::STRING, true);
  if (tokens.empty()) Fail("{}: tokenizer.ggml.tokens: empty vocabulary", file);
  const size_t n = tokens.size();
  for (const auto& t : tokens) v.pieces.push_back(t.s);
  // llama.cpp treats missing scores as 0 and missing types as normal.
  v.scores.assign(n, 0.0f);
  v.types.assign(n, TokenType::Normal);
  if (auto* s = meta.Array("tokenizer.ggml.scores", GgufValueType::F32, false)) {
    if (s->size() != n) Fail("{}: tokenizer.ggml.scores: {} scores for {} tokens", file, s->size(), n);
    for (size_t k = 0; k < n; ++k) v.scores[k] = static_cast<float>((*s)[k].f);
  }
  if (auto* t = meta.Array("tokenizer.ggml.token_type", GgufValueType::I32, false)) {
    if (t->size() != n) Fail("{}: tokenizer.ggml.token_type: {} types for {} tokens", file, t->size(), n);
    for (size_t k = 0; k < n; ++k) {
      int64_t x = (*t)[k].i;
      if (x < 0 || x > 6) Fail("{}: tokenizer.ggml.token_type: token {} has unknown type {}", file, k, x);
      v.types[k] = x == 0 ? TokenType::Normal : static_cast<TokenType>(x);  // 0 = undefined
    }
  }
  auto id = [&](const char* key, int dflt) {
    int x = meta.Int(key, dflt);
    if (x < 0 || static_cast<size_t>(x) >= n) Fail("{}: {}: {} is outside the vocabulary ({})", file, key, x, n);
    return x;
  };
  v.bos_id = id("tokenizer.ggml.bos_token_id", 1);
  v.eos_id = id("tokenizer.ggml.eos_token_id", 2);
  v.unk_id = id("tokenizer.ggml.unknown_token_id", 0);
  return v;
}

std::optional<bool> ReadAddBos(const Meta& meta, const std::string& file) {
  const GgufValue* v = meta.Find("tokenizer.ggml.add_bos_token");
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::BOOL) Fail("{}: tokenizer.ggml.add_bos_token: expected a bool", file);
  return v->u != 0;
}

// The tokenizer of the file. llama.cpp's converter fills embedding rows past the
// tokenizer's ids (Qwen2.5 pads to a multiple of 128) with "[PAD<id>]" pieces; those are
// not tokens, and are dropped here as the HF loader drops the rows (DropPaddingRows), so
// an HF folder and a GGUF file of one model have the same vocabulary.
std::unique_ptr<Tokenizer> MakeTokenizer(const Meta& meta, Vocab vocab, const std::string& file) {
  while (!vocab.pieces.empty() && vocab.pieces.back() == fmt::format("[PAD{}]", vocab.pieces.size() - 1) &&
         (vocab.types.back() == TokenType::Unused || vocab.types.back() == TokenType::UserDefined)) {
    vocab.pieces.pop_back();
    vocab.scores.pop_back();
    vocab.types.pop_back();
  }
  if (vocab.model == "gpt2") return MakeGgufBpeTokenizer(vocab, file, ReadAddBos(meta, file));
  return MakeScoreBpeTokenizer(std::move(vocab));
}

}  // namespace

LoadedModel LoadGguf(const std::string& path) {
  // Shared: matrices already in the kernels' layout point into the map and keep it alive.
  const auto file = std::make_shared<const MappedFile>(path);
  const MappedFile& mf = *file;
  const GgufHeader h = ParseGgufHeader(mf.data(), mf.size(), path);
  const Meta meta(h, path);

  const std::string arch = meta.String("general.architecture");
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3")
    Fail("{}: general.architecture: {} is not supported (llama, qwen2, qwen3)", path, Quoted(arch));
  Vocab vocab = ReadVocab(meta, path);

  // Hyper-parameters under "<arch>." as ggml names them.
  auto key = [&](const char* k) { return arch + "." + k; };
  ModelConfig c;
  c.arch = arch;
  c.qkv_bias = arch == "qwen2";
  c.qk_norm = arch == "qwen3";
  c.max_seq_len = meta.Int(key("context_length"));
  c.dim = meta.Int(key("embedding_length"));
  c.n_layers = meta.Int(key("block_count"));
  c.hidden_dim = meta.Int(key("feed_forward_length"));
  c.n_heads = meta.Int(key("attention.head_count"));
  c.n_kv_heads = meta.Int(key("attention.head_count_kv"), c.n_heads);  // llama.cpp default: MHA
  c.head_size = meta.Int(key("attention.key_length"), 0);
  if (int vl = meta.Int(key("attention.value_length"), c.head_size); vl != c.head_size)
    Fail("{}: {}: {} != attention.key_length {} is not supported", path, key("attention.value_length"), vl,
         c.head_size);
  c.norm_eps = meta.Float(key("attention.layer_norm_rms_epsilon"));
  c.rope_theta = meta.Float(key("rope.freq_base"), 10000.0f);
  c.vocab_size = meta.Int(key("vocab_size"), static_cast<int>(vocab.pieces.size()));
  c.bos_id = vocab.bos_id;
  c.eos_id = vocab.eos_id;
  if (static_cast<size_t>(c.vocab_size) != vocab.pieces.size())
    Fail("{}: {}: {} but tokenizer.ggml.tokens has {} pieces", path, key("vocab_size"), c.vocab_size,
         vocab.pieces.size());
  if (meta.Find(key("rope.scaling.type"))) {
    const std::string type = meta.String(key("rope.scaling.type"));
    if (type == "linear") {
      c.rope_scaling = "linear";
      c.rope_scaling_factor = meta.Float(key("rope.scaling.factor"));
    } else if (type != "none") {
      Fail("{}: {}: '{}' is not supported (none, linear; llama3 scaling comes as rope_freqs.weight)", path,
           key("rope.scaling.type"), type);
    }
  }
  c.Validate(path);
  const int hd = c.head_dim();
  if (int rd = meta.Int(key("rope.dimension_count"), hd); rd != hd)
    Fail("{}: {}: {} != head dimension {} (partial RoPE is not supported)", path, key("rope.dimension_count"), rd,
         hd);

  std::map<std::string, const GgufTensorInfo*> by_name;
  std::set<std::string> used;
  for (const auto& ti : h.tensors) by_name[ti.name] = &ti;
  auto find = [&](const std::string& name, std::vector<uint64_t> ne, bool required) -> const GgufTensorInfo* {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      if (required) Fail("{}: tensor '{}': required tensor is missing", path, name);
      return nullptr;
    }
    if (it->second->ne != ne)
      Fail("{}: tensor '{}': shape [{}] does not match the config (expected [{}])", path, name,
           fmt::join(it->second->ne, ", "), fmt::join(ne, ", "));
    used.insert(name);
    return it->second;
  };
  const uint8_t* data = mf.data() + h.data_offset;
  // 1-D float tensors [n] -> F32; row_of(i) gives the stored element of our element i.
  auto vec = [&](const std::string& name, int n, auto row_of) {
    const GgufTensorInfo* ti = find(name, {uint64_t(n)}, true);
    GgmlGeometry g{};
    Geometry(ti->type, &g);
    if (IsQuantized(g.qtype))
      Fail("{}: tensor '{}'.type: a norm weight or bias must be F32, F16 or BF16, not {}", path, name,
           GgmlTypeName(ti->type));
    QMatrix q = MakeQMatrix(g.qtype, 1, n);
    std::memcpy(q.Row(0), data + ti->offset, ti->bytes);
    std::vector<float> stored(n), out(n);  // [n]
    DequantizeRow(q, 0, stored.data());
    for (int i = 0; i < n; ++i) out[i] = stored[row_of(i)];
    CheckFinite(out, path, name);
    return out;
  };
  auto identity = [](int r) { return r; };
  // rope_freqs.weight: llama3 frequency factors (convert_hf_to_gguf writes them as a tensor).
  if (by_name.count("rope_freqs.weight")) {
    if (arch != "llama") Fail("{}: tensor 'rope_freqs.weight': not used by the {} architecture", path, arch);
    if (c.rope_scaling != "none")
      Fail("{}: tensor 'rope_freqs.weight': given together with {} scaling", path, c.rope_scaling);
    c.rope_scaling = "llama3";
    c.rope_freq_factors = vec("rope_freqs.weight", hd / 2, identity);
  }
  c.Validate(path);

  auto model = std::make_shared<Model>();
  Model& m = *model;
  m.config = c;
  m.source.format = "gguf";
  m.source.path = path;
  m.source.files = {path};
  for (const auto& ti : h.tensors)
    m.source.tensors.push_back(
        {ti.name, std::vector<int64_t>(ti.ne.begin(), ti.ne.end()), std::string(GgmlTypeName(ti.type)), ti.bytes});
  // ne = [cols, rows] -> QMatrix [rows][cols] in the file's type, our row r from the
  // stored row row_of(r). matrix() checks the tensor and queues the job; the jobs run
  // below, in parallel.
  struct MatrixJob {
    const GgufTensorInfo* ti;
    int rows, cols;
    std::function<int(int)> row_of;  // empty: identity
    bool pack;                       // multiplied (PackForKernels), not only gathered
    QMatrix* out;
  };
  std::vector<MatrixJob> jobs;
  auto matrix = [&](QMatrix* out, const std::string& name, int rows, int cols, std::function<int(int)> row_of,
                    bool pack = true) {
    jobs.push_back({find(name, {uint64_t(cols), uint64_t(rows)}, true), rows, cols, std::move(row_of), pack, out});
  };
  // A matrix whose stored rows are already in the kernels' layout (row layout kept by
  // PackForKernels, rows in file order) points into the map (no copy; the page cache's
  // 4 KB pages), unless the kernels stream it and a copy would be on huge pages: the
  // weights then pass through the TLB at one walk per 2 MB instead of per 4 KB (1.1B
  // Q4_K GGUF on Zen 4, 2 threads, bench-forward T(1) 21.2 -> 18.5 ms, 4 interleaved
  // rounds; start-up 0.3-0.7 s longer, peak RSS 1.10x the file). Copies under 2 MiB (on
  // the heap, not huge pages) were slower than the views: 134M Q4_K, T(1) 1.11x. Any
  // other is made in its final layout straight from the map into an uninitialized buffer
  // (each page written once), and the source pages are then dropped (the page cache keeps
  // them), so that loading never holds two copies.
  auto load = [&](const MatrixJob& j) {
    const std::string& name = j.ti->name;
    GgmlGeometry g{};
    Geometry(j.ti->type, &g);
    const uint8_t* src = data + j.ti->offset;
    const size_t row_bytes = static_cast<size_t>(j.cols) / g.block * g.bytes;
    if (j.pack) mf.Populate(src, j.ti->bytes);  // read whole: map it in one call
    QMatrix rows;
    const bool viewable = !j.row_of && reinterpret_cast<uintptr_t>(src) % 32 == 0 &&
                          !(j.pack && UninitializedOnHugePages(j.ti->bytes));
    if (viewable) {
      rows = MakeQMatrix(g.qtype, j.rows, j.cols, AlignedBuffer::View(src, j.ti->bytes, file));
    } else {
      rows = MakeQMatrix(g.qtype, j.rows, j.cols, AlignedBuffer::Uninitialized(j.ti->bytes));
      for (int r = 0; r < j.rows; ++r)
        std::memcpy(rows.Row(r), src + size_t(j.row_of ? j.row_of(r) : r) * row_bytes, row_bytes);
    }
    if (rows.row_bytes != row_bytes) Fail("{}: tensor '{}': internal row size mismatch", path, name);
    CheckFinite(rows, path, name);
    QMatrix q = j.pack ? PackForKernels(rows) : std::move(rows);
    if (std::as_const(q.data).data() != src) mf.Release(src, j.ti->bytes);  // not a view: copied out
    *j.out = std::move(q);
  };

  // llama files hold q/k rows interleaved (the converter permutes them); qwen2/qwen3
  // files keep HF's rotate_half order, which we permute here.
  const bool neox = arch != "llama";
  std::function<int(int)> qk_row, identity_row;  // empty: identity
  if (neox) qk_row = [hd](int r) { return r / hd * hd + HfRopeRow(r % hd, hd); };
  auto qk_vec = [&](int r) { return qk_row ? qk_row(r) : r; };
  matrix(&m.tok_embeddings, "token_embd.weight", c.vocab_size, c.dim, identity_row, false);
  m.layers.resize(c.n_layers);  // filled in place: the jobs hold pointers into it
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = m.layers[l];
    L.attn_norm = vec(p + "attn_norm.weight", c.dim, identity);
    matrix(&L.wq, p + "attn_q.weight", c.q_dim(), c.dim, qk_row);
    matrix(&L.wk, p + "attn_k.weight", c.kv_dim(), c.dim, qk_row);
    matrix(&L.wv, p + "attn_v.weight", c.kv_dim(), c.dim, identity_row);
    if (c.qkv_bias) {
      L.bq = vec(p + "attn_q.bias", c.q_dim(), qk_vec);
      L.bk = vec(p + "attn_k.bias", c.kv_dim(), qk_vec);
      L.bv = vec(p + "attn_v.bias", c.kv_dim(), identity);
    }
    if (c.qk_norm) {
      L.q_norm = vec(p + "attn_q_norm.weight", hd, qk_vec);
      L.k_norm = vec(p + "attn_k_norm.weight", hd, qk_vec);
    }
    matrix(&L.wo, p + "attn_output.weight", c.dim, c.q_dim(), identity_row);
    L.ffn_norm = vec(p + "ffn_norm.weight", c.dim, identity);
    matrix(&L.w1, p + "ffn_gate.weight", c.hidden_dim, c.dim, identity_row);
    matrix(&L.w2, p + "ffn_down.weight", c.dim, c.hidden_dim, identity_row);
    matrix(&L.w3, p + "ffn_up.weight", c.hidden_dim, c.dim, identity_row);
  }
  m.final_norm = vec("output_norm.weight", c.dim, identity);
  m.tied_embeddings = !find("output.weight", {uint64_t(c.dim), uint64_t(c.vocab_size)}, false);
  // A tied classifier is packed from the embedding's tensor; the embedding then shares
  // the classifier's bytes (below).
  if (m.tied_embeddings) jobs.front().pack = true, jobs.front().out = &m.output;
  else matrix(&m.output, "output.weight", c.vocab_size, c.dim, identity_row);
  // A tensor the architecture does not use (a bias llama has no place for, a layer
  // beyond block_count, ...) would be silently dropped: refuse it.
  for (const auto& ti : h.tensors)
    if (!used.count(ti.name)) Fail("{}: tensor '{}': not used by the {} architecture", path, ti.name, arch);

  // In file order (sequential reads when the file is not cached), one tensor per thread
  // at a time. The first failing tensor in that order is reported, whatever the timing.
  std::sort(jobs.begin(), jobs.end(), [](const MatrixJob& a, const MatrixJob& b) { return a.ti->offset < b.ti->offset; });
  std::vector<std::exception_ptr> errors(jobs.size());
  uint64_t total_bytes = 0;
  for (const MatrixJob& j : jobs) total_bytes += j.ti->bytes;
  std::atomic<uint64_t> loaded_bytes{0};
  const std::string loading = "loading " + std::filesystem::path(path).filename().string();
  ReportBytes(loading, 0, total_bytes);  // the step's clock starts before the first tensor
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t k = 0; k < jobs.size(); ++k) {
    try {
      load(jobs[k]);
      ReportBytes(loading, loaded_bytes += jobs[k].ti->bytes, total_bytes);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  if (m.tied_embeddings) {
    // One buffer for both: the lookup reads rows through DequantizeRow, which takes any
    // layout (packed or column-chunked: a few microseconds per token), so the embedding
    // need not keep the file's row layout and a second copy of [vocab][dim].
    m.output.data.Freeze();
    m.tok_embeddings = m.output;
  }

  LoadedModel lm;
  lm.name = path;
  try {
    lm.tokenizer = MakeTokenizer(meta, std::move(vocab), path);
  } catch (const Error& e) {  // name the file where the vocabulary checks do not know it
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    Fail("{}: tokenizer.ggml.tokens: {}", path, what);
  }
  if (lm.tokenizer->vocab_size() < model->config.vocab_size) DropPaddingRows(*model, lm.tokenizer->vocab_size());
  lm.model = std::move(model);
  return lm;
}

std::unique_ptr<Tokenizer> LoadGgufTokenizer(const std::string& path) {
  MappedFile mf(path);
  const GgufHeader h = ParseGgufHeader(mf.data(), mf.size(), path);
  const Meta meta(h, path);
  return MakeTokenizer(meta, ReadVocab(meta, path), path);
}

}  // namespace specsweep
