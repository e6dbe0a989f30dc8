// `specsweep generate --batch B` (cmd_generate_batch.cpp): B sequences decoded together
// by Decoder::GenerateBatch, printed once the batch is done (no streaming).
#pragma once
#include <string>
#include <vector>

#include "decoders/decoder.h"
#include "models/tokenizer.h"

namespace specsweep {

struct BatchGenerate {
  const Decoder* dec = nullptr;
  const Tokenizer* tok = nullptr;
  std::string model, quant;                  // as the command line names them (quant: the target's label)
  std::vector<std::string> prompts;          // [batch] texts, one per sequence
  std::vector<std::vector<int>> prompt_ids;  // [batch] their ids (template applied)
  bool json = false;
};

// The texts of the batch's sequences from the -p/--prompt options given: none (the
// default prompt) or one, used for every sequence, or one per sequence. UsageError for
// several prompts without --batch, or a count that is neither 1 nor the batch.
std::vector<std::string> BatchPromptTexts(const std::vector<std::string>& given, const std::string& default_prompt,
                                          int batch);

// Runs the batch and prints each sequence (text, or nothing for replayed acceptance) with
// its statistics and the batch's aggregate line; --json: one object of both.
void RunBatchGenerate(const BatchGenerate& b);

}  // namespace specsweep
