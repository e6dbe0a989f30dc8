// Internal constructors of the decoders (MakeDecoder resolves options into these).
#pragma once
#include <memory>
#include <string>

#include "decoders/decoder.h"
#include "decoders/drafter.h"
#include "decoders/verify.h"

namespace specsweep {

// A resolved model draft (MakeDecoder turns a DraftSpec into it): a model plus how many
// of its blocks to run. Early exit = the target's own Model with layers < n_layers; a
// quantized copy of the target; or another model with the same vocabulary.
struct ModelDraft {
  std::shared_ptr<const Model> model;
  int layers = 0;    // 0: all
  std::string name;  // for messages and reports
};

std::unique_ptr<Decoder> MakeAutoregressiveDecoder(const LoadedModel& target, const DecoderOptions& o,
                                                   const Runtime& rt = {});

// K in [1, context), draft_p_min in (0, 1), max_new_tokens >= 0, sampling ranges.
void ValidateSpeculativeOptions(const LoadedModel& target, const DecoderOptions& o);

// The one speculative loop over any drafter (drafter.h). Validates K, draft_p_min and
// sampling (throws Error). `rule` is a test hook: anything but AcceptRule::Exact breaks
// losslessness on purpose. Every Forward call runs on `rt`.
std::unique_ptr<Decoder> MakeSpeculativeDecoder(const LoadedModel& target, std::unique_ptr<Drafter> drafter,
                                                const DecoderOptions& o, AcceptRule rule = AcceptRule::Exact,
                                                const Runtime& rt = {});
// Same with a same-vocabulary draft model (ModelDrafter); also checks the vocabulary
// match and the draft layers.
std::unique_ptr<Decoder> MakeSpeculativeDecoder(const LoadedModel& target, ModelDraft draft, const DecoderOptions& o,
                                                AcceptRule rule = AcceptRule::Exact, const Runtime& rt = {});

}  // namespace specsweep
