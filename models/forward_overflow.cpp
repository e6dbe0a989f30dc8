#include "models/forward_overflow.h"

#include <tuple>

#include <fmt/format.h>

#include "base/error.h"

namespace specsweep {

bool Overflow::Before(const Overflow& o) const {
  return std::tie(layer, stage, sequence, position) < std::tie(o.layer, o.stage, o.sequence, o.position);
}

std::string Overflow::What() const {
  switch (stage) {
    case kAttnNorm: return fmt::format("attn_norm: the residual stream's sum of squares is {}", value);
    case kHeadNorm: return fmt::format("q_norm/k_norm of head {}: the sum of squares is {}", head, value);
    case kScores: return fmt::format("attention head {}: a score or its softmax sum is not finite", head);
    case kFfnNorm: return fmt::format("ffn_norm: the residual stream's sum of squares is {}", value);
    default: return fmt::format("output_norm: the residual stream's sum of squares is {}", value);
  }
}

void FailOnOverflow(const Model& model, std::span<const Overflow> notes, bool batched) {
  const Overflow* first = nullptr;
  for (const Overflow& o : notes)
    if (o.found() && (!first || o.Before(*first))) first = &o;
  if (!first) return;
  const std::string sequence = batched ? fmt::format("sequence {}, ", first->sequence) : "";
  Fail("{}: forward: layer {}, {}position {}: {}: an activation overflowed float (weights too large) or is NaN",
       model.source.path.empty() ? model.source.format : model.source.path, first->layer, sequence, first->position,
       first->What());
}

}  // namespace specsweep
