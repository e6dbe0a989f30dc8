// Options -> decoder: resolves the draft (separate model, early exit, quantized copy,
// prompt lookup, or a separate model with another tokenizer) into a drafter.
#include <memory>

#include "decoders/speculative.h"
#include "models/error.h"
#include "models/tokenizer.h"

namespace specsweep {
namespace {

// Applies draft_quant / draft_layers to a draft model. Quantizing is done here, once,
// at load time; the unquantized model is shared, not copied.
DraftSpec ResolveDraft(const LoadedModel& d, const DecoderOptions& o, const std::string& name) {
  DraftSpec spec;
  spec.layers = o.draft_layers;
  spec.name = name;
  if (o.draft_quant) {
    spec.model = std::make_shared<const Model>(QuantizeModel(*d.model, *o.draft_quant));
    spec.name += fmt::format("@{}", QTypeName(*o.draft_quant));
  } else {
    spec.model = d.model;
  }
  if (o.draft_layers > 0) spec.name += fmt::format("[:{}]", o.draft_layers);
  return spec;
}

void CheckLayers(const LoadedModel& d, const DecoderOptions& o, const std::string& name) {
  // Checked before quantizing so a bad --draft-layers fails fast.
  const int n = d.model->config.n_layers;
  if (o.draft_layers < 0 || o.draft_layers > n)
    Fail("decoder: draft_layers: must be in [1, {}] for draft '{}', got {}", n, name, o.draft_layers);
}

// Prompt lookup has no model and no confidence: model options and the policies that
// read the draft's top probability do not apply.
std::unique_ptr<Decoder> MakeLookupDecoder(const LoadedModel& target, const DecoderOptions& o) {
  ValidateSpeculativeOptions(target, o);
  if (!o.draft_model.empty() || o.draft_layers != 0 || o.draft_quant)
    Fail("decoder: draft: lookup drafts without a model; drop --draft, --draft-layers and --draft-quant");
  if (o.k_policy == KPolicy::Threshold || o.k_policy == KPolicy::Adaptive)
    Fail("decoder: k_policy: {} reads the draft's probabilities, which a lookup draft does not have "
         "(use constant or heuristic)", KPolicyName(o.k_policy));
  if (o.min_ngram < 1 || o.min_ngram > 64) Fail("decoder: min_ngram: must be in [1, 64], got {}", o.min_ngram);
  if (o.max_ngram < o.min_ngram || o.max_ngram > 64)
    Fail("decoder: max_ngram: must be in [min_ngram = {}, 64], got {}", o.min_ngram, o.max_ngram);
  return MakeSpeculativeDecoder(target, MakeLookupDrafter(o.max_ngram, o.min_ngram), o);
}

// Same vocabulary: the same token table when both have tokenizers (equal sizes are not
// enough: the draft's ids must mean the target's tokens), else the same size.
bool SharesVocabulary(const LoadedModel& a, const LoadedModel& b) {
  if (a.model->config.vocab_size != b.model->config.vocab_size) return false;
  return !a.tokenizer || !b.tokenizer || SameVocabulary(*a.tokenizer, *b.tokenizer);
}

}  // namespace

std::unique_ptr<Decoder> MakeDecoder(const LoadedModel& target, const DecoderOptions& o,
                                     const std::string& models_dir) {
  if (!target.model) Fail("decoder: target: no model loaded");
  switch (o.kind) {
    case DecoderKind::Autoregressive:
      return MakeAutoregressiveDecoder(target, o);
    case DecoderKind::Assisted: {
      if (o.draft_lookup) return MakeLookupDecoder(target, o);
      ValidateSpeculativeOptions(target, o);
      if (!o.draft_model.empty()) {
        LoadedModel d = LoadModel(o.draft_model, models_dir);
        d.name = o.draft_model;
        return MakeDecoder(target, o, d);
      }
      if (o.draft_layers == 0 && !o.draft_quant)
        Fail("decoder: draft: assisted decoding needs a draft (--draft MODEL, --draft-layers L or --draft-quant Q)");
      CheckLayers(target, o, target.name);
      return MakeSpeculativeDecoder(target, ResolveDraft(target, o, target.name), o);
    }
    case DecoderKind::SelfSpec: {
      if (o.draft_lookup)
        Fail("decoder: draft: self-spec drafts with the target's own weights; use --decoder assisted for a lookup draft");
      if (!o.draft_model.empty())
        Fail("decoder: draft: self-spec drafts with the target's own weights; use --decoder assisted for --draft");
      ValidateSpeculativeOptions(target, o);
      DecoderOptions so = o;
      if (!so.draft_quant) so.draft_quant = QType::Q4_0;
      CheckLayers(target, so, target.name);
      return MakeSpeculativeDecoder(target, ResolveDraft(target, so, target.name), so);
    }
  }
  Fail("decoder: kind: unknown value {}", static_cast<int>(o.kind));
}

std::unique_ptr<Decoder> MakeDecoder(const LoadedModel& target, const DecoderOptions& o,
                                     const LoadedModel& draft) {
  if (!target.model) Fail("decoder: target: no model loaded");
  if (!draft.model) Fail("decoder: draft: no model loaded");
  if (o.kind != DecoderKind::Assisted)
    Fail("decoder: kind: a separate draft model needs the assisted decoder, got {}", DecoderKindName(o.kind));
  if (o.draft_lookup) Fail("decoder: draft: a lookup draft has no model; do not pass a draft model with it");
  ValidateSpeculativeOptions(target, o);
  const std::string name = draft.name.empty() ? draft.model->source.path : draft.name;
  if (SharesVocabulary(target, draft)) {
    CheckLayers(draft, o, name);
    return MakeSpeculativeDecoder(target, ResolveDraft(draft, o, name), o);
  }
  if (!target.tokenizer || !draft.tokenizer)
    Fail("decoder: draft: vocabulary mismatch: draft '{}' has vocab_size {}, target '{}' has {} (and no "
         "tokenizer to bridge them)", name, draft.model->config.vocab_size, target.name,
         target.model->config.vocab_size);
  if (!o.sampling.greedy())
    Fail("decoder: temperature: draft '{}' has another tokenizer than target '{}'; cross-tokenizer drafts "
         "support greedy decoding only (temperature 0)", name, target.name);
  CheckLayers(draft, o, name);
  DraftSpec spec = ResolveDraft(draft, o, name);
  return MakeSpeculativeDecoder(target,
                                MakeCrossTokenizerDrafter(std::move(spec.model), spec.layers, spec.name,
                                                          o.kv_type, target.tokenizer, draft.tokenizer),
                                o);
}

DecoderKind ParseDecoderKind(std::string_view s) {
  if (s == "ar" || s == "autoregressive") return DecoderKind::Autoregressive;
  if (s == "assisted") return DecoderKind::Assisted;
  if (s == "self-spec") return DecoderKind::SelfSpec;
  Fail("decoder: kind: unknown decoder '{}' (expected ar, assisted, self-spec)", s);
}

KPolicy ParseKPolicy(std::string_view s) {
  if (s == "constant") return KPolicy::Constant;
  if (s == "heuristic") return KPolicy::Heuristic;
  if (s == "threshold") return KPolicy::Threshold;
  if (s == "adaptive") return KPolicy::Adaptive;
  Fail("decoder: k_policy: unknown policy '{}' (expected constant, heuristic, threshold, adaptive)", s);
}

std::string_view DecoderKindName(DecoderKind k) {
  switch (k) {
    case DecoderKind::Autoregressive: return "ar";
    case DecoderKind::Assisted: return "assisted";
    case DecoderKind::SelfSpec: return "self-spec";
  }
  return "?";
}

std::string_view KPolicyName(KPolicy p) {
  switch (p) {
    case KPolicy::Constant: return "constant";
    case KPolicy::Heuristic: return "heuristic";
    case KPolicy::Threshold: return "threshold";
    case KPolicy::Adaptive: return "adaptive";
  }
  return "?";
}

}  // namespace specsweep
