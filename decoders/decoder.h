// Public decoding API shared by the CLI and the harness.
// Owned by the decoders work; the harness calls only what is declared here.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "decoders/acceptance_source.h"
#include "decoders/draft_spec.h"
#include "models/kv_type.h"
#include "models/loader.h"
#include "quant/qtype.h"
#include "quant/runtime.h"

namespace specsweep {

struct SamplingParams {
  float temperature = 0.0f;  // <= 0: greedy (argmax)
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  uint64_t seed = 0;
  bool greedy() const { return temperature <= 0.0f; }
};

// Autoregressive, or speculative with any draft (DecoderOptions::draft); "assisted" and
// "self-spec" are names of speculative with a kind of draft (draft_spec.h).
enum class DecoderKind { Autoregressive, Speculative };
enum class KPolicy { Constant, Heuristic, Threshold, Adaptive };

struct DecoderOptions {
  DecoderKind kind = DecoderKind::Autoregressive;
  // Draft length: every step (constant), the bound (threshold, adaptive), the start
  // (heuristic, which grows past it). KLabel says which.
  int k = 4;
  KPolicy k_policy = KPolicy::Constant;
  float draft_p_min = 0.8f;  // threshold policy: stop below this top prob
  // What drafts (speculative only). Prompt lookup copies what followed the most recent
  // earlier occurrence of the last n tokens, n = max_ngram down to min_ngram (0: 3, 1).
  DraftSpec draft;
  // How many draft tokens a step accepts: measured (the real rule) or replayed
  // (acceptance_source.h; speculative only).
  AcceptanceSource acceptance_source;
  int max_new_tokens = 64;
  bool stop_at_eos = true;
  KvType kv_type = KvType::F32;  // attention cache of the target (and of the draft)
  SamplingParams sampling;
  std::optional<KvType> draft_kv_type;  // the draft model's own attention cache (none: kv_type)
  // Sequences decoded together (Decoder::GenerateBatch): each target call runs every live
  // sequence's positions in one Forward pass. 1: one sequence, Generate.
  int batch = 1;

  // The draft model's attention cache type.
  KvType DraftKvType() const { return draft_kv_type.value_or(kv_type); }
};

// One sequence of a batched generation (Decoder::GenerateBatch), as the batch's
// aggregate GenerationStats lists them in per_sequence.
struct SequenceStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  int target_calls = 0;  // the batch's token-yielding target calls this sequence took part in
  int64_t drafted = 0, accepted = 0;
  double first_token_latency_s = 0;      // batch start -> this sequence's first new token
  double mean_next_token_latency_s = 0;  // (its last emission - its first) / tokens after the first
  bool stopped_at_eos = false;
  double acceptance_rate() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
};

