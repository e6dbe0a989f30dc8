// `specsweep inspect MODEL`: format, config, stored tensors, in-memory weights.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/status_line.h"
#include "harness/cli/commands.h"
#include "harness/measure/process_runtime.h"
#include "models/loader.h"
#include "models/quant_error.h"
#include "quant/qtype.h"

namespace specsweep {
namespace {

struct InspectArgs {
  std::string model;
  std::string quant;
  std::vector<std::string> quant_error;  // types to measure against the loaded weights
};

void PrintQuantError(const Model& m, QType type) {
  ModelQuantError e = MeasureModelQuantError(m, type);
  fmt::print("\nquantization error vs loaded weights, {} (each tensor as it would be stored):\n", QTypeName(type));
  fmt::print("  {:<20} {:<7} {:>12} {:>12} {:>12} {:>9}\n", "tensor", "stored", "max|err|", "mean|err|", "rmse",
             "SNR dB");
  auto row = [](const std::string& name, std::string_view stored, const QuantErrorStats& s) {
    fmt::print("  {:<20} {:<7} {:>12.3e} {:>12.3e} {:>12.3e} {:>9.2f}\n", name, stored, s.max_abs, s.mean_abs, s.rmse,
               s.snr_db);
  };
  for (auto& t : e.tensors) row(t.name, QTypeName(t.stored), t.stats);
  row("TOTAL", "", e.total);
}

void RunInspect(const InspectArgs& a) {
  ProcessRuntime(Globals().threads);  // before loading: weights are packed for its kernels
  LoadedModel lm = LoadModel(a.model, Globals().models_dir);
  if (!a.quant.empty() && a.quant != "none") lm = WithQuant(lm, ParseQuantizeTarget(a.quant, "--quant"));
  const Model& m = *lm.model;
  const ModelConfig& c = m.config;
  fmt::print("model       {}\nformat      {}\npath        {}\n", lm.name, m.source.format, m.source.path);
  fmt::print(
      "arch        {}\ndim         {}\nhidden_dim  {}\nn_layers    {}\nn_heads     {}\n"
      "n_kv_heads  {}\nhead_dim    {}\nvocab_size  {}\nmax_seq_len {}\nrope_theta  {}\n"
      "norm_eps    {}\nbos/eos     {}/{}\ntied_emb    {}\n",
      c.arch, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim(), c.vocab_size, c.max_seq_len,
      c.rope_theta, c.norm_eps, c.bos_id, c.eos_id, m.tied_embeddings);
  fmt::print("tokenizer   {} ({} tokens)\n", lm.tokenizer->kind(), lm.tokenizer->vocab_size());
  if (m.source.vocab_rows)
    fmt::print("            (the file's {} embedding rows past the tokenizer's {} ids are padding: dropped)\n",
               m.source.vocab_rows, c.vocab_size);
  fmt::print("parameters  {}\nweight mem  {} bytes ({:.2f} MiB)\n", m.ParameterCount(), m.WeightBytes(),
             m.WeightBytes() / 1048576.0);
  fmt::print("\nstored tensors ({}):\n", m.source.tensors.size());
  for (auto& t : m.source.tensors)
    fmt::print("  {:<48} {:<6} [{}] {} bytes\n", t.name, t.dtype, fmt::join(t.shape, ", "), t.bytes);
  fmt::print("\nin-memory weights:\n");
  for (auto& line : DescribeWeights(m)) fmt::print("  {}\n", line);
  fmt::print("effective types  {}\n", DescribeTypeCounts(m));
  for (auto& t : a.quant_error) PrintQuantError(m, ParseQuantizeTarget(t, "--quant-error"));
}

CommandRegistrar reg(20, [](CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  auto* cmd = app.add_subcommand("inspect", "Show a model's format, config, tensors and sizes");
  cmd->add_option("model,-m,--model", args->model,
                  "Model name (folder in the models dir) or path; required, as the first argument or --model");
  cmd->parse_complete_callback([a = args] {
    if (a->model.empty()) throw CLI::RequiredError("inspect: the model (as the first argument or --model)");
  });
  cmd->add_option("--quant", args->quant,
                  "Quantize in memory first (none or a type as in quantize --quant; q2_k/q3_k load only)");
  cmd->add_option("--quant-error", args->quant_error,
                  "Per-tensor error (max/mean abs, RMSE, SNR) of quantizing to these types")
      ->delimiter(',');
  cmd->callback([args] {
    StatusLine status;  // a live line on a terminal while loading a large model
    RunInspect(*args);
  });
});

}  // namespace
}  // namespace specsweep
