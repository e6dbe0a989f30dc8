// `specsweep tokenize --model M (--text T | --file F) [--decode] [--json]`: the ids a
// model's tokenizer gives a text (and the text they decode to), for any model, GGUF
// file or tokenizer folder. Only the tokenizer is loaded, not the weights.
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "harness/cli/commands.h"
#include "base/error.h"
#include "base/text_input.h"
#include "models/loader.h"

namespace specsweep {
namespace {

struct TokenizeArgs {
  std::string model, text, file;
  bool decode = false, json = false, no_bos = false;
};

// --file: one input per line (without its '\n'); --text: the text as one input.
std::vector<std::string> Inputs(const TokenizeArgs& a) {
  if (a.file.empty()) return {a.text};
  std::vector<std::string> lines;
  const std::string all = ReadTextInput(a.file, "input file");
  for (size_t pos = 0; pos < all.size();) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) nl = all.size();
    lines.push_back(all.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

void RunTokenize(const TokenizeArgs& a) {
  auto tok = LoadTokenizer(a.model, Globals().models_dir);
  const bool add_bos = !a.no_bos && tok->add_bos_default();
  for (const std::string& text : Inputs(a)) {
    const std::vector<int> ids = tok->Encode(text, add_bos);
    // Every id is shown, special ones included, so the decode is what the ids say.
    const std::string decoded = a.decode ? tok->Decode(ids, Specials::kKeep) : "";
    if (a.json) {
      nlohmann::json j = {{"text", text}, {"ids", ids}};
      if (a.decode) j["decoded"] = decoded;
      fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
      fmt::print("{}\n", fmt::join(ids, " "));
      if (a.decode) fmt::print("{}\n", decoded);
    }
  }
}

CommandRegistrar reg(25, [](CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  auto* cmd = app.add_subcommand("tokenize", "Print the token ids of a text (and their decoding)");
  cmd->add_option("-m,--model", args->model,
                  "Model name or path, GGUF file, or tokenizer folder/file (tokenizer.json, tokenizer.model)")
      ->required();
  auto* text = cmd->add_option("--text", args->text, "Text to tokenize (one input)");
  auto* file = cmd->add_option("--file", args->file, "File to tokenize, one input per line");
  text->excludes(file);
  file->excludes(text);
  cmd->add_flag("--decode", args->decode, "Also print the text the ids decode to (special tokens included)");
  cmd->add_flag("--json", args->json, "One JSON object per input: {\"text\", \"ids\"[, \"decoded\"]}");
  cmd->add_flag("--no-bos", args->no_bos, "Do not prepend BOS even if the tokenizer's config asks for it");
  cmd->callback([args, text, file] {
    if (text->count() + file->count() != 1) FailUsage("tokenize: give exactly one of --text or --file");
    RunTokenize(*args);
  });
});

}  // namespace
}  // namespace specsweep