struct GenerationStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  // Target Forward calls that yield tokens: the prefill counts when it yields the first
  // token (autoregressive), not when it yields none (speculative: the last prompt token
  // goes with the first draft block).
  int target_calls = 0;
  int draft_calls = 0;  // draft Forward calls (including catch-up of accepted tokens)
  // Token trees of a draft model (draft_tree.h), its draft_calls by size: [n-1] = calls
  // over n positions, catch-ups (a sequence, last logits) and tree calls (n nodes below
  // the tree, every node's logits). The tree cost model prices each (docs/trees.md).
  std::vector<int64_t> draft_calls_by_size, draft_tree_calls_by_size;
  int64_t drafted = 0;                   // draft tokens proposed
  int64_t accepted = 0;                  // draft tokens accepted
  std::vector<int64_t> drafted_at_pos;   // [K_max] drafted tokens at draft position i+1
  std::vector<int64_t> accepted_at_pos;  // [K_max] accepted tokens at draft position i+1
  std::vector<int> k_per_step;           // K actually drafted in each step
  std::vector<int> accepted_per_step;    // of them accepted, each step (with k_per_step: the
                                         // acceptance trace a replay reads back)
  // Token trees of a draft model: each step's tree, how it was grown and the accepted
  // path ([steps] aligned with k_per_step), so a trace replays the trees too.
  std::vector<TreeStep> tree_per_step;
  double prefill_s = 0, draft_s = 0, verify_s = 0, other_s = 0, total_s = 0;
  // Part of draft_s (cross-tokenizer drafts only): converting text between the two
  // vocabularies (decode + re-encode windows, both directions). Per step: / target_calls.
  double retokenize_s = 0;
  // Autoregressive decoding: the Forward calls after the prefill (one per token but the
  // last) and their time, so the time outside them (sampling, the logits check,
  // statistics, the caller's output) is decode time (total - prefill) less this.
  int decode_forward_calls = 0;
  double decode_forward_s = 0;
  // Their median (one generation's; AddStats leaves it): the mean less the slow tail a
  // busy host adds, as bench-forward's median T(1) leaves it out.
  double decode_forward_median_s = 0;
  double first_token_latency_s = 0;      // prompt in -> first new token out
  double mean_next_token_latency_s = 0;  // (total - first emission) / tokens after it
  double tokens_per_s = 0;               // generated / (total - prefill)
  bool stopped_at_eos = false;           // generation ended on EOS (EOS not emitted)
  // A batched generation (GenerateBatch) aggregates its sequences here: token counts,
  // drafted/accepted and target_calls summed over the sequences (so rates and the mean
  // accepted length keep their per-sequence meaning), times the batch's wall clock,
  // tokens_per_s the batch's throughput, latencies the mean over sequences.
  int batch = 1;
  int batch_target_calls = 0;               // target Forward calls of the batch (each over its live sequences)
  int batch_draft_calls = 0;                // draft Forward calls of the batch
  std::vector<SequenceStats> per_sequence;  // [batch]; empty for a single generation

  double acceptance_rate() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
  // Tokens emitted per token-yielding target call, bonus token included (Spec-Bench/vLLM
  // convention): exactly 1 for autoregressive decoding.
  double mean_accepted_length() const { return target_calls ? double(generated_tokens) / double(target_calls) : 0.0; }
};

struct GenerationResult {
  std::vector<int> tokens;  // generated ids (prompt excluded)
  std::string text;         // decoded generated text
  GenerationStats stats;
};

// Forward-call times of a decoder's models, the inputs of the verify-cost model: each
// the median of several calls at the end of a prefilled prompt.
struct CallCosts {
  std::vector<double> target_s;      // [n_max] T_target(n) for n = 1..n_max (verify batch n)
  std::vector<double> draft_s;       // [2] T_draft(1), T_draft(2) (the catch-up batch after a
                                     // fully accepted step); empty for a decoder without one.
                                     // A model's token tree: [n_max] T_draft(n), n = 1..n_max
                                     // (n_max: the largest call its shape can make)
  std::vector<double> draft_tree_s;  // a model's token tree: [n_max] a tree call over n nodes
};

// Called with each batch of newly accepted tokens, for streaming.
using TokenCallback = std::function<void(std::span<const int> new_tokens)>;

// What a run of generations of one decoder carries from one to the next: a replayed
// acceptance source's draws (which run on across the run's generations) and the draft's
// state (its caches, a dynamic tree's calibration). The caller makes one per run
// (Decoder::NewState) and hands it to the run's Generate and MeasureCallCosts calls; the
// decoder itself is const once built.
class DecoderState {
 public:
  virtual ~DecoderState() = default;
};

