// HF checkpoint folders: config.json <-> ModelConfig, and a writer for synthetic models
// (config.json + model.safetensors or shards with model.safetensors.index.json).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "models/model.h"
#include "quant/qtype.h"

namespace specsweep {

// Parses config.json (model_type llama/mistral/qwen2/qwen3); every unsupported value is
// an Error naming its field.
ModelConfig ParseHfConfig(const std::string& config_json_path);
ModelConfig HfConfigFromJson(const nlohmann::json& j, const std::string& path);
// The config.json of a model (inverse of ParseHfConfig).
nlohmann::json HfConfigJson(const ModelConfig& c, bool tied_embeddings);

struct HfWriteOptions {
  QType dtype = QType::F32;  // F32, F16 or BF16 for every tensor
  int shards = 1;            // > 1: model-0000k-of-0000n.safetensors + index
};
// Writes `model` (any in-memory types; converted to opts.dtype) as an HF folder: q/k
// rows back in rotate_half order; a tied classifier is stored once, as the embedding.
// Creates the directory; does not write a tokenizer.
void WriteHfModel(const Model& model, const std::string& dir, const HfWriteOptions& opts);

}  // namespace specsweep
