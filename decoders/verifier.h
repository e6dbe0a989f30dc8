// How the speculative loop (speculative.cpp) judges a step's draft: one strategy per
// decoder, chosen when it is built -- the real rule (greedy, or speculative sampling),
// or a replayed acceptance source (acceptance_source.h) along a chain or a tree's path.
// The rules themselves are verify.h's.
#pragma once
#include <memory>
#include <span>

#include "decoders/acceptance_source.h"
#include "decoders/decoder.h"
#include "decoders/drafter.h"
#include "decoders/verify.h"

namespace specsweep {

// What a step hands its verifier: the draft, the target's rows over [last, draft...]
// ([kd+1][vocab]), the loop's random source and, under a replayed source, its stream and
// the step's recorded tree (null: none).
struct StepToVerify {
  const DraftBlock& draft;
  std::span<const float> target_logits;
  Rng& rng;
  AcceptanceReplay* replay;
  const TreeStep* recorded;
};

class Verifier {
 public:
  virtual ~Verifier() = default;
  virtual Verdict Verify(const StepToVerify& s) const = 0;
};

// The verifier of a decoder's options. `rule` is the test hook of VerifySampling.
std::unique_ptr<Verifier> MakeVerifier(const DecoderOptions& o, int vocab, AcceptRule rule);

// A replayed step's accepted path through the tree `d`: the recorded path (its nodes the
// step holds), or the first-child path; cut at a count drawn from `replay`.
std::vector<int> ReplayedPath(const DraftBlock& d, const TreeStep* recorded, AcceptanceReplay& replay);

}  // namespace specsweep
