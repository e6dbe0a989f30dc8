// GGUF header parser: bounds-checked (every length and count is checked against the
// bytes left before anything is allocated), and the ggml type names and ids.
#include <algorithm>
#include <bit>
#include <cstring>
#include <set>
#include <utility>

#include <fmt/ranges.h>

#include "base/error.h"
#include "models/gguf.h"
#include "models/gguf_meta.h"
#include "models/limits.h"

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
  static constexpr std::string_view kNames[] = {"F32",   "F16",   "Q4_0",    "Q4_1",   "",        "",      "Q5_0",
                                                "Q5_1",  "Q8_0",  "Q8_1",    "Q2_K",   "Q3_K",    "Q4_K",  "Q5_K",
                                                "Q6_K",  "Q8_K",  "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
                                                "IQ3_S", "IQ2_S", "IQ4_XS",  "I8",     "I16",     "I32",   "I64",
                                                "F64",   "IQ1_M", "BF16",    "",       "",        "",      "TQ1_0",
                                                "TQ2_0", "",      "",        "",       "MXFP4"};
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
    case GgufValueType::U8:
    case GgufValueType::U16:
    case GgufValueType::U32:
    case GgufValueType::U64:
    case GgufValueType::I8:
    case GgufValueType::I16:
    case GgufValueType::I32:
    case GgufValueType::I64: return true;
    default: return false;
  }
}
bool GgufValue::is_float() const { return type == GgufValueType::F32 || type == GgufValueType::F64; }

namespace gguf_detail {

bool Geometry(uint32_t t, GgmlGeometry* g) {
  QType q;
  if (!FromGgmlType(t, &q)) return false;
  *g = {q, BlockSize(q), static_cast<int>(BlockBytes(q))};
  return true;
}

}  // namespace gguf_detail

namespace {

using gguf_detail::Geometry;
using gguf_detail::GgmlGeometry;

// Smallest encoding of one value of a type (for "is this count absurd" checks).
size_t MinValueBytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::BOOL: return 1;
    case GgufValueType::U16:
    case GgufValueType::I16: return 2;
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::F32: return 4;
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::F64: return 8;
    case GgufValueType::STRING: return 8;     // u64 length
    case GgufValueType::ARRAY: return 4 + 8;  // u32 type + u64 count
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
      Fail("{}: {}: string length {} runs past the end of the file ({} bytes left)", file_, field(), len, remaining());
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
      Fail("{}: {}: {} items cannot fit in the {} bytes left (corrupt count or truncated file)", file_, field(), n,
           remaining());
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
  if (t > static_cast<uint32_t>(GgufValueType::F64)) Fail("{}: {}: unknown value type {}", c.file(), field, t);
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

// The metadata key/value pairs.
void ReadKvs(Cursor& c, uint64_t n_kv, GgufHeader& h) {
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = c.ReadString([&] { return fmt::format("kv[{}].key", k); });
    if (key.empty()) Fail("{}: kv[{}].key: empty key", c.file(), k);
    std::string field = "kv '" + key + "'";
    auto t = CheckValueType(c, c.Read<uint32_t>([&] { return field + ".type"; }), field + ".type");
    GgufValue v = ReadValue(c, t, field, 0);
    if (!h.kv.emplace(key, std::move(v)).second) Fail("{}: {}: duplicate key", c.file(), field);
  }
}

void ReadAlignment(GgufHeader& h, const std::string& file) {
  if (auto it = h.kv.find("general.alignment"); it != h.kv.end()) {
    const GgufValue& a = it->second;
    // Scalars keep unsigned values in .u and signed ones in .i; the other is 0.
    uint64_t al = a.is_int() ? (a.i > 0 ? static_cast<uint64_t>(a.i) : a.u) : 0;
    if (!a.is_int() || al == 0 || al > 65536 || (al & (al - 1)))
      Fail("{}: general.alignment: must be a power of two integer <= 65536", file);
    h.alignment = static_cast<uint32_t>(al);
  }
}

