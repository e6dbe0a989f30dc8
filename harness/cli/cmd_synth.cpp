// `specsweep synth --shape NAME|dims -o OUT [--format gguf|hf] [--tokenizer PATH|synthetic]
// [--type T] [-c N] [--shards N] [--seed S]`: random weights in a real model shape,
// written as a GGUF file or an HF folder, for timing at realistic sizes.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "harness/cli/commands.h"
#include "base/error.h"
#include "base/status_line.h"
#include "models/gguf.h"
#include "models/hf_format.h"
#include "models/loader.h"
#include "models/synthetic.h"

namespace specsweep {
namespace {

struct SynthArgs {
  std::string shape, out, tokenizer, type = "f32", format = "gguf";
  int ctx = 0, shards = 1;
  uint64_t seed = 1;
};

namespace fs = std::filesystem;

// The real tokenizer of a published shape when the shared folders hold it: Llama 3's for
// llama-3.x, Qwen's for qwen2.5 (the fixtures' Qwen3 vocabulary is Qwen2.5's plus three
// added tokens), the Llama-2 SentencePiece vocabulary for llama-2/tinyllama. "" if absent.
std::string DefaultTokenizer(const std::string& shape) {
  const fs::path models = ResolveModelsDir(Globals().models_dir);
  const fs::path fixtures = models.parent_path() / "fixtures" / "tokenizers";
  fs::path p;
  if (shape.starts_with("llama-3."))
    p = fixtures / "llama3" / "tokenizer.json";
  else if (shape.starts_with("qwen"))
    p = fixtures / "qwen3" / "tokenizer.json";
  else if (shape == "tinyllama-1.1b" || shape == "llama-2-7b")
    p = models / "llama2-tokenizer" / "tokenizer.model";
  return fs::exists(p) ? p.string() : "";
}

// Number of ids of a tokenizer.json (vocab and added tokens).
int TokenizerJsonSize(const nlohmann::json& j, const std::string& path) {
  int n = 0;
  if (!j.contains("model") || !j["model"].contains("vocab") || !j["model"]["vocab"].is_object())
    Fail("{}: model.vocab: missing", path);
  for (auto& [piece, id] : j["model"]["vocab"].items()) n = std::max(n, id.get<int>() + 1);
  if (j.contains("added_tokens"))
    for (auto& t : j["added_tokens"]) n = std::max(n, t.value("id", 0) + 1);
  return n;
}

// Puts the tokenizer files into an HF folder: tokenizer.json (+ tokenizer_config.json
// beside it) or a SentencePiece tokenizer.model, copied as they are. A tokenizer with
// fewer ids than the embedding is left so, as in the checkpoints that pad their
// embedding (Qwen2.5: 151936 rows for 151665 ids): the loader drops the padding rows.
void CopyTokenizer(const std::string& tok, const std::string& dir, int vocab) {
  const fs::path src = tok;
  if (src.extension() == ".model") {
    fs::copy_file(src, fs::path(dir) / "tokenizer.model", fs::copy_options::overwrite_existing);
    return;
  }
  if (src.extension() != ".json") Fail("--tokenizer: {}: an HF folder needs tokenizer.json or a .model file", tok);
  std::ifstream in(tok);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    Fail("--tokenizer: {}: invalid JSON: {}", tok, e.what());
  }
  const int n = TokenizerJsonSize(j, tok);
  if (n > vocab) Fail("--tokenizer: {}: {} ids but the shape's vocabulary has {}", tok, n, vocab);
  fs::copy_file(src, fs::path(dir) / "tokenizer.json", fs::copy_options::overwrite_existing);
  const fs::path cfg = src.parent_path() / "tokenizer_config.json";
  if (fs::exists(cfg))
    fs::copy_file(cfg, fs::path(dir) / "tokenizer_config.json", fs::copy_options::overwrite_existing);
}

// A tokenizer file by extension; relative paths may also name a file in the models dir.
std::unique_ptr<Tokenizer> LoadTokenizerFile(const std::string& path_in, int vocab_size) {
  fs::path p = path_in;
  if (!fs::exists(p)) {
    fs::path in_dir = fs::path(ResolveModelsDir(Globals().models_dir)) / path_in;
    if (!fs::exists(in_dir)) Fail("--tokenizer: {}: no such file (nor in the models directory)", path_in);
    p = in_dir;
  }
  const std::string ext = p.extension().string();
  if (ext == ".bin") return LoadLlama2cTokenizer(p.string(), vocab_size);
  if (ext == ".model") return LoadSentencePieceTokenizer(p.string());
  if (ext == ".json") return LoadHfTokenizer(p.string());
  Fail("--tokenizer: {}: unknown tokenizer format (expected .bin, .model or .json)", p.string());
}

void RunSynth(const SynthArgs& a) {
  using Clock = std::chrono::steady_clock;
  auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
  ModelConfig config = AsUsage([&] { return SyntheticShape(a.shape); });
  // The published context: the KV cache grows with the positions used, so a 128k context
  // costs nothing until a run uses it.
  if (a.ctx < 0) FailUsage("--ctx-size: {} is negative", a.ctx);
  if (a.ctx > 0) config.max_seq_len = a.ctx;
  config.Validate("--ctx-size");
  const QType type = AsUsage([&] { return ParseQType(a.type, "--type"); });
  const bool hf = a.format == "hf";
  if (!hf && a.format != "gguf") FailUsage("--format: '{}' is not a format (gguf, hf)", a.format);
  if (hf && type != QType::F32 && type != QType::F16 && type != QType::BF16)
    FailUsage("--type: {} cannot be stored in an HF folder (f32, f16, bf16)", a.type);
  if (!hf) ToGgmlType(type, "--type");  // fail before generating when GGUF cannot hold the type
  const std::string tok_path = a.tokenizer.empty()          ? DefaultTokenizer(a.shape)
                               : a.tokenizer == "synthetic" ? ""
                                                            : a.tokenizer;
  std::unique_ptr<Tokenizer> tok;
  if (tok_path.empty()) {
    tok = MakeScoreBpeTokenizer(SyntheticVocab(config.vocab_size));
  } else if (!hf) {  // an HF folder gets the files themselves (CopyTokenizer)
    tok = LoadTokenizerFile(tok_path, config.vocab_size);
    if (tok->vocab_size() > config.vocab_size)  // fewer: WriteGguf pads, as llama.cpp does
      Fail("--tokenizer: {}: vocabulary has {} pieces but shape '{}' has vocab {}", tok_path, tok->vocab_size(),
           a.shape, config.vocab_size);
  }

  // In a log: what is made, then the steps' lines (random weights, writing) as they go.
  ReportPhase(fmt::format("{} ({} layers, dim {}, vocab {}) as {} to {}", a.shape, config.n_layers, config.dim,
                          config.vocab_size, QTypeName(type), a.out));
  auto t0 = Clock::now();
  Model m = MakeSyntheticModel(config, a.seed, type);
  if (SyntheticShapeTied(a.shape)) {
    m.output = m.tok_embeddings;
    m.tied_embeddings = true;
  }
  auto t1 = Clock::now();
  auto t2 = t1;
  std::vector<GgufWrittenTensor> written;
  if (hf) {
    WriteHfModel(m, a.out, {type, a.shards});
    if (tok_path.empty()) Fail("--tokenizer: an HF folder needs a tokenizer file (none found for shape '{}')", a.shape);
    CopyTokenizer(tok_path, a.out, config.vocab_size);
    ForEachMatrix(m, [&](const std::string& name, const QMatrix& w) {
      if (name != "output" || !m.tied_embeddings)
        written.push_back(
            {name, std::string(QTypeName(type)), {}, uint64_t(w.rows) * w.cols * (type == QType::F32 ? 4 : 2), ""});
    });
  } else {
    written = WriteGguf(m, *tok, a.out);
  }
  auto t3 = Clock::now();

  std::map<std::string, std::pair<int, uint64_t>> by_type;  // ggml type -> (tensors, bytes)
  uint64_t total = 0;
  for (const auto& t : written) {
    auto& [n, b] = by_type[t.type];
    ++n;
    b += t.bytes;
    total += t.bytes;
    if (!t.note.empty()) std::printf("%s: %s\n", t.name.c_str(), t.note.c_str());
  }
  std::printf("shape %s: dim %d, layers %d, heads %d/%d, ffn %d, vocab %d, ctx %d; %.1fM parameters\n", a.shape.c_str(),
              config.dim, config.n_layers, config.n_heads, config.n_kv_heads, config.hidden_dim, config.vocab_size,
              config.max_seq_len, m.ParameterCount() / 1e6);
  for (const auto& [t, nb] : by_type)
    std::printf("  %-5s %4d tensors %10.2f MiB\n", t.c_str(), nb.first, nb.second / 1048576.0);
  uint64_t file_bytes = 0;
  if (hf) {
    for (auto& e : fs::directory_iterator(a.out))
      if (e.path().extension() == ".safetensors") file_bytes += e.file_size();
  } else {
    file_bytes = fs::file_size(a.out);
  }
  std::printf("wrote %s (%s; tokenizer %s; %.2f MiB matrix data, %.2f MiB weight files); generate %.2fs, write %.2fs\n",
              a.out.c_str(), a.format.c_str(), tok_path.empty() ? "synthetic" : tok_path.c_str(), total / 1048576.0,
              file_bytes / 1048576.0, secs(t1 - t0), secs(t3 - t2));
  std::fflush(stdout);  // before the log's lines that may follow (a `| tee` shows it at once)
}

const CommandRegistrar kRegister(61, [](CLI::App& app) {
  auto args = std::make_shared<SynthArgs>();
  auto* cmd =
      app.add_subcommand("synth", "Write a random-weight model of a real shape as GGUF or HF folder (timing only)");
  cmd->add_option("--shape", args->shape,
                  "tiny, 134m, 1b, tinyllama-1.1b, llama-2-7b, llama-3.2-1b, llama-3.1-8b, qwen2.5-0.5b, qwen2.5-7b, "
                  "or dim=..,layers=..,heads=..,kv_heads=..,ffn=..,vocab=..,ctx=..")
      ->required();
  cmd->add_option("-o,--out", args->out, "Output .gguf file or HF folder")->required();
  cmd->add_option("--format", args->format, "gguf (default) or hf (config.json + safetensors)");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "Tokenizer (.bin llama2.c, .model SentencePiece, .json HF) with the shape's vocab size, or "
                  "'synthetic'; default: the shape's real tokenizer from the shared folders, else synthetic");
  cmd->add_option("--type", args->type, "f32, f16, bf16, q8_0 or q4_0 for the matrices (hf: f32, f16, bf16)");
  cmd->add_option("-c,--ctx-size", args->ctx,
                  "Context length written into the model (llama.cpp's -c; default: the published one)")
      ->default_str("");
  cmd->add_option("--shards", args->shards, "hf: number of safetensors shards (with model.safetensors.index.json)");
  cmd->add_option("--seed", args->seed, "Random seed")->check(SeedRange());
  cmd->callback([args] {
    // A live line on a terminal while generating and writing; in a log, every step's lines.
    StatusLine status(stderr, {.prefix = "synth", .log_min_mib = 0, .terminal = true, .log = {}});
    RunSynth(*args);
  });
});

}  // namespace
}  // namespace specsweep
