// Options -> decoder: resolves the draft spec (separate model, early exit, quantized
// copy, prompt lookup, or a separate model with another tokenizer) into a drafter of
// the one speculative loop.
#include <algorithm>
#include <map>
#include <memory>

#include "decoders/draft_vocabulary.h"
#include "decoders/speculative.h"
#include "base/error.h"
#include "models/tokenizer.h"

namespace specsweep {
namespace {

// The quantized copy a draft runs: the caller's (DecoderEnv::drafts, which may share one
// among decoders), else this decoder's own.
std::shared_ptr<const Model> QuantizedDraft(const std::shared_ptr<const Model>& m, QType t, const DecoderEnv& env) {
  if (env.drafts) return env.drafts->Quantized(m, t);
  return std::make_shared<const Model>(QuantizeModel(*m, t));
}

// The draft model `name` from the caller (DecoderEnv::drafts).
LoadedModel DraftFile(const std::string& name, const DecoderEnv& env) {
  if (!env.drafts) Fail("decoder: draft: '{}': no draft models given to load it from", name);
  LoadedModel d = env.drafts->Load(name);
  d.name = name;
  return d;
}

// Applies draft.quant / draft.layers to a draft model. Quantizing is done here, once,
// at load time; the unquantized model is shared, not copied.
ModelDraft ResolveDraft(const LoadedModel& d, const DecoderOptions& o, const std::string& name, const DecoderEnv& env) {
  ModelDraft spec;
  spec.layers = o.draft.layers();
  spec.name = name;
  if (const std::optional<QType> q = o.draft.quant()) {
    spec.model = QuantizedDraft(d.model, *q, env);
    spec.name += fmt::format("@{}", QTypeName(*q));
  } else {
    spec.model = d.model;
  }
  if (spec.layers > 0) spec.name += fmt::format("[:{}]", spec.layers);
  return spec;
}

void CheckLayers(const LoadedModel& d, const DecoderOptions& o, const std::string& name) {
  // Checked before quantizing so a bad --draft-layers fails fast.
  const int n = d.model->config.n_layers;
  if (o.draft.layers() < 0 || o.draft.layers() > n)
    Fail("decoder: draft.layers: must be in [1, {}] for draft '{}', got {}", n, name, o.draft.layers());
}

// Lookup, recycling, lookahead and REST: no model, so the policies that read a draft's
// probabilities do not apply (trees: ValidateSpeculativeOptions asks for constant).
std::unique_ptr<Decoder> MakeModelFreeDecoder(const LoadedModel& target, const DecoderOptions& o, const Runtime& rt) {
  const DraftSpec& d = o.draft;
  if (const auto* lookup = d.get<LookupDraft>()) {
    if (o.k_policy == KPolicy::Threshold || o.k_policy == KPolicy::Adaptive)
      Fail(
          "decoder: k_policy: {} reads the draft's probabilities, which a lookup draft does not have "
          "(use constant or heuristic)",
          KPolicyName(o.k_policy));
    return MakeSpeculativeDecoder(target, MakeLookupDrafter(lookup->max_ngram, lookup->min_ngram, d.tree_budget()), o,
                                  AcceptRule::Exact, rt);
  }
  if (d.get<RecyclingDraft>())
    return MakeSpeculativeDecoder(target, MakeRecyclingDrafter(d.branching()), o, AcceptRule::Exact, rt);
  if (const auto* la = d.get<LookaheadDraft>()) {
    const int window_nodes = LookaheadWindowNodes(la->window, la->ngram);
    if (o.k < window_nodes)
      Fail(
          "decoder: k: {} verifies a window of {} nodes every step (plus its candidates); k must be at least {}, "
          "got {}",
          d.Label(), window_nodes, window_nodes, o.k);
    return MakeSpeculativeDecoder(target, MakeLookaheadDrafter(la->window, la->ngram, la->candidates), o,
                                  AcceptRule::Exact, rt);
  }
  const RestDraft& rest = std::get<RestDraft>(d.kind());
  if (!target.tokenizer)
    Fail("decoder: draft: {}: the corpus is tokenized with the target's tokenizer, and '{}' has none", d.Label(),
         target.name);
  return MakeSpeculativeDecoder(target,
                                MakeRestDrafter(ReadRestCorpus(rest.corpus, *target.tokenizer), d.tree_budget(),
                                                rest.corpus),
                                o, AcceptRule::Exact, rt);
}

// Same vocabulary: the same token table when both have tokenizers (equal sizes are not
// enough: the draft's ids must mean the target's tokens), else the same size.
bool SharesVocabulary(const LoadedModel& a, const LoadedModel& b) {
  if (a.model->config.vocab_size != b.model->config.vocab_size) return false;
  return !a.tokenizer || !b.tokenizer || SameVocabulary(*a.tokenizer, *b.tokenizer);
}

// A separate draft model, the options validated: same vocabulary, or bridged through text.
std::unique_ptr<Decoder> MakeSeparateDraftDecoder(const LoadedModel& target, const DecoderOptions& o,
                                                  const LoadedModel& draft, const DecoderEnv& env) {
  const std::string name = draft.name.empty() ? draft.model->source.path : draft.name;
  if (SharesVocabulary(target, draft)) {
    CheckLayers(draft, o, name);
    return MakeSpeculativeDecoder(target, ResolveDraft(draft, o, name, env), o, AcceptRule::Exact, env.runtime);
  }
  if (!target.tokenizer || !draft.tokenizer)
    Fail(
        "decoder: draft: vocabulary mismatch: draft '{}' has vocab_size {}, target '{}' has {} (and no "
        "tokenizer to bridge them)",
        name, draft.model->config.vocab_size, target.name, target.model->config.vocab_size);
  if (o.draft.IsTree())
    Fail(
        "decoder: draft: draft '{}' has another tokenizer than target '{}'; token trees need a draft with the "
        "target's vocabulary",
        name, target.name);
  if (!o.sampling.greedy())
    Fail(
        "decoder: temperature: draft '{}' has another tokenizer than target '{}'; cross-tokenizer drafts "
        "support greedy decoding only (temperature 0)",
        name, target.name);
  CheckLayers(draft, o, name);
  ModelDraft spec = ResolveDraft(draft, o, name, env);
  return MakeSpeculativeDecoder(target,
                                MakeCrossTokenizerDrafter(std::move(spec.model), spec.layers, spec.name,
                                                          o.DraftKvType(), target.tokenizer, draft.tokenizer,
                                                          env.runtime),
                                o, AcceptRule::Exact, env.runtime);
}

}  // namespace

std::unique_ptr<Decoder> MakeDecoder(const LoadedModel& target, const DecoderOptions& o, const DecoderEnv& env) {
  const Runtime& rt = env.runtime;
  if (!target.model) Fail("decoder: target: no model loaded");
  switch (o.kind) {
    case DecoderKind::Autoregressive:
      if (o.acceptance_source.replayed())
        Fail("decoder: acceptance_source: {}: only a speculative decoder accepts draft tokens",
             o.acceptance_source.Label());
      return MakeAutoregressiveDecoder(target, o, rt);
    case DecoderKind::Speculative: {
      // One loop; the draft spec (checked when it was built) picks the drafter.
      ValidateSpeculativeOptions(target, o);
      if (o.draft.ModelFree()) return MakeModelFreeDecoder(target, o, rt);
      if (!o.draft.model().empty()) return MakeSeparateDraftDecoder(target, o, DraftFile(o.draft.model(), env), env);
      if (o.draft.IsSelf())
        Fail(
            "decoder: draft: speculative decoding needs a draft (--draft-model M, --draft-layers L, --draft-quant Q "
            "or --draft-lookup)");
      CheckLayers(target, o, target.name);
      return MakeSpeculativeDecoder(target, ResolveDraft(target, o, target.name, env), o, AcceptRule::Exact, rt);
    }
  }
  Fail("decoder: kind: unknown value {}", static_cast<int>(o.kind));
}

std::unique_ptr<Decoder> MakeDecoder(const LoadedModel& target, const DecoderOptions& o, const LoadedModel& draft,
                                     const DecoderEnv& env) {
  if (!target.model) Fail("decoder: target: no model loaded");
  if (!draft.model) Fail("decoder: draft: no model loaded");
  if (o.kind != DecoderKind::Speculative)
    Fail("decoder: kind: a draft model needs the speculative decoder, got {}", DecoderKindName(o.kind));
  if (o.draft.ModelFree())
    Fail("decoder: draft: a {} draft has no model; do not pass a draft model with it", o.draft.ModelFreeName());
  ValidateSpeculativeOptions(target, o);
  return MakeSeparateDraftDecoder(target, o, draft, env);
}

bool DraftSharesVocabulary(const LoadedModel& target, const LoadedModel& draft) {
  return SharesVocabulary(target, draft);
}

// A decoder without a batched loop (the speculative and autoregressive decoders have one).
std::vector<GenerationResult> Decoder::GenerateBatch(std::span<const std::vector<int>>, DecoderState&,
                                                     GenerationStats&) const {
  Fail("decoder: batch: this decoder does not decode batches of sequences");
}

}  // namespace specsweep
