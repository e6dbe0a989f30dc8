// A measured prompt that may be a conversation: with `turns: all`, each later turn of a
// question is asked after the decoder's own answer to the turns before it (MT-bench's
// protocol, as Spec-Bench runs it), so every decoder answers its own conversation.
#pragma once
#include <string>
#include <vector>

#include "decoders/decoder.h"
#include "models/chat_template.h"

namespace specsweep {

// Generates `first` (the rendered first turn) in the decoder's run `state`; then for each later entry of `turns`
// renders the conversation so far (turns with the decoder's answers, each trimmed) and
// generates again. The result holds every turn's tokens and text, one after another,
// and their statistics combined (CombineTurns). Error (naming `what`) when a turn's
// prompt plus `reserve` tokens exceeds `context`.
GenerationResult GenerateConversation(const Decoder& d, DecoderState& state, const std::vector<int>& first,
                                      const std::vector<std::string>& turns, const ChatEncoder& chat, int context,
                                      int reserve, const std::string& what);

// Statistics of two generations as one: counts, times and per-position arrays summed,
// steps concatenated; tokens/s over both turns' decode time, the first-token latency of
// the first turn, the next-token latency weighted by each turn's tokens.
GenerationStats CombineTurns(const GenerationStats& a, const GenerationStats& b);

}  // namespace specsweep
