// Drafters: what proposes the tokens the shared speculative loop verifies.
//
// The loop (speculative.cpp) owns the target, verification, emission and rollback; a
// drafter only answers "what might follow seq?" with up to K target-vocabulary ids and,
// when it sampled them, the distributions it sampled from:
//   ModelDrafter          a draft model with the target's vocabulary (early exit,
//                         quantized copy, separate model)            -- model_drafter.cpp
//   LookupDrafter         prompt lookup: copy what followed the last n-gram's most
//                         recent earlier occurrence; no model        -- lookup_drafter.cpp
//   CrossTokenizerDrafter a draft model with its own vocabulary, bridged through text
//                         (universal assisted generation)            -- cross_tokenizer_drafter.cpp
#pragma once
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "decoders/decoder.h"
#include "decoders/draft_policy.h"
#include "decoders/sampler.h"

namespace specsweep {

// One step's proposal.
struct DraftBlock {
  std::vector<int> tokens;   // [n <= K] target-vocabulary ids
  // [n][vocab] the distribution q each token was sampled from (sampling mode). Empty:
  // the proposal is deterministic given the sequence (q one-hot at the token), which
  // verification handles without materialising it (VerifySamplingOneHot).
  std::vector<float> probs;
  void Clear() {
    tokens.clear();
    probs.clear();
  }
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual const std::string& name() const = 0;
  // Longest sequence (prompt + generated, target positions) the drafter can follow.
  virtual int context() const { return std::numeric_limits<int>::max(); }
  // Start of a generation. `prompt` holds target ids; the loop times this as prefill.
  virtual void Begin(std::span<const int> prompt) = 0;
  // Proposes up to k >= 1 tokens continuing `seq` (prompt + tokens emitted so far).
  // The policy may stop it early (draft confidence); draft Forward calls, and any
  // re-tokenization time, go into `st`. `rng` is the loop's, shared with verification.
  virtual void Propose(std::span<const int> seq, int k, DraftPolicy& policy, Rng& rng, DraftBlock& out,
                       GenerationStats& st) = 0;
  // After verification: the target keeps its first `keep` positions (seq[0..keep)).
  virtual void Rollback(int keep) {}
  // Cost-model inputs: [2] median times of a draft Forward call of 1 and of 2 positions
  // (the catch-up batch) right after `prompt` (target ids); empty for a drafter without
  // a model, whose cost is what the loop measures.
  virtual std::vector<double> MeasureCallCosts(std::span<const int> prompt, int reps) { return {}; }
  // Decoder::draft_types.
  virtual std::map<std::string, int> matrix_types() const { return {}; }
};

// Same-vocabulary draft model: its first `layers` blocks (0: all). `sampling` decides
// greedy argmax or sampling from q.
std::unique_ptr<Drafter> MakeModelDrafter(std::shared_ptr<const Model> model, int layers, std::string name,
                                          KvType kv_type, const SamplingParams& sampling);

// Prompt lookup (Saxena 2023; HF prompt_lookup_num_tokens; llama.cpp lookup): for n =
// max_ngram down to min_ngram, find the most recent earlier occurrence of seq's last n
// tokens and propose the (up to K) tokens that followed it.
std::unique_ptr<Drafter> MakeLookupDrafter(int max_ngram, int min_ngram);

// The lookup search alone, for tests: the proposal for `seq` (empty when no n-gram of
// length min_ngram..max_ngram recurs).
std::vector<int> LookupProposal(std::span<const int> seq, int k, int max_ngram, int min_ngram);

// Draft model with another tokenizer (greedy only). `target_tok`/`draft_tok` bridge
// the two vocabularies through text.
std::unique_ptr<Drafter> MakeCrossTokenizerDrafter(std::shared_ptr<const Model> model, int layers,
                                                   std::string name, KvType kv_type,
                                                   std::shared_ptr<const Tokenizer> target_tok,
                                                   std::shared_ptr<const Tokenizer> draft_tok);

}  // namespace specsweep
