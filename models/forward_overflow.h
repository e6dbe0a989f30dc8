// Where a forward call first met a non-finite value (models/forward.cpp). An overflow
// inside a layer need not reach the logits: RMSNorm turns a residual stream whose squares
// overflow float into zeros, and a -inf attention score into a zero weight, so the
// decoders' logits check (CheckLogits) sees finite rows and decoding goes on, wrong.
// The pass checks scalars it computes anyway: each norm's sum of squares (the residual
// stream wherever a norm reads it) and each softmax row's smallest score and sum.
#pragma once
#include <bit>
#include <climits>
#include <cstdint>
#include <span>
#include <string>

#include "models/model.h"

// The checks test exponent bits, but a compiler told that no value is Inf or NaN may
// still drop them: refuse to build so rather than lose them silently.
#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "the forward pass checks for Inf/NaN activations: build without -ffast-math / -ffinite-math-only"
#endif

namespace specsweep {

// Neither Inf nor NaN (a bit test, whatever the floating-point flags).
inline bool Finite(float x) { return (std::bit_cast<uint32_t>(x) & 0x7f800000u) != 0x7f800000u; }

// One thread's first non-finite value of a call (an exception must not leave the
// parallel region, so each thread notes its own and Forward throws the earliest).
struct Overflow {
  enum Stage { kAttnNorm, kHeadNorm, kScores, kFfnNorm, kOutputNorm };  // in forward order
  int layer = INT_MAX, stage = kAttnNorm, position = 0, head = -1;
  float value = 0;   // a norm's sum of squares
  int sequence = 0;  // of a batch (ForwardBatch)

  bool found() const { return layer != INT_MAX; }
  bool Before(const Overflow& o) const;  // earlier in the pass: layer, stage, sequence, position
  std::string What() const;              // "attn_norm: the residual stream's sum of squares is inf"
};

// Throws Error("MODEL: forward: layer L, position P: WHAT: ...") for the earliest of the
// threads' notes, if any; "layer L, sequence S, position P" when `batched`.
void FailOnOverflow(const Model& model, std::span<const Overflow> notes, bool batched = false);

}  // namespace specsweep
