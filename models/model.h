// In-memory Llama model. Const after loading: caches and scratch belong to the caller,
// so one Model serves a target cache and a draft cache (early exit) at once.
//
// Internal conventions, whatever the file format:
//  - q/k projection rows (and their biases and norm weights) are in the interleaved RoPE
//    layout of llama2.c and GGUF "llama" files (pairs (2i, 2i+1) rotate together); HF
//    checkpoints and GGUF qwen2/qwen3 files (rotate_half layout) are permuted at load time.
//  - matrices are [out_features][in_features] (row = output feature).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/config.h"
#include "quant/qmatrix.h"

namespace specsweep {

struct LayerWeights {
  std::vector<float> attn_norm;   // [dim]
  QMatrix wq;                     // [n_heads*head_dim][dim]
  QMatrix wk;                     // [kv_dim][dim]
  QMatrix wv;                     // [kv_dim][dim]
  std::vector<float> bq, bk, bv;  // [q_dim], [kv_dim], [kv_dim] biases (qwen2); empty: none
  std::vector<float> q_norm;      // [head_dim] per-head RMSNorm of q before RoPE (qwen3); empty: none
  std::vector<float> k_norm;      // [head_dim] same for k
  QMatrix wo;                     // [dim][n_heads*head_dim]
  std::vector<float> ffn_norm;    // [dim]
  QMatrix w1;                     // gate [hidden_dim][dim]
  QMatrix w2;                     // down [dim][hidden_dim]
  QMatrix w3;                     // up   [hidden_dim][dim]
};

// One tensor as it was stored in the source file (for `inspect`).
struct TensorRecord {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;  // as named by the file: "F32", "BF16", "Q4_0", ...
  uint64_t bytes = 0;
};

struct ModelSource {
  std::string format;              // "llama2c", "hf-safetensors", "gguf", "synthetic"
  std::string path;                // file or directory loaded
  std::vector<std::string> files;  // every file read (for hashes in results)
  std::vector<TensorRecord> tensors;
  int vocab_rows = 0;  // embedding rows in the file when DropPaddingRows cut them; 0: none cut
};

struct Model {
  ModelConfig config;
  ModelSource source;
  QMatrix tok_embeddings;  // [vocab][dim], rows looked up by token id
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;  // [dim]
  QMatrix output;                 // [vocab][dim] classifier
  bool tied_embeddings = false;   // output was the embedding in the file

  size_t ParameterCount() const;
  size_t WeightBytes() const;  // bytes of all weights as held in memory
};

// Calls f(name, matrix) for every matrix of the model, embedding first; names are
// "tok_embeddings", "layers.N.wq" ... "layers.N.w3", "output".
template <class M, class F>
void ForEachMatrix(M& m, F&& f) {
  f(std::string("tok_embeddings"), m.tok_embeddings);
  for (size_t l = 0; l < m.layers.size(); ++l) {
    auto& L = m.layers[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    f(p + "wq", L.wq);
    f(p + "wk", L.wk);
    f(p + "wv", L.wv);
    f(p + "wo", L.wo);
    f(p + "w1", L.w1);
    f(p + "w2", L.w2);
    f(p + "w3", L.w3);
  }
  f(std::string("output"), m.output);
}

// The type a matrix of `cols` columns is stored as when quantized to `type` (its
// effective type): `type`, unless it is a block format whose block does not divide `cols`.
// Then llama.cpp's fallback (llama-quant.cpp) where its 32-value block divides: q4_k ->
// q5_0, q5_k -> q5_1, q6_k -> q8_0, q2_k/q3_k/iq4_xs -> iq4_nl (Qwen2.5-0.5B's width 896);
// else F16 (260K's FFN width 172). GGUF rows cannot be padded, so this one rule serves
// QuantizeModel and `quantize`: a model quantized in memory and the file `specsweep
// quantize` writes of it hold the same types and give bit-identical logits.
QType StoredQType(QType type, int cols);

// How many multiplied matrices (every layer's, the classifier; not the gathered
// embedding) are stored as each type, by QTypeName: what the model runs, loaded or
// quantized in memory. layers > 0: the first `layers` blocks only (an early-exit draft).
std::map<std::string, int> MatrixTypeCounts(const Model& m, int layers = 0);
// `asked` when every matrix in `counts` is stored as it, else "q4_0 (2 of 14 f16)":
// the matrices that are not, by type.
std::string StoredTypesLabel(const std::string& asked, const std::map<std::string, int>& counts);
// "q5_0 x12, q8_0 x2": MatrixTypeCounts of the whole model, for `inspect`.
std::string DescribeTypeCounts(const Model& m);

// Which tensors QuantizeModel converts: all layer matrices and the classifier, each to
// StoredQType(type, cols). The embedding table is only gathered from, so it stays as
// loaded; norms stay F32. Packs the result for the active kernels (PackForKernels).
// Error when `type` is load-only (CanQuantizeTo) or covers no matrix of m (no row width
// is a whole number of its blocks), naming the model, the row widths and the block size.
Model QuantizeModel(const Model& m, QType type);
// QuantizeModel's refusals alone, converting nothing.
void CheckQuantizable(const Model& m, QType type);

// Every multiplied matrix (layers, classifier; not the gathered embedding) in the layout
// the active kernel family runs fastest (quant/matmul.h PackForKernels).
void PackForKernels(Model& m);

// Keeps the first `vocab` rows of the embedding and classifier (the ids a tokenizer
// has; the file's rows past them are padding) and sets config.vocab_size to it.
void DropPaddingRows(Model& m, int vocab);

// Names of the matrices of a model with their in-memory type and shape, one per line,
// with padded tensors marked ("padded 172->192"). Used by `inspect`.
std::vector<std::string> DescribeWeights(const Model& m);

}  // namespace specsweep
