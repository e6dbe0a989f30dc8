// Resolves a model name or path and loads weights + tokenizer in any supported format.
#pragma once
#include <memory>
#include <string>

#include "models/model.h"
#include "models/tokenizer.h"

namespace specsweep {

struct LoadedModel {
  std::string name;  // as given by the user
  std::shared_ptr<const Model> model;
  std::shared_ptr<const Tokenizer> tokenizer;
};

// The models directory: explicit dir, else $SPECSWEEP_MODELS, else ../shared/models
// relative to the working directory, else relative to the source tree.
std::string ResolveModelsDir(const std::string& explicit_dir = "");
// Why `name` names no model: the models directory is missing or empty, or the folders it
// holds (with the closest one when `name` looks like a typo of it).
std::string WhyModelNotFound(const std::string& name, const std::string& models_dir);

// `name_or_path` is a file (.bin llama2.c checkpoint, .gguf), a directory (HF:
// config.json + model.safetensors; llama2.c: one checkpoint + tok<N>.bin, tokenizer.bin,
// tokenizer.model or <checkpoint name>.model; one .gguf), or a folder name inside the
// models directory. Throws Error naming the file/field. `context` > 0 (llama.cpp's n_ctx,
// generate -c) limits the model to that many positions, at most its own: a loading step,
// so the model stays const afterwards.
LoadedModel LoadModel(const std::string& name_or_path, const std::string& models_dir = "", int context = 0);

// Individual formats (used by LoadModel).
Model LoadLlama2cCheckpoint(const std::string& path);
Model LoadHfSafetensors(const std::string& dir);                        // config.json + model.safetensors
LoadedModel LoadGguf(const std::string& path);                          // weights + embedded vocabulary
std::unique_ptr<Tokenizer> LoadGgufTokenizer(const std::string& path);  // vocabulary only

// The tokenizer of a model (any form LoadModel accepts) without loading its weights,
// or of a tokenizer folder/file: a folder with tokenizer.json or tokenizer.model, or
// such a file itself.
std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& name_or_path, const std::string& models_dir = "");

}  // namespace specsweep

namespace specsweep {
// The same model with its weights quantized in memory (QuantizeModel); the tokenizer
// is shared. Name becomes "<name>@<type>".
LoadedModel WithQuant(const LoadedModel& m, QType type);
}  // namespace specsweep
