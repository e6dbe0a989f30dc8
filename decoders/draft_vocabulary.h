// Whether a separate draft model reads its target's token ids, or MakeDecoder bridges it
// through text (decoders/text_bridge.h): the records say which (draft_tokenizer).
#pragma once
#include "models/loader.h"

namespace specsweep {

// The same token table when both have tokenizers (equal sizes are not enough: the draft's
// ids must mean the target's tokens), else the same vocabulary size. Defined beside
// MakeDecoder, which decides by it.
bool DraftSharesVocabulary(const LoadedModel& target, const LoadedModel& draft);

}  // namespace specsweep
