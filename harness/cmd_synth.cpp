// `specsweep synth --shape NAME|dims -o FILE.gguf --tokenizer PATH [--type T] [--seed S]`:
// random weights in a real model shape, written as GGUF, for timing at realistic sizes.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "harness/commands.h"
#include "models/error.h"
#include "models/gguf.h"
#include "models/loader.h"
#include "models/synthetic.h"

namespace specsweep {
namespace {

struct SynthArgs {
  std::string shape, out, tokenizer, type = "f32";
  uint64_t seed = 1;
};

// A tokenizer file by extension; relative paths may also name a file in the models dir.
std::unique_ptr<Tokenizer> LoadTokenizerFile(const std::string& path_in, int vocab_size) {
  namespace fs = std::filesystem;
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
  const ModelConfig config = SyntheticShape(a.shape);
  const QType type = ParseQType(a.type, "--type");
  ToGgmlType(type, "--type");  // fail before generating when GGUF cannot hold the type
  std::unique_ptr<Tokenizer> tok;
  if (a.tokenizer.empty()) {
    tok = MakeScoreBpeTokenizer(SyntheticVocab(config.vocab_size));
  } else {
    tok = LoadTokenizerFile(a.tokenizer, config.vocab_size);
    if (tok->vocab_size() != config.vocab_size)
      Fail("--tokenizer: {}: vocabulary has {} pieces but shape '{}' has vocab {}", a.tokenizer, tok->vocab_size(),
           a.shape, config.vocab_size);
  }

  auto t0 = Clock::now();
  Model m = MakeSyntheticModel(config, a.seed);
  auto t1 = Clock::now();
  // Peak memory: the F32 model plus its quantized copy, then the F32 one is freed.
  if (type != QType::F32) m = QuantizeModel(m, type);
  auto t2 = Clock::now();
  auto written = WriteGguf(m, *tok, a.out);
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
  std::printf("shape %s: dim %d, layers %d, heads %d/%d, ffn %d, vocab %d, ctx %d; %.1fM parameters\n",
              a.shape.c_str(), config.dim, config.n_layers, config.n_heads, config.n_kv_heads, config.hidden_dim,
              config.vocab_size, config.max_seq_len, m.ParameterCount() / 1e6);
  for (const auto& [t, nb] : by_type)
    std::printf("  %-5s %4d tensors %10.2f MiB\n", t.c_str(), nb.first, nb.second / 1048576.0);
  std::printf("wrote %s (%.2f MiB tensor data, %.2f MiB file); generate %.2fs, quantize %.2fs, write %.2fs\n",
              a.out.c_str(), total / 1048576.0, std::filesystem::file_size(a.out) / 1048576.0, secs(t1 - t0),
              secs(t2 - t1), secs(t3 - t2));
}

const CommandRegistrar kRegister(61, [](CLI::App& app) {
  auto args = std::make_shared<SynthArgs>();
  auto* cmd = app.add_subcommand("synth", "Write a random-weight model of a real shape as GGUF (timing only)");
  cmd->add_option("--shape", args->shape, "tiny, 134m, 1b, or dim=..,layers=..,heads=..,kv_heads=..,ffn=..,vocab=..,ctx=..")
      ->required();
  cmd->add_option("-o,--out", args->out, "Output .gguf file")->required();
  cmd->add_option("--tokenizer", args->tokenizer,
                  "Tokenizer (.bin llama2.c, .model SentencePiece, .json HF) with the shape's vocab size; "
                  "default: a synthetic vocabulary");
  cmd->add_option("--type", args->type, "f32, f16, bf16, q8_0 or q4_0 for the matrices");
  cmd->add_option("--seed", args->seed, "Random seed");
  cmd->callback([args] { RunSynth(*args); });
});

}  // namespace
}  // namespace specsweep
