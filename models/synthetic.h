// Random-weight Llama models: small ones for tests that must run without the shared
// models, and real-size shapes for timing (random weights say nothing of acceptance).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "models/model.h"
#include "models/tokenizer.h"

namespace specsweep {

// Weights ~ U(-a, a) with a = 1/sqrt(fan_in) (norms ~1), deterministic in `seed`;
// biases U(-0.5, 0.5), q/k norms like the other norms. Matrices are converted to `type`
// as they are made (peak memory: the model plus one F32 matrix); the embedding too when
// `type` is a float type (a quantized model keeps it F32, as QuantizeModel does).
Model MakeSyntheticModel(const ModelConfig& config, uint64_t seed, QType type = QType::F32);

// A small config for tests: dim 64, 2 layers, 4 heads, 2 kv heads, FFN 96, vocab 128, ctx 128.
ModelConfig TinyTestConfig();

// Named real-size shapes (models/synthetic_shapes.cpp): "tiny" (TinyTestConfig),
// "134m" (dim 768, 12 layers, 12 heads, FFN 2048, vocab 32000, ctx 1024), "1b"
// (TinyLlama-1.1B: dim 2048, 22 layers, 32 heads, 4 kv heads, FFN 5632, vocab 32000,
// ctx 2048), or explicit "dim=512,layers=8,heads=8,kv_heads=8,ffn=1376,vocab=32000,
// ctx=1024" (kv_heads defaults to heads; optional rope_theta=, eps=), or a published
// model's shape: tinyllama-1.1b, llama-2-7b, llama-3.2-1b, llama-3.1-8b (llama3 RoPE
// scaling), qwen2.5-0.5b, qwen2.5-7b (qwen2). Unknown names or fields throw Error.
ModelConfig SyntheticShape(std::string_view name);
// Whether the published model ties its classifier to the embedding.
bool SyntheticShapeTied(std::string_view name);

// The name the reproduction recipes give `synth` output: synth-<shape>-<type>.gguf
// (synth-llama-2-7b-f16.gguf), read back so a missing file can be named with the command
// that makes it, and costed before it exists (harness/sweep/shard.h).
struct SynthFileName {
  std::string shape, type;
};
std::optional<SynthFileName> ParseSynthFileName(std::string_view file_name);
// Bytes of such a file's matrices, from its shape and type; 0 for another name.
double SynthFileBytes(std::string_view file_name);

// A vocabulary of `size` pieces for tests and synthetic models without a tokenizer:
// <unk>, <s>, </s>, then byte tokens <0x00>.. and single printable characters as far as
// the size allows, then multi-character pieces ("▁a", "ab", ...) with decreasing scores.
Vocab SyntheticVocab(int size);

}  // namespace specsweep
