// `specsweep quantize IN OUT --type q4_0`: loads any supported model, quantizes its
// matrices in memory (QuantizeModel) and writes a GGUF file, listing every tensor.
#include <chrono>
#include <cstdio>

#include "harness/cli/commands.h"
#include "base/error.h"
#include "base/status_line.h"
#include "harness/measure/process_runtime.h"
#include "models/gguf.h"
#include "models/loader.h"

namespace specsweep {
namespace {

struct QuantizeArgs {
  std::string in, out, quant = "q4_0";
};

void RunQuantize(const QuantizeArgs& a) {
  const QType type = AsUsage([&] { return ParseQuantizeTarget(a.quant, "--quant"); });
  ToGgmlType(type, "--type");  // fail before loading when GGUF cannot hold the type
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  ProcessRuntime(Globals().threads);  // before loading: weights are packed for its kernels
  LoadedModel lm = LoadModel(a.in, Globals().models_dir);
  auto t1 = Clock::now();
  Model q = QuantizeModel(*lm.model, type);
  auto t2 = Clock::now();
  auto written = WriteGguf(q, *lm.tokenizer, a.out);
  auto t3 = Clock::now();

  uint64_t total = 0;
  std::printf("%-28s %-6s %-16s %12s\n", "tensor", "type", "ne", "bytes");
  for (const auto& t : written) {
    std::string note = t.note;
    // QuantizeModel's matrices (not the gathered embedding) follow StoredQType.
    if (note.empty() && t.ne.size() == 2 && t.name != "token_embd.weight")
      if (const QType stored = StoredQType(type, static_cast<int>(t.ne[0])); stored != type)
        note = fmt::format("{} with {} columns (not a multiple of {}): {}, as in memory (llama.cpp's fallback)",
                           QTypeName(type), t.ne[0], BlockSize(type), QTypeName(stored));
    std::printf("%-28s %-6s %-16s %12llu%s%s\n", t.name.c_str(), t.type.c_str(),
                fmt::format("{}", fmt::join(t.ne, "x")).c_str(), static_cast<unsigned long long>(t.bytes),
                note.empty() ? "" : "  ", note.c_str());
    total += t.bytes;
  }
  auto s = [](auto d) { return std::chrono::duration<double>(d).count(); };
  std::printf("wrote %s: %zu tensors, %.2f MiB of tensor data (%s -> %s); load %.2fs, quantize %.2fs, write %.2fs\n",
              a.out.c_str(), written.size(), total / 1048576.0, lm.model->source.format.c_str(),
              std::string(QTypeName(type)).c_str(), s(t1 - t0), s(t2 - t1), s(t3 - t2));
  std::fflush(stdout);
}

const CommandRegistrar kRegister(60, [](CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  auto* cmd = app.add_subcommand("quantize", "Quantize a model's matrices and write it as GGUF");
  // --model/-o as in the other commands; the positional forms stay for existing scripts.
  cmd->add_option("model,-m,--model", args->in,
                  "Input model (path or name in the models directory); required, as the first argument or --model");
  cmd->parse_complete_callback([a = args] {
    if (a->in.empty()) throw CLI::RequiredError("quantize: the model (as the first argument or --model)");
  });
  cmd->add_option("out,-o,--out", args->out, "Output .gguf file")->required();
  cmd->add_option("--quant,--type", args->quant,
                  "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q4_g64, q4_g128, q4_k, q5_k or q6_k "
                  "(embedding and norms stay as "
                  "loaded; --type: old name)");
  cmd->callback([args] {
    // A live line on a terminal while loading, quantizing and writing; in a log, the
    // steps' lines when the model is large (a small one's output stays as it was).
    StatusLine status(stderr, {.prefix = "quantize", .log_min_mib = 256, .terminal = true, .log = {}});
    RunQuantize(*args);
  });
});

}  // namespace
}  // namespace specsweep
