// Model name resolution and format detection.
#include "models/loader.h"

#include <cstdlib>
#include <filesystem>

#include "models/build_info.h"
#include "models/error.h"

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

namespace {

bool StartsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// llama2.c directory: one checkpoint .bin plus a tokenizer .bin (tok*.bin / tokenizer.bin).
std::string FindLlama2cTokenizer(const fs::path& dir, int vocab) {
  for (auto name : {"tok" + std::to_string(vocab) + ".bin", std::string("tokenizer.bin")})
    if (fs::is_regular_file(dir / name)) return (dir / name).string();
  Fail("{}: tokenizer: no tok{}.bin or tokenizer.bin beside the checkpoint", dir.string(), vocab);
}

LoadedModel LoadLlama2cWithTokenizer(const fs::path& ckpt) {
  LoadedModel lm;
  auto model = std::make_shared<Model>(LoadLlama2cCheckpoint(ckpt.string()));
  std::string tok = FindLlama2cTokenizer(ckpt.parent_path().empty() ? "." : ckpt.parent_path(),
                                         model->config.vocab_size);
  lm.tokenizer = LoadLlama2cTokenizer(tok, model->config.vocab_size);
  model->source.files.push_back(tok);
  lm.model = std::move(model);
  return lm;
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
  lm.model = std::move(model);
  return lm;
}

LoadedModel LoadPath(const fs::path& p) {
  if (fs::is_regular_file(p)) {
    if (p.extension() == ".gguf") return LoadGguf(p.string());
    return LoadLlama2cWithTokenizer(p);
  }
  if (fs::is_regular_file(p / "config.json")) return LoadHfDir(p);
  std::vector<fs::path> ggufs, ckpts;
  for (auto& e : fs::directory_iterator(p)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".gguf") ggufs.push_back(e.path());
    else if (e.path().extension() == ".bin" && !StartsWith(name, "tok")) ckpts.push_back(e.path());
  }
  if (ggufs.size() == 1 && ckpts.empty()) return LoadGguf(ggufs[0].string());
  if (ckpts.size() == 1 && ggufs.empty()) return LoadLlama2cWithTokenizer(ckpts[0]);
  Fail("{}: format: expected config.json + model.safetensors, one .gguf, or one llama2.c .bin checkpoint",
       p.string());
}

}  // namespace

LoadedModel LoadModel(const std::string& name_or_path, const std::string& models_dir) {
  if (name_or_path.empty()) Fail("model: empty name");
  const std::string dir = ResolveModelsDir(models_dir);
  fs::path p = name_or_path;
  if (!fs::exists(p)) {
    fs::path in_dir = fs::path(dir) / name_or_path;
    if (!fs::exists(in_dir)) {
      std::string known;
      if (fs::is_directory(dir))
        for (auto& e : fs::directory_iterator(dir))
          if (e.is_directory()) known += (known.empty() ? "" : ", ") + e.path().filename().string();
      Fail("model '{}': not found as a path or in the models directory {} (available: {})", name_or_path,
           dir, known.empty() ? "none" : known);
    }
    p = in_dir;
  }
  LoadedModel lm = LoadPath(p);
  lm.name = name_or_path;
  const int tv = lm.tokenizer->vocab_size(), mv = lm.model->config.vocab_size;
  if (tv != mv)
    Fail("{}: tokenizer: vocabulary has {} tokens but the model has {}", p.string(), tv, mv);
  return lm;
}

LoadedModel WithQuant(const LoadedModel& m, QType type) {
  LoadedModel q;
  q.name = m.name + "@" + std::string(QTypeName(type));
  q.model = std::make_shared<Model>(QuantizeModel(*m.model, type));
  q.tokenizer = m.tokenizer;
  return q;
}

}  // namespace specsweep
