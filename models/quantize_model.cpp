// In-memory quantization of a whole model and the weight inventory for `inspect`.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "models/model.h"

#include "base/error.h"

#include <cstring>

#include "base/error.h"

#include "base/status_line.h"
#include "quant/packed.h"
#include "quant/matmul.h"

namespace specsweep {
namespace {

size_t Elements(const QMatrix& m) { return static_cast<size_t>(m.rows) * m.cols; }
// Norm weights and biases of a layer (float vectors).
size_t VectorElements(const LayerWeights& L) {
  return L.attn_norm.size() + L.ffn_norm.size() + L.bq.size() + L.bk.size() + L.bv.size() + L.q_norm.size() +
         L.k_norm.size();
}

}  // namespace

// A tied classifier is one parameter tensor. (Loaders hold it once, shared with the
// embedding; WeightBytes still counts it under both names, as each is read.)
size_t Model::ParameterCount() const {
  size_t n = 0;
  ForEachMatrix(*this, [&](const std::string& name, const QMatrix& w) {
    if (name == "output" && tied_embeddings) return;
    n += Elements(w);
  });
  for (const LayerWeights& L : layers) n += VectorElements(L);
  return n + final_norm.size();
}

size_t Model::WeightBytes() const {
  size_t b = 0;
  ForEachMatrix(*this, [&](const std::string&, const QMatrix& w) { b += w.bytes(); });
  for (const LayerWeights& L : layers) b += sizeof(float) * VectorElements(L);
  return b + sizeof(float) * final_norm.size();
}

QType StoredQType(QType type, int cols) {
  auto fits = [cols](QType t) { return cols % BlockSize(t) == 0; };
  if (!IsQuantized(type) || fits(type)) return type;
  QType fallback = QType::F16;
  switch (type) {
    case QType::Q4_K: fallback = QType::Q5_0; break;
    case QType::Q5_K: fallback = QType::Q5_1; break;
    case QType::Q6_K: fallback = QType::Q8_0; break;
    case QType::Q2_K:
    case QType::Q3_K:
    case QType::IQ4_XS: fallback = QType::IQ4_NL; break;
    default: break;
  }
  return fits(fallback) ? fallback : QType::F16;
}

std::string DescribeTypeCounts(const Model& m) {
  std::string s;
  for (const auto& [t, n] : MatrixTypeCounts(m)) s += fmt::format("{}{} x{}", s.empty() ? "" : ", ", t, n);
  return s;
}

std::map<std::string, int> MatrixTypeCounts(const Model& m, int layers) {
  std::map<std::string, int> n;
  const std::string past = "layers." + std::to_string(layers) + ".";
  bool skip = false;
  ForEachMatrix(m, [&](const std::string& name, const QMatrix& w) {
    if (layers > 0 && name.starts_with(past)) skip = true;  // blocks come in order, the classifier last
    if (name == "output") skip = false;
    if (name != "tok_embeddings" && !skip) ++n[std::string(QTypeName(w.type))];
  });
  return n;
}

std::string StoredTypesLabel(const std::string& asked, const std::map<std::string, int>& counts) {
  int total = 0, not_asked = 0;
  std::vector<std::string> others;  // "3 f16"
  for (auto& [type, n] : counts) {
    total += n;
    if (type == asked || n == 0) continue;
    not_asked += n;
    others.push_back(fmt::format("{} {}", n, type));
  }
  if (others.empty()) return asked;
  if (others.size() == 1)
    return fmt::format("{} ({} of {} {})", asked, not_asked, total, others[0].substr(others[0].find(' ') + 1));
  return fmt::format("{} ({} of {}: {})", asked, not_asked, total, fmt::join(others, ", "));
}

void CheckQuantizable(const Model& m, QType type) {
  if (!CanQuantizeTo(type)) Fail("{}: quantizing to {}: {}", m.source.path, QTypeName(type), LoadOnlyReason(type));
  if (IsQuantized(type)) {
    std::set<int> widths;
    bool covered = false;
    ForEachMatrix(m, [&](const std::string& name, const QMatrix& w) {
      if (name == "tok_embeddings") return;
      widths.insert(w.cols);
      covered |= IsQuantized(StoredQType(type, w.cols));  // the type or its quantized fallback
    });
    if (!covered)
      Fail(
          "{}: {} covers no matrix: rows of {} values are not a whole number of its {}-value blocks nor of its "
          "fallback type's (every matrix would stay {}); pick a type with smaller blocks (q8_0, q4_0)",
          m.source.path.empty() ? m.source.format : m.source.path, QTypeName(type), fmt::join(widths, ", "),
          BlockSize(type), QTypeName(StoredQType(type, *widths.begin())));
  }
}

Model QuantizeModel(const Model& m, QType type) {
  CheckQuantizable(m, type);
  // A quantizer's refusal (a block scale overflowing f16) names the model and the tensor.
  const std::string model = m.source.path.empty() ? m.source.format : m.source.path;
  auto convert = [&](const QMatrix& w, std::string_view name) {
    try {
      return Convert(w, StoredQType(type, w.cols));
    } catch (const Error& e) {
      Fail("{}: tensor '{}': {}", model, name, e.what());
    }
  };
  Model q;
  q.config = m.config;
  q.source = m.source;
  q.tied_embeddings = m.tied_embeddings;
  q.tok_embeddings = m.tok_embeddings;  // gathered, never multiplied: kept as loaded
  q.final_norm = m.final_norm;
  q.layers.reserve(m.layers.size());
  const std::string quantizing = fmt::format("quantizing to {}", QTypeName(type));
  for (const LayerWeights& L : m.layers) {
    ReportProgress(quantizing, long(q.layers.size()), long(m.layers.size()), "layers");
    const std::string p = "layers." + std::to_string(q.layers.size()) + ".";  // ForEachMatrix's names
    LayerWeights o;
    o.attn_norm = L.attn_norm;
    o.ffn_norm = L.ffn_norm;
    o.bq = L.bq, o.bk = L.bk, o.bv = L.bv;
    o.q_norm = L.q_norm, o.k_norm = L.k_norm;
    o.wq = convert(L.wq, p + "wq");
    o.wk = convert(L.wk, p + "wk");
    o.wv = convert(L.wv, p + "wv");
    o.wo = convert(L.wo, p + "wo");
    o.w1 = convert(L.w1, p + "w1");
    o.w2 = convert(L.w2, p + "w2");
    o.w3 = convert(L.w3, p + "w3");
    q.layers.push_back(std::move(o));
  }
  q.output = convert(m.output, "output");
  PackForKernels(q);
  ReportProgress(quantizing, long(m.layers.size()), long(m.layers.size()), "layers");
  return q;
}

void DropPaddingRows(Model& m, int vocab) {
  auto first_rows = [vocab](const QMatrix& q) {
    const QMatrix rows = packed::Unpack(q);                  // [q.rows][cols]
    QMatrix out = MakeQMatrix(rows.type, vocab, rows.cols);  // [vocab][cols]
    std::memcpy(out.data.data(), rows.data.data(), size_t(vocab) * rows.row_bytes);
    return out;
  };
  m.source.vocab_rows = m.config.vocab_size;
  m.output = specsweep::PackForKernels(first_rows(m.output));
  if (m.tied_embeddings) {  // one buffer for both, as the loaders hold a tied classifier
    m.output.data.Freeze();
    m.tok_embeddings = m.output;
  } else {
    m.tok_embeddings = first_rows(m.tok_embeddings);
  }
  m.config.vocab_size = vocab;
}

void PackForKernels(Model& m) {
  ForEachMatrix(m, [](const std::string& name, QMatrix& w) {
    if (name != "tok_embeddings") w = specsweep::PackForKernels(w);
  });
}

std::vector<std::string> DescribeWeights(const Model& m) {
  std::vector<std::string> out;
  ForEachMatrix(m, [&](const std::string& name, const QMatrix& w) {
    std::string line =
        fmt::format("{:<18} [{} x {}] {:<7} {:>12} bytes", name, w.rows, w.cols, QTypeName(w.type), w.bytes());
    if (w.padded()) line += fmt::format("  padded {}->{}", w.cols, w.cols_padded);
    if (w.layout == Layout::kPacked16) line += "  (16-row interleaved for the VNNI kernels)";
    if (w.layout == Layout::kColChunks)
      line += fmt::format("  (16-row blocks in {}-column chunks)", QMatrix::kColChunk);
    if (name == "output" && m.tied_embeddings) line += "  (tied to tok_embeddings in the file)";
    out.push_back(std::move(line));
  });
  return out;
}

}  // namespace specsweep
