// Whether a separate draft model reads its target's token ids or is bridged through text
// (decoders/text_bridge.h): another tokenizer means greedy only, no trees, and an
// acceptance of its own, so the plan, --list and the records say which.
#pragma once
#include <map>
#include <string>
#include <utility>

#include "harness/sweep/experiment.h"

namespace specsweep {

// The record field and its values (absent in records from before it: unknown).
inline constexpr const char* kDraftTokenizerField = "draft_tokenizer";
inline constexpr const char* kDraftTokenizerShared = "shared";    // the target's token ids
inline constexpr const char* kDraftTokenizerBridged = "bridged";  // another tokenizer, through text

// A (target, draft model) pair of the grid whose tokenizers differ.
struct BridgedDraft {
  size_t target_pieces = 0, draft_pieces = 0;
  std::string why;  // SameVocabulary's reason ("512 tokens vs 2048 tokens")
};
using BridgedDrafts = std::map<std::pair<std::string, std::string>, BridgedDraft>;  // (target, draft) ->

// The pairs of `e`'s points that bridge through text, read from the tokenizers alone
// (no weights). A model whose tokenizer cannot be read is left out: the decoder's
// preflight names what is wrong with it.
BridgedDrafts FindBridgedDrafts(const Experiment& e);
// " (draft tokenizer: bridged through text, 512 vs 2048 pieces)" for a point of a bridged
// pair, else "".
std::string BridgedNote(const Point& p, const BridgedDrafts& bridged);
// "plan: ..." lines naming each bridged pair and its points; "" when there is none.
std::string BridgedPlanText(const Experiment& e, const BridgedDrafts& bridged);

}  // namespace specsweep