// A ready-to-run decoder: the target plus whatever draft the options describe.
// Building it validates the options (K, draft layers, threshold, n-gram range, the
// draft combinations) and throws Error with a one-line message. A separate draft whose
// tokenizer differs from the target's drafts through text (greedy only).
class Decoder {
 public:
  virtual ~Decoder() = default;
  // A fresh run's state.
  virtual std::unique_ptr<DecoderState> NewState() const { return std::make_unique<DecoderState>(); }
  // One generation of the run `state` (from this decoder's NewState).
  virtual GenerationResult Generate(std::span<const int> prompt, DecoderState& state,
                                    const TokenCallback& cb = {}) const = 0;
  // One generation in a run of its own (a fresh state).
  GenerationResult Generate(std::span<const int> prompt, const TokenCallback& cb = {}) const {
    const std::unique_ptr<DecoderState> state = NewState();
    return Generate(prompt, *state, cb);
  }
  // B = prompts.size() generations decoded together (options().batch is the usual B):
  // one target Forward call per step over every live sequence (ForwardBatch), each
  // sequence accepting on its own; a finished sequence leaves the batch. Each result's
  // tokens are those its sequence would get alone (greedy: bit-identical; sampling: the
  // same distribution, drawn from its own stream seeded from sampling.seed and its index).
  // `aggregate` gets the batch's statistics (GenerationStats' batch fields). Sequence 0
  // draws from sampling.seed itself (a batch of one is Generate); a replayed alpha or
  // positions source is the run's one stream, drawn by the live sequences in order each
  // step; a trace gives sequence i the run's next generation g + i (speculative_batch.cpp).
  // The base class throws Error (no batched loop).
  virtual std::vector<GenerationResult> GenerateBatch(std::span<const std::vector<int>> prompts, DecoderState& state,
                                                      GenerationStats& aggregate) const;
  virtual const DecoderOptions& options() const = 0;
  // Times target calls of n = 1..target_n_max positions (none for 0) and the draft's
  // calls, `reps` times each, at the end of `prompt`; caches of its own. `state`: the
  // run's (a dynamic tree's calls are priced at its latest calibration).
  // batch > 1: every call runs `batch` sequences of that many positions each (the
  // prompt's copies), the target's and the draft's: T(B x n) and T_d(B).
  virtual CallCosts MeasureCallCosts(std::span<const int> prompt, int target_n_max, int reps, const DecoderState& state,
                                     int batch = 1) const = 0;
  // What the draft's matrices are stored as (MatrixTypeCounts of the blocks it runs);
  // {} without a draft model.
  virtual std::map<std::string, int> draft_types() const { return {}; }
};

// Where a decoder's draft models come from: the model a draft names
// (DraftSpec::model) and the quantized copy of a model (DraftSpec::quant). The caller
// decides what is loaded, kept and shared (the harness shares one draft among a group's
// decoders: harness/measure/model_store.h).
class DraftModels {
 public:
  virtual ~DraftModels() = default;
  virtual LoadedModel Load(const std::string& name) const = 0;
  virtual std::shared_ptr<const Model> Quantized(const std::shared_ptr<const Model>& m, QType t) const = 0;
};

// What a decoder runs on, given by the caller at construction.
struct DecoderEnv {
  Runtime runtime;  // the threads and kernels of every Forward call (quant/runtime.h)
  // nullptr: a draft named by file is an Error, and each decoder quantizes its own copy.
  const DraftModels* drafts = nullptr;
};

std::unique_ptr<Decoder> MakeDecoder(const LoadedModel& target, const DecoderOptions& options,
                                     const DecoderEnv& env = {});
// Speculative decoding with an already-loaded draft model (options.draft.model is
// ignored; draft.layers/draft.quant still apply to it). Same validation as above; a draft with
// another vocabulary needs both tokenizers.
std::unique_ptr<Decoder> MakeDecoder(const LoadedModel& target, const DecoderOptions& options, const LoadedModel& draft,
                                     const DecoderEnv& env = {});

// "ar" (or "autoregressive"), "speculative", or its aliases "assisted" and "self-spec"
// (whose draft ApplyDecoderAlias settles). Error "<what>: unknown decoder 'x' (did you
// mean ...)".
DecoderKind ParseDecoderKind(std::string_view s, std::string_view what = "decoder");
KPolicy ParseKPolicy(std::string_view s);         // "constant", "heuristic", "threshold", "adaptive"
std::string_view DecoderKindName(DecoderKind k);  // "ar", "speculative"
std::string_view KPolicyName(KPolicy p);
// K when none is given (`--k`, the experiment files' `k:` left out): a token tree's size,
// so a tree draft runs whole at its defaults (a dynamic tree's tree_budget, a static
// tree's nodes, lookahead's window plus its candidates' nodes; at most 1024, tree_budget's
// range); a chain's K is DecoderOptions{}.k (4). A given K below a tree_budget is an
// error (ValidateSpeculativeOptions); below a static tree's nodes it caps them (docs/trees.md).
int DefaultK(const DraftSpec& draft);
// What K meant for a run, for tables and plots: "k=4" (constant), "k<=4 threshold",
// "k<=4 adaptive" (bounds), "k0=4 heuristic" (the start).
std::string KLabel(int k, KPolicy p);

}  // namespace specsweep
