// HF folder writer: config.json + safetensors (one file or shards with an index), the
// inverse of LoadHfSafetensors. Tensors are streamed one at a time.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/status_line.h"
#include "models/hf_format.h"
#include "quant/packed.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace specsweep {
namespace {

const char* DtypeName(QType t) { return t == QType::F32 ? "F32" : t == QType::F16 ? "F16" : "BF16"; }

// One tensor to write: a matrix (rows reordered by `order` when non-empty) or a float
// vector (always F32, so norms and biases keep every bit).
struct StItem {
  std::string name;
  const QMatrix* m = nullptr;
  std::vector<int> order;  // stored row k is our row order[k]
  std::vector<float> v;
  std::vector<int64_t> shape;
  QType type = QType::F32;
  uint64_t bytes = 0;
};

void WriteOrFail(std::FILE* f, const void* p, size_t n, const std::string& path) {
  if (n && std::fwrite(p, 1, n, f) != n) Fail("{}: write failed: {}", path, std::strerror(errno));
}

void WriteShard(const std::vector<const StItem*>& items, const std::string& path) {
  json h = {{"__metadata__", {{"format", "pt"}}}};
  uint64_t off = 0;
  for (const StItem* it : items) {
    h[it->name] = {{"dtype", DtypeName(it->type)}, {"shape", it->shape}, {"data_offsets", {off, off + it->bytes}}};
    off += it->bytes;
  }
  std::string hs = h.dump();
  hs.append((8 - hs.size() % 8) % 8, ' ');  // data block 8-byte aligned, as HF pads
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) Fail("{}: cannot create: {}", path, std::strerror(errno));
  try {
    const uint64_t n = hs.size();
    WriteOrFail(f, &n, 8, path);
    WriteOrFail(f, hs.data(), hs.size(), path);
    const std::string writing = "writing " + fs::path(path).filename().string();
    uint64_t written = 0;
    for (const StItem* it : items) {
      ReportBytes(writing, written, off);
      written += it->bytes;
      if (!it->m) {
        WriteOrFail(f, it->v.data(), it->bytes, path);
        continue;
      }
      // Rows in the stored type: the matrix's own bytes when it already is that type.
      QMatrix rows = it->m->layout == Layout::kRows ? QMatrix() : packed::Unpack(*it->m);
      const QMatrix* src = it->m->layout == Layout::kRows ? it->m : &rows;
      QMatrix conv;
      if (src->type != it->type) {
        conv = Convert(*src, it->type);
        src = &conv;
      }
      const size_t rb = it->bytes / src->rows;
      for (int r = 0; r < src->rows; ++r) WriteOrFail(f, src->Row(it->order.empty() ? r : it->order[r]), rb, path);
    }
    ReportBytes(writing, off, off);
    if (std::fclose(f) != 0) {
      f = nullptr;
      Fail("{}: close failed: {}", path, std::strerror(errno));
    }
    f = nullptr;
    fs::rename(tmp, path);
  } catch (...) {
    if (f) std::fclose(f);
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
}

// The tensors in HF's names and order, q/k rows back in HF's rotate_half order.
class StItems {
 public:
  StItems(int hd, QType dtype) : hd_(hd), dtype_(dtype) {}
  void AddMatrix(std::string name, const QMatrix& m, bool rope_rows = false) {
    StItem it;
    it.name = std::move(name);
    it.m = &m;
    it.type = dtype_;
    it.shape = {m.rows, m.cols};
    it.bytes = uint64_t(m.rows) * m.cols * (dtype_ == QType::F32 ? 4 : 2);
    if (rope_rows) {  // back to HF's rotate_half order
      it.order.resize(m.rows);
      for (int k = 0; k < m.rows; ++k) it.order[k] = k / hd_ * hd_ + RopeRowOfHf(k % hd_, hd_);
    }
    items_.push_back(std::move(it));
  }
  void AddVector(std::string name, const std::vector<float>& v, bool rope_rows = false) {
    StItem it;
    it.name = std::move(name);
    it.v = v;
    if (rope_rows)
      for (size_t k = 0; k < v.size(); ++k) it.v[k] = v[k / hd_ * hd_ + RopeRowOfHf(int(k % hd_), hd_)];
    it.shape = {int64_t(v.size())};
    it.bytes = v.size() * sizeof(float);
    items_.push_back(std::move(it));
  }
  std::vector<StItem>& items() { return items_; }

