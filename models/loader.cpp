// Model name resolution and format detection.
#include "models/loader.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <climits>

#include <fmt/ranges.h>

#include "base/build_info.h"
#include "base/error.h"
#include "base/suggest.h"

namespace fs = std::filesystem;

namespace specsweep {

std::string ResolveModelsDir(const std::string& explicit_dir) {
  if (!explicit_dir.empty()) return explicit_dir;
  if (const char* env = std::getenv("SPECSWEEP_MODELS"); env && *env) return env;
  if (fs::is_directory("../shared/models")) return "../shared/models";
  fs::path beside_source = fs::path(SourceDir()) / ".." / "shared" / "models";
  if (fs::is_directory(beside_source)) return beside_source.lexically_normal().string();
  return "../shared/models";
}

std::string WhyModelNotFound(const std::string& name, const std::string& models_dir) {
  const std::string dir = ResolveModelsDir(models_dir);
  if (!fs::is_directory(dir))
    return fmt::format(
        "not a path, and the models directory {} does not exist (give --models DIR or set "
        "$SPECSWEEP_MODELS)",
        dir);
  std::vector<std::string> known;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) known.push_back(e.path().filename().string());
  std::sort(known.begin(), known.end());
  if (known.empty()) return fmt::format("not a path, and the models directory {} holds no model folder", dir);
  return fmt::format("not a path nor a folder of the models directory {}{} (folders: {})", dir, DidYouMean(name, known),
                     fmt::join(known, ", "));
}

namespace {

bool StartsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// The tokenizer beside a llama2.c checkpoint: tok<vocab>.bin or tokenizer.bin (llama2.c
// format), else a SentencePiece tokenizer.model or <checkpoint name>.model.
std::unique_ptr<Tokenizer> LoadLlama2cSideTokenizer(const fs::path& ckpt, int vocab, std::string* file) {
  const fs::path dir = ckpt.parent_path().empty() ? fs::path(".") : ckpt.parent_path();
  for (const auto& name : {"tok" + std::to_string(vocab) + ".bin", std::string("tokenizer.bin")})
    if (fs::is_regular_file(dir / name)) {
      *file = (dir / name).string();
      return LoadLlama2cTokenizer(*file, vocab);
    }
  for (const auto& name : {std::string("tokenizer.model"), ckpt.stem().string() + ".model"})
    if (fs::is_regular_file(dir / name)) {
      *file = (dir / name).string();
      return LoadSentencePieceTokenizer(*file);
    }
  Fail("{}: tokenizer: no tok{}.bin, tokenizer.bin, tokenizer.model or {}.model beside the checkpoint", dir.string(),
       vocab, ckpt.stem().string());
}

LoadedModel LoadLlama2cWithTokenizer(const fs::path& ckpt) {
  LoadedModel lm;
  auto model = std::make_shared<Model>(LoadLlama2cCheckpoint(ckpt.string()));
  std::string tok;
  lm.tokenizer = LoadLlama2cSideTokenizer(ckpt, model->config.vocab_size, &tok);
  model->source.files.push_back(tok);
  lm.model = std::move(model);
  return lm;
}

// vocab_size from a llama2.c header (negative: unshared classifier), without the weights.
int Llama2cVocabSize(const fs::path& ckpt) {
  std::ifstream f(ckpt, std::ios::binary);
  int32_t h[7];
  if (!f.read(reinterpret_cast<char*>(h), sizeof h))
    Fail("{}: header: file has fewer than {} bytes", ckpt.string(), sizeof h);
  if (h[5] == 0 || h[5] == INT32_MIN) Fail("{}: header.vocab_size: {} is invalid", ckpt.string(), h[5]);
  return h[5] > 0 ? h[5] : -h[5];
}

LoadedModel LoadHfDir(const fs::path& dir) {
  LoadedModel lm;
  auto model = std::make_shared<Model>(LoadHfSafetensors(dir.string()));
  if (fs::is_regular_file(dir / "tokenizer.json")) {
    lm.tokenizer = LoadHfTokenizer((dir / "tokenizer.json").string());
    model->source.files.push_back((dir / "tokenizer.json").string());
  } else if (fs::is_regular_file(dir / "tokenizer.model")) {
    lm.tokenizer = LoadSentencePieceTokenizer((dir / "tokenizer.model").string());
    model->source.files.push_back((dir / "tokenizer.model").string());
  } else {
    Fail("{}: tokenizer: no tokenizer.json or tokenizer.model in the model directory", dir.string());
  }
  // HF checkpoints may pad the embedding past the tokenizer's ids (Qwen2.5: 151936 rows
  // for 151665 tokens, a multiple of 128 for GPU kernels). No text maps to those rows and
  // no decode can print them, so they are dropped: the logits of every real token are
  // unchanged, and checkpoints padded differently (Qwen2.5-0.5B 151936, -7B 152064)
  // share one vocabulary. A tokenizer with more ids than rows is LoadModel's error.
  const int tv = lm.tokenizer->vocab_size();
  if (tv < model->config.vocab_size) DropPaddingRows(*model, tv);
  lm.model = std::move(model);
  return lm;
}

// What a directory holds, for format detection.
struct DirFiles {
  std::vector<fs::path> ggufs, ckpts;
};
DirFiles ListDir(const fs::path& p) {
  DirFiles d;
  for (auto& e : fs::directory_iterator(p)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".gguf")
      d.ggufs.push_back(e.path());
    else if (e.path().extension() == ".bin" && !StartsWith(name, "tok"))
      d.ckpts.push_back(e.path());
  }
  return d;
}
[[noreturn]] void UnknownFormat(const fs::path& p) {
  Fail("{}: format: expected config.json + model.safetensors, one .gguf, or one llama2.c .bin checkpoint", p.string());
}

