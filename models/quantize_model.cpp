// In-memory quantization of a whole model and the weight inventory for `inspect`.
#include <fmt/format.h>

#include "models/model.h"
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

Model QuantizeModel(const Model& m, QType type) {
  Model q;
  q.config = m.config;
  q.source = m.source;
  q.tied_embeddings = m.tied_embeddings;
  q.tok_embeddings = m.tok_embeddings;  // gathered, never multiplied: kept as loaded
  q.final_norm = m.final_norm;
  q.layers.reserve(m.layers.size());
  for (const LayerWeights& L : m.layers) {
    LayerWeights o;
    o.attn_norm = L.attn_norm;
    o.ffn_norm = L.ffn_norm;
    o.bq = L.bq, o.bk = L.bk, o.bv = L.bv;
    o.q_norm = L.q_norm, o.k_norm = L.k_norm;
    o.wq = Convert(L.wq, type);
    o.wk = Convert(L.wk, type);
    o.wv = Convert(L.wv, type);
    o.wo = Convert(L.wo, type);
    o.w1 = Convert(L.w1, type);
    o.w2 = Convert(L.w2, type);
    o.w3 = Convert(L.w3, type);
    q.layers.push_back(std::move(o));
  }
  q.output = Convert(m.output, type);
  PackForKernels(q);
  return q;
}

void PackForKernels(Model& m) {
  ForEachMatrix(m, [](const std::string& name, QMatrix& w) {
    if (name != "tok_embeddings") w = specsweep::PackForKernels(w);
  });
}

std::vector<std::string> DescribeWeights(const Model& m) {
  std::vector<std::string> out;
  ForEachMatrix(m, [&](const std::string& name, const QMatrix& w) {
    std::string line = fmt::format("{:<18} [{} x {}] {:<7} {:>12} bytes", name, w.rows, w.cols,
                                   QTypeName(w.type), w.bytes());
    if (w.padded()) line += fmt::format("  padded {}->{}", w.cols, w.cols_padded);
    if (w.layout == Layout::kPacked16) line += "  (16-row interleaved for the VNNI kernels)";
    if (w.layout == Layout::kColChunks) line += fmt::format("  (16-row blocks in {}-column chunks)", QMatrix::kColChunk);
    if (name == "output" && m.tied_embeddings) line += "  (tied to tok_embeddings in the file)";
    out.push_back(std::move(line));
  });
  return out;
}

}  // namespace specsweep