 private:
  const int hd_;
  const QType dtype_;
  std::vector<StItem> items_;
};

void AddLayer(StItems& st, const ModelConfig& c, const LayerWeights& L, int l) {
  const std::string p = "model.layers." + std::to_string(l) + ".";
  st.AddVector(p + "input_layernorm.weight", L.attn_norm);
  st.AddMatrix(p + "self_attn.q_proj.weight", L.wq, true);
  st.AddMatrix(p + "self_attn.k_proj.weight", L.wk, true);
  st.AddMatrix(p + "self_attn.v_proj.weight", L.wv);
  if (c.qkv_bias) {
    st.AddVector(p + "self_attn.q_proj.bias", L.bq, true);
    st.AddVector(p + "self_attn.k_proj.bias", L.bk, true);
    st.AddVector(p + "self_attn.v_proj.bias", L.bv);
  }
  if (c.qk_norm) {
    st.AddVector(p + "self_attn.q_norm.weight", L.q_norm, true);
    st.AddVector(p + "self_attn.k_norm.weight", L.k_norm, true);
  }
  st.AddMatrix(p + "self_attn.o_proj.weight", L.wo);
  st.AddVector(p + "post_attention_layernorm.weight", L.ffn_norm);
  st.AddMatrix(p + "mlp.gate_proj.weight", L.w1);
  st.AddMatrix(p + "mlp.down_proj.weight", L.w2);
  st.AddMatrix(p + "mlp.up_proj.weight", L.w3);
}

// Shards of about equal size, tensors in order, and their index.
void WriteShards(std::vector<StItem>& items, const std::string& dir, int shards) {
  uint64_t total = 0;
  for (auto& it : items) total += it.bytes;
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", json::object()}};
  size_t k = 0;
  uint64_t done = 0;
  for (int s = 0; s < shards; ++s) {
    const std::string fn = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards);
    std::vector<const StItem*> part;
    const uint64_t goal = total * (s + 1) / shards;
    while (k < items.size() && (done < goal || s == shards - 1)) {
      done += items[k].bytes;
      index["weight_map"][items[k].name] = fn;
      part.push_back(&items[k++]);
    }
    WriteShard(part, dir + "/" + fn);
  }
  std::ofstream out(dir + "/model.safetensors.index.json");
  out << index.dump(2) << "\n";
  if (!out) Fail("{}/model.safetensors.index.json: write failed", dir);
}

}  // namespace

void WriteHfModel(const Model& model, const std::string& dir, const HfWriteOptions& opts) {
  const ModelConfig& c = model.config;
  c.Validate(dir);
  if (opts.dtype != QType::F32 && opts.dtype != QType::F16 && opts.dtype != QType::BF16)
    Fail("{}: dtype: {} cannot be stored in safetensors here (f32, f16, bf16)", dir, QTypeName(opts.dtype));
  if (opts.shards < 1 || opts.shards > 999) Fail("{}: shards: {} is out of range (1..999)", dir, opts.shards);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) Fail("{}: cannot create directory: {}", dir, ec.message());

  StItems st(c.head_dim(), opts.dtype);
  st.AddMatrix("model.embed_tokens.weight", model.tok_embeddings);
  for (int l = 0; l < c.n_layers; ++l) AddLayer(st, c, model.layers[l], l);
  st.AddVector("model.norm.weight", model.final_norm);
  if (!model.tied_embeddings) st.AddMatrix("lm_head.weight", model.output);

  {
    std::ofstream cfg(dir + "/config.json");
    cfg << HfConfigJson(c, model.tied_embeddings).dump(2) << "\n";
    if (!cfg) Fail("{}/config.json: write failed", dir);
  }
  if (opts.shards == 1) {
    std::vector<const StItem*> all;
    for (auto& it : st.items()) all.push_back(&it);
    WriteShard(all, dir + "/model.safetensors");
    return;
  }
  WriteShards(st.items(), dir, opts.shards);
}

}  // namespace specsweep