LoadedModel LoadPath(const fs::path& p) {
  if (fs::is_regular_file(p)) {
    if (p.extension() == ".gguf") return LoadGguf(p.string());
    return LoadLlama2cWithTokenizer(p);
  }
  if (fs::is_regular_file(p / "config.json")) return LoadHfDir(p);
  DirFiles d = ListDir(p);
  if (d.ggufs.size() == 1 && d.ckpts.empty()) return LoadGguf(d.ggufs[0].string());
  if (d.ckpts.size() == 1 && d.ggufs.empty()) return LoadLlama2cWithTokenizer(d.ckpts[0]);
  UnknownFormat(p);
}

std::unique_ptr<Tokenizer> LoadTokenizerPath(const fs::path& p) {
  if (fs::is_regular_file(p)) {
    if (p.extension() == ".gguf") return LoadGgufTokenizer(p.string());
    if (p.extension() == ".json") return LoadHfTokenizer(p.string());
    if (p.extension() == ".model") return LoadSentencePieceTokenizer(p.string());
    std::string file;
    return LoadLlama2cSideTokenizer(p, Llama2cVocabSize(p), &file);
  }
  // The same order as LoadHfDir; a folder may hold only the tokenizer.
  if (fs::is_regular_file(p / "tokenizer.json")) return LoadHfTokenizer((p / "tokenizer.json").string());
  if (fs::is_regular_file(p / "tokenizer.model")) return LoadSentencePieceTokenizer((p / "tokenizer.model").string());
  DirFiles d = ListDir(p);
  if (d.ggufs.size() == 1 && d.ckpts.empty()) return LoadGgufTokenizer(d.ggufs[0].string());
  if (d.ckpts.size() == 1 && d.ggufs.empty()) return LoadTokenizerPath(d.ckpts[0]);
  Fail("{}: tokenizer: expected tokenizer.json, tokenizer.model, one .gguf, or one llama2.c .bin checkpoint",
       p.string());
}

// A name or path as the user gave it -> an existing path.
fs::path ResolvePath(const std::string& name_or_path, const std::string& models_dir) {
  if (name_or_path.empty()) Fail("model: empty name");
  const std::string dir = ResolveModelsDir(models_dir);
  // A device or FIFO would block or fail deep in a reader with a raw filesystem error.
  auto usable = [](const fs::path& p) {
    std::error_code ec;
    if (!fs::exists(p, ec)) return false;
    if (!fs::is_regular_file(p, ec) && !fs::is_directory(p, ec))
      Fail("model '{}': not a regular file or a directory (a device, FIFO or socket)", p.string());
    return true;
  };
  fs::path p = name_or_path;
  if (usable(p)) return p;
  fs::path in_dir = fs::path(dir) / name_or_path;
  if (usable(in_dir)) return in_dir;
  Fail("model '{}': not found: {}", name_or_path, WhyModelNotFound(name_or_path, models_dir));
}

}  // namespace

LoadedModel LoadModel(const std::string& name_or_path, const std::string& models_dir, int context) {
  const fs::path p = ResolvePath(name_or_path, models_dir);
  LoadedModel lm = LoadPath(p);
  lm.name = name_or_path;
  const int tv = lm.tokenizer->vocab_size(), mv = lm.model->config.vocab_size;
  if (tv != mv) Fail("{}: tokenizer: vocabulary has {} tokens but the model has {}", p.string(), tv, mv);
  if (context > 0) {
    const int own = lm.model->config.max_seq_len;
    if (context > own) Fail("{}: a context of {} positions exceeds the model's {}", p.string(), context, own);
    // Still loading: the model was made above and nothing else holds it yet.
    const_cast<Model&>(*lm.model).config.max_seq_len = context;
  }
  return lm;
}

std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& name_or_path, const std::string& models_dir) {
  return LoadTokenizerPath(ResolvePath(name_or_path, models_dir));
}

LoadedModel WithQuant(const LoadedModel& m, QType type) {
  LoadedModel q;
  q.name = m.name + "@" + std::string(QTypeName(type));
  q.model = std::make_shared<Model>(QuantizeModel(*m.model, type));
  q.tokenizer = m.tokenizer;
  return q;
}

}  // namespace specsweep
