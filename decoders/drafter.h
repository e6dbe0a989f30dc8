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
//   token trees without a model: token recycling, lookahead decoding (a Jacobi window
//                         in the verification pass), REST retrieval  -- recycling_, lookahead_,
//                                                                       rest_drafter.cpp
#pragma once
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "decoders/decoder.h"
#include "decoders/draft_policy.h"
#include "decoders/sampler.h"

namespace specsweep {

// One step's proposal: a chain, or a token tree verified in one target pass.
struct DraftBlock {
  std::vector<int> tokens;  // [n <= K] target-vocabulary ids
  // [n] empty: a chain. A tree: token i follows token parents[i] < i, or the sequence's
  // last token when -1 (verify.h DraftView).
  std::vector<int> parents;
  // [n][vocab] the distribution q each token was sampled from (sampling mode; siblings
  // i.i.d. from one q). Empty: the proposal is deterministic given the sequence (q
  // one-hot at each token), which verification handles without materialising it.
  std::vector<float> probs;
  // A draft model's tree (recorded per step, TreeStep): [n] each node's rank among its
  // parent's candidate children, and the nodes each tree call ran. Empty otherwise.
  std::vector<int> ranks, expanded;
  void Clear() {
    tokens.clear();
    parents.clear();
    probs.clear();
    ranks.clear();
    expanded.clear();
  }
};

// A drafter's state for one run of generations (the caller's, through
// Decoder::NewState): what Begin sets up and the steps read and update -- a draft
// model's cache, the tables of a training-free tree, a dynamic tree's calibration. The
// drafter itself is const once built. Each drafter casts it back to its own kind.
struct DraftState {
  virtual ~DraftState() = default;
};

// What one step asks of the drafter.
struct DraftRequest {
  std::span<const int> seq;  // prompt + tokens emitted so far (target ids)
  int k = 0;                 // propose at most k >= 1 tokens
  DraftPolicy& policy;       // may stop it early (draft confidence)
  // Acceptance replay of a tree trace: propose this recorded tree (at most k nodes),
  // grown from the drafter's own model with the recorded draft calls; null otherwise.
  // Only a model's token tree is replayed so (ValidateSpeculativeOptions).
  const TreeStep* recorded = nullptr;
};

// One sequence's part of a batched draft step (Drafter::ProposeBatch): Propose's
// arguments, its own state, random source, block and statistics.
struct DraftLane {
  DraftState& state;
  DraftRequest request;  // request.k >= 1
  Rng& rng;
  DraftBlock& out;
  GenerationStats& stats;
};

// Cost-model inputs of a draft (CallCosts): a chain's [2] median times of a draft call
// of 1 and of 2 positions (the catch-up batch); a model's token tree [n_max] catch-ups
// over n = 1..n_max positions (draft_s) and tree calls over n nodes (draft_tree_s).
struct DraftCallCosts {
  std::vector<double> draft_s, draft_tree_s;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual const std::string& name() const = 0;
  // Longest sequence (prompt + generated, target positions) the drafter can follow.
  virtual int context() const { return std::numeric_limits<int>::max(); }
  // A fresh run's state (a stateless drafter: an empty one).
  virtual std::unique_ptr<DraftState> NewState() const { return std::make_unique<DraftState>(); }
  // Start of a generation. `prompt` holds target ids; the loop times this as prefill.
  virtual void Begin(DraftState& s, std::span<const int> prompt) const {}
  // Proposes up to r.k tokens continuing r.seq into `out`; draft Forward calls, and any
  // re-tokenization time, go into `st`. `rng` is the loop's, shared with verification.
  virtual void Propose(DraftState& s, const DraftRequest& r, Rng& rng, DraftBlock& out, GenerationStats& st) const = 0;
  // Begin for the sequences of a batch (Decoder::GenerateBatch), each with its own state.
  // Default: Begin one after another; a draft model prefills them in one batched call.
  virtual void BeginBatch(std::span<DraftState* const> states, std::span<const std::vector<int>> prompts) const {
    for (size_t i = 0; i < states.size(); ++i) Begin(*states[i], prompts[i]);
  }
  // Propose for every lane of a batched step. Returns the draft Forward calls it ran, a
  // call over several sequences counted once (each lane's stats count the calls it took
  // part in). Default: Propose lane after lane (lookup and the other model-free drafts,
  // whose search is per sequence); a draft model's chain runs each draft position of
  // every still-drafting lane in one ForwardBatch.
  virtual int ProposeBatch(std::span<const DraftLane> lanes) const {
    int calls = 0;
    for (const DraftLane& l : lanes) {
      const int before = l.stats.draft_calls;
      Propose(l.state, l.request, l.rng, l.out, l.stats);
      calls += l.stats.draft_calls - before;
    }
    return calls;
  }
  // After verification, before Rollback: the target's logits [n][vocab] at the verified
  // inputs [n] (the last token, then the draft's nodes) -- token recycling reads them.
  virtual void Observe(DraftState& s, std::span<const int> inputs, std::span<const float> logits, int vocab) const {}
  // After the step's emission (seq: the sequence now): the target keeps its first `keep`
  // positions (seq[0..keep)); the drafter drops what it drafted past them.
  virtual void Rollback(DraftState& s, std::span<const int> seq, int keep) const {}
  // Cost-model inputs right after `prompt` (target ids), `reps` calls each; a tree's
  // calls hold up to n_tree_max positions (0: a chain). Empty for a drafter without a
  // model, whose cost is what the loop measures. `s`: the run's (its calibration).
  // batch > 1: each call runs `batch` sequences (T_d(B)); a drafter that drafts a batch's
  // sequences one after another (trees, cross-tokenizer) prices B calls of one.
  virtual DraftCallCosts MeasureCallCosts(const DraftState& s, std::span<const int> prompt, int n_tree_max, int reps,
                                          int batch = 1) const {
    return {};
  }
  // Decoder::draft_types.
  virtual std::map<std::string, int> matrix_types() const { return {}; }
};

struct TreeShape;

// Same-vocabulary draft model: its first `layers` blocks (0: all). `sampling` decides
// greedy argmax or sampling from q. A tree shape makes it propose token trees.
std::unique_ptr<Drafter> MakeModelDrafter(std::shared_ptr<const Model> model, int layers, std::string name,
                                          KvType kv_type, const SamplingParams& sampling, const TreeShape& tree,
                                          const Runtime& rt = {});

// Prompt lookup (Saxena 2023; HF prompt_lookup_num_tokens; llama.cpp lookup): for n =
// max_ngram down to min_ngram, find the most recent earlier occurrence of seq's last n
// tokens and propose the (up to K) tokens that followed it.
// tree_budget > 0: every matching continuation, merged into a trie of at most
// min(K, tree_budget) nodes (LookupTree, draft_tree.h).
std::unique_ptr<Drafter> MakeLookupDrafter(int max_ngram, int min_ngram, int tree_budget = 0);

// The lookup search alone, for tests: the proposal for `seq` (empty when no n-gram of
// length min_ngram..max_ngram recurs).
std::vector<int> LookupProposal(std::span<const int> seq, int k, int max_ngram, int min_ngram);

// Token recycling (recycling_drafter.cpp): a tree of shape `branching` read out of the
// top-max(branching) tokens the target ranked after each token it has verified.
std::unique_ptr<Drafter> MakeRecyclingDrafter(std::vector<int> branching);

// Lookahead decoding (lookahead_drafter.cpp): a Jacobi window of `window` columns and
// ngram-1 levels run inside the target's verification pass, and the <= `candidates`
// n-grams of its trajectory that continue the last token. K must hold the window:
// LookaheadWindowNodes(window, ngram) nodes a step, plus the candidates.
std::unique_ptr<Drafter> MakeLookaheadDrafter(int window, int ngram, int candidates);
int LookaheadWindowNodes(int window, int ngram);

// REST retrieval (rest_drafter.cpp): a trie of the continuations of seq's longest suffix
// found in `corpus` (target ids; documents separated by -1), cut to its tree_budget most
// frequent nodes. `label` names the corpus in the drafter's name.
std::unique_ptr<Drafter> MakeRestDrafter(std::vector<int> corpus, int tree_budget, const std::string& label);
// A text file as a REST corpus: each non-blank line a document, in the target's tokens.
std::vector<int> ReadRestCorpus(const std::string& path, const Tokenizer& tokenizer);

// Draft model with another tokenizer (greedy only). `target_tok`/`draft_tok` bridge
// the two vocabularies through text.
std::unique_ptr<Drafter> MakeCrossTokenizerDrafter(std::shared_ptr<const Model> model, int layers, std::string name,
                                                   KvType kv_type, std::shared_ptr<const Tokenizer> target_tok,
                                                   std::shared_ptr<const Tokenizer> draft_tok, const Runtime& rt = {});

}  // namespace specsweep