// Tensor info k: name, shape, a type the loader holds, an aligned offset.
GgufTensorInfo ReadTensorInfo(Cursor& c, uint64_t k, uint32_t alignment, std::set<std::string>& names) {
  const std::string& file = c.file();
  GgufTensorInfo ti;
  ti.name = c.ReadString([&] { return fmt::format("tensor[{}].name", k); });
  std::string field = "tensor '" + ti.name + "'";
  if (!names.insert(ti.name).second) Fail("{}: {}: duplicate tensor name", file, field);
  uint32_t n_dims = c.Read<uint32_t>([&] { return field + ".n_dims"; });
  if (n_dims < 1 || n_dims > 4) Fail("{}: {}.n_dims: {} is out of range (1..4)", file, field, n_dims);
  // Each dimension, then their product, within kMaxTensorElements (no wrap-around): a
  // product too large names the whole shape, not the dimension that happened to tip it.
  uint64_t elems = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t ne = c.Read<uint64_t>([&] { return fmt::format("{}.ne[{}]", field, d); });
    if (ne == 0 || ne > kMaxTensorElements)
      Fail("{}: {}.ne[{}]: {} is absurd (a dimension is in [1, 2^48])", file, field, d, ne);
    ti.ne.push_back(ne);
    if (elems > kMaxTensorElements / ne)
      Fail("{}: {}.ne: shape [{}] holds more than 2^48 elements", file, field, fmt::join(ti.ne, ", "));
    elems *= ne;
  }
  ti.type = c.Read<uint32_t>([&] { return field + ".type"; });
  GgmlGeometry g{};
  if (!Geometry(ti.type, &g)) {
    std::string_view tn = GgmlTypeName(ti.type);
    if (tn.empty()) Fail("{}: {}.type: unknown ggml tensor type {}", file, field, ti.type);
    Fail(
        "{}: {}.type: ggml type {} ({}) is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, "
        "IQ4_NL, IQ4_XS)",
        file, field, tn, ti.type);
  }
  if (ti.ne[0] % g.block)
    Fail("{}: {}.ne[0]: {} columns are not a multiple of the {} block size {}", file, field, ti.ne[0],
         GgmlTypeName(ti.type), g.block);
  ti.bytes = elems / g.block * g.bytes;
  ti.offset = c.Read<uint64_t>([&] { return field + ".offset"; });
  if (ti.offset % alignment) Fail("{}: {}.offset: {} is not aligned to {}", file, field, ti.offset, alignment);
  return ti;
}

// Every tensor's data lies inside the data section, none overlapping another.
void CheckDataSection(const GgufHeader& h, size_t size, const std::string& file) {
  const uint64_t data_size = h.data_offset <= size ? size - h.data_offset : 0;
  if (!h.tensors.empty() && h.data_offset > size)
    Fail("{}: header.data_offset: data section starts at {} beyond the end of the file ({})", file, h.data_offset,
         size);
  for (const auto& ti : h.tensors) {
    if (ti.bytes > data_size)  // the shape, not where it starts, is wrong
      Fail("{}: tensor '{}'.ne: shape [{}] needs {} bytes, more than the data section's {}", file, ti.name,
           fmt::join(ti.ne, ", "), ti.bytes, data_size);
    if (ti.offset > data_size || ti.bytes > data_size - ti.offset)
      Fail("{}: tensor '{}'.offset: data [{}, {}) is outside the data section ({} bytes)", file, ti.name, ti.offset,
           ti.offset + ti.bytes, data_size);
  }
  std::vector<const GgufTensorInfo*> by_off;
  for (const auto& ti : h.tensors) by_off.push_back(&ti);
  std::sort(by_off.begin(), by_off.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < by_off.size(); ++k)
    if (by_off[k - 1]->offset + by_off[k - 1]->bytes > by_off[k]->offset)
      Fail("{}: tensor '{}'.offset: data overlaps tensor '{}'", file, by_off[k]->name, by_off[k - 1]->name);
}

}  // namespace

GgufHeader ParseGgufHeader(const uint8_t* bytes, size_t size, const std::string& file) {
  Cursor c(bytes, size, file);
  GgufHeader h;
  uint32_t magic = c.Read<uint32_t>([] { return "header.magic"; });
  if (magic != 0x46554747u)  // "GGUF" little endian
    Fail("{}: header.magic: not a GGUF file (first bytes {:08x}, expected 'GGUF')", file, magic);
  h.version = c.Read<uint32_t>([] { return "header.version"; });
  if (h.version != 2 && h.version != 3) Fail("{}: header.version: {} is not supported (2 or 3)", file, h.version);
  // Tensor infos follow the metadata: their count is checked against the bytes left after it.
  const uint64_t n_tensors = c.Read<uint64_t>([] { return "header.tensor_count"; });
  if (n_tensors > kMaxCount) Fail("{}: header.tensor_count: count {} is absurd (limit {})", file, n_tensors, kMaxCount);
  // Minimum kv: key length + 1 byte, value type, one byte of value.
  uint64_t n_kv = c.ReadCount(8 + 1 + 4 + 1, [] { return "header.kv_count"; });
  ReadKvs(c, n_kv, h);
  ReadAlignment(h, file);

  // Minimum tensor info: name length + 1 byte, n_dims, one ne, type, offset.
  c.CheckFits(n_tensors, 8 + 1 + 4 + 8 + 4 + 8, [] { return "header.tensor_count"; });
  std::set<std::string> names;
  h.tensors.reserve(n_tensors);
  for (uint64_t k = 0; k < n_tensors; ++k) h.tensors.push_back(ReadTensorInfo(c, k, h.alignment, names));

  h.data_offset = AlignUp(c.pos(), h.alignment);
  CheckDataSection(h, size, file);
  return h;
}

}  // namespace specsweep
