// Named model shapes for synthetic timing models, the "key=value,..." shape syntax, and
// a synthetic SPM vocabulary so tiny shapes can be written as complete GGUF files.
#include <charconv>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "models/synthetic.h"
#include "quant/qtype.h"

namespace specsweep {
namespace {

ModelConfig Shape(int dim, int layers, int heads, int kv_heads, int ffn, int vocab, int ctx) {
  ModelConfig c;
  c.dim = dim;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.hidden_dim = ffn;
  c.vocab_size = vocab;
  c.max_seq_len = ctx;
  return c;
}

// Published shapes (config.json of each model); contexts as published.
struct Published {
  std::string_view name;
  std::string_view arch;
  int dim, layers, heads, kv_heads, ffn, vocab, ctx;
  float theta, eps;
  int bos, eos;
  float llama3_factor;  // 0: plain RoPE; else llama3 scaling, low 1, high 4, original 8192
  bool tied;
};
constexpr Published kPublished[] = {
    {"tinyllama-1.1b", "llama", 2048, 22, 32, 4, 5632, 32000, 2048, 1e4f, 1e-5f, 1, 2, 0, false},
    {"llama-2-7b", "llama", 4096, 32, 32, 32, 11008, 32000, 4096, 1e4f, 1e-5f, 1, 2, 0, false},
    {"llama-3.2-1b", "llama", 2048, 16, 32, 8, 8192, 128256, 131072, 5e5f, 1e-5f, 128000, 128001, 32, true},
    {"llama-3.1-8b", "llama", 4096, 32, 32, 8, 14336, 128256, 131072, 5e5f, 1e-5f, 128000, 128001, 8, false},
    {"qwen2.5-0.5b", "qwen2", 896, 24, 14, 2, 4864, 151936, 32768, 1e6f, 1e-6f, 151643, 151643, 0, true},
    {"qwen2.5-7b", "qwen2", 3584, 28, 28, 4, 18944, 152064, 131072, 1e6f, 1e-6f, 151643, 151643, 0, false},
};

const Published* FindPublished(std::string_view name) {
  for (const Published& p : kPublished)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

bool SyntheticShapeTied(std::string_view name) {
  const Published* p = FindPublished(name);
  return p && p->tied;
}

ModelConfig SyntheticShape(std::string_view name) {
  const std::string what = fmt::format("synthetic shape '{}'", name);
  ModelConfig c;
  if (name == "tiny") {
    c = TinyTestConfig();
  } else if (name == "134m") {
    c = Shape(768, 12, 12, 12, 2048, 32000, 1024);
  } else if (name == "1b") {
    c = Shape(2048, 22, 32, 4, 5632, 32000, 2048);  // TinyLlama-1.1B
  } else if (const Published* p = FindPublished(name)) {
    c = Shape(p->dim, p->layers, p->heads, p->kv_heads, p->ffn, p->vocab, p->ctx);
    c.arch = std::string(p->arch);
    c.qkv_bias = c.arch == "qwen2";
    c.rope_theta = p->theta;
    c.norm_eps = p->eps;
    c.bos_id = p->bos;
    c.eos_id = p->eos;
    if (p->llama3_factor > 0) {
      c.rope_scaling = "llama3";
      c.rope_scaling_factor = p->llama3_factor;
      c.rope_low_freq_factor = 1;
      c.rope_high_freq_factor = 4;
      c.rope_original_context = 8192;
      c.rope_freq_factors = Llama3RopeFactors(c.rope_theta, c.head_dim(), p->llama3_factor, 1, 4, 8192);
    }
  } else if (name.find('=') != std::string_view::npos) {
    int kv_heads = 0;
    int* ints[] = {&c.dim, &c.n_layers, &c.n_heads, &kv_heads, &c.hidden_dim, &c.vocab_size, &c.max_seq_len};
    static constexpr std::string_view kInt[] = {"dim", "layers", "heads", "kv_heads", "ffn", "vocab", "ctx"};
    bool seen[9] = {};
    size_t pos = 0;
    while (pos <= name.size()) {
      size_t end = name.find(',', pos);
      if (end == std::string_view::npos) end = name.size();
      std::string_view item = name.substr(pos, end - pos);
      pos = end + 1;
      size_t eq = item.find('=');
      if (eq == std::string_view::npos) Fail("{}: '{}': expected key=value", what, item);
      std::string_view key = item.substr(0, eq), val = item.substr(eq + 1);
      int idx = -1;
      for (int k = 0; k < 7; ++k)
        if (key == kInt[k]) idx = k;
      if (key == "rope_theta") idx = 7;
      if (key == "eps") idx = 8;
      if (idx < 0)
        Fail("{}: field '{}': unknown (expected dim, layers, heads, kv_heads, ffn, vocab, ctx, rope_theta, eps)", what,
             key);
      if (seen[idx]) Fail("{}: field '{}': given twice", what, key);
      seen[idx] = true;
      bool ok;
      if (idx < 7) {
        auto r = std::from_chars(val.data(), val.data() + val.size(), *ints[idx]);
        ok = r.ec == std::errc() && r.ptr == val.data() + val.size();
      } else {
        float& f = idx == 7 ? c.rope_theta : c.norm_eps;
        auto r = std::from_chars(val.data(), val.data() + val.size(), f);
        ok = r.ec == std::errc() && r.ptr == val.data() + val.size();
      }
      if (!ok) Fail("{}: field '{}': '{}' is not a number", what, key, val);
    }
    for (int k = 0; k < 7; ++k)
      if (!seen[k] && k != 3) Fail("{}: field '{}': missing", what, kInt[k]);
    c.n_kv_heads = seen[3] ? kv_heads : c.n_heads;
  } else {
    Fail(
        "{}: unknown shape (expected tiny, 134m, 1b, tinyllama-1.1b, llama-2-7b, llama-3.2-1b, llama-3.1-8b, "
        "qwen2.5-0.5b, qwen2.5-7b or dim=..,layers=..,heads=..,ffn=..,vocab=..,ctx=..)",
        what);
  }
  c.Validate(what);
  return c;
}

Vocab SyntheticVocab(int size) {
  if (size < 3 + 95) Fail("synthetic vocab: size: {} is too small (at least 98 pieces)", size);
  Vocab v;
  auto add = [&](std::string piece, float score, TokenType type) {
    if (static_cast<int>(v.pieces.size()) >= size) return;
    v.pieces.push_back(std::move(piece));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0.0f, TokenType::Unknown);
  add("<s>", 0.0f, TokenType::Control);
  add("</s>", 0.0f, TokenType::Control);
  // Byte fallback only when all 256 fit beside the printable characters (real SPM
  // vocabularies place them right after the control tokens, as here).
  if (size >= 3 + 256 + 95)
    for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0.0f, TokenType::Byte);
  const std::string space = "\xE2\x96\x81";  // "▁", SentencePiece's space
  float score = -1.0f;
  add(space, score--, TokenType::Normal);
  for (char ch = '!'; ch <= '~'; ++ch) add(std::string(1, ch), score--, TokenType::Normal);
  // Merged pieces, each the concatenation of two shorter existing pieces so the
  // BPE-by-score encoder can reach it: "▁a".."▁z", then "aa".."zz", "▁aa".., "aaa"...
  for (int len = 1; static_cast<int>(v.pieces.size()) < size; ++len) {
    const int before = static_cast<int>(v.pieces.size());
    std::vector<std::string> words = {""};
    for (int k = 0; k < len; ++k) {
      std::vector<std::string> next;
      for (const auto& w : words)
        for (char ch = 'a'; ch <= 'z'; ++ch) next.push_back(w + ch);
      words.swap(next);
      if (words.size() > static_cast<size_t>(size)) break;
    }
    for (const auto& w : words) add(space + w, score--, TokenType::Normal);
    if (len >= 2)
      for (const auto& w : words) add(w, score--, TokenType::Normal);
    if (static_cast<int>(v.pieces.size()) == before) break;
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  return v;
}

std::optional<SynthFileName> ParseSynthFileName(std::string_view file_name) {
  const std::filesystem::path p{std::string(file_name)};
  const std::string file = p.filename().string(), stem = p.stem().string();
  if (!file.starts_with("synth-") || p.extension() != ".gguf") return std::nullopt;
  const size_t dash = stem.rfind('-');
  if (dash <= 6 || dash == std::string::npos) return std::nullopt;
  SynthFileName n{stem.substr(6, dash - 6), stem.substr(dash + 1)};
  try {
    SyntheticShape(n.shape);
    ParseQType(n.type);
  } catch (const Error&) {
    return std::nullopt;
  }
  return n;
}

double SynthFileBytes(std::string_view file_name) {
  const std::optional<SynthFileName> n = ParseSynthFileName(file_name);
  if (!n) return 0;
  const ModelConfig c = SyntheticShape(n->shape);
  const double layer = double(c.dim) * (2.0 * c.q_dim() + 2.0 * c.kv_dim() + 3.0 * c.hidden_dim);
  const double embeddings = double(c.vocab_size) * c.dim * (SyntheticShapeTied(n->shape) ? 1 : 2);
  const QType t = ParseQType(n->type);
  return (layer * c.n_layers + embeddings) / BlockSize(t) * double(BlockBytes(t));
}

}  // namespace specsweep
