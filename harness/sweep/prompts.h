// Prompt sets: natural prompts one per line, or long passages cut to exact token
// counts for the input-length axis.
#pragma once
#include <string>
#include <vector>

#include "models/tokenizer.h"

namespace specsweep {

// The first `count` non-empty lines of a prompt file (Error if there are fewer).
std::vector<std::string> ReadPromptLines(const std::string& path, int count);
// Splits text into passages at blank lines (each trimmed, none empty).
std::vector<std::string> SplitPassages(const std::string& text);
// `count` prompts of exactly `n_tokens` tokens (BOS included): prompt i is passage i
// followed by the next passages as needed, encoded, cut to n_tokens. Never pads: Error
// when the passages (`what` names them) run out of text.
std::vector<std::vector<int>> CutPassages(const std::vector<std::string>& passages, const Tokenizer& tok, int n_tokens,
                                          int count, const std::string& what);

}  // namespace specsweep
