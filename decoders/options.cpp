// The decoder options' names and their validation against a target, checked once when a
// decoder is built.
#include <algorithm>

#include <fmt/format.h>

#include "decoders/sampler.h"
#include "decoders/speculative.h"
#include "base/error.h"
#include "base/suggest.h"

namespace specsweep {

int DefaultK(const DraftSpec& d) {
  constexpr int kMax = 1024;  // tree_budget's range
  if (d.tree_budget() > 0) return std::min(d.tree_budget(), kMax);
  if (const auto* la = d.get<LookaheadDraft>())
    return std::min(kMax, LookaheadWindowNodes(la->window, la->ngram) + la->candidates * (la->ngram - 1));
  if (d.branching().empty()) return DecoderOptions{}.k;
  int nodes = 0, level = 1;  // a static tree: the nodes of every depth
  for (int b : d.branching()) {
    level = std::min(kMax, level * b);
    nodes = std::min(kMax, nodes + level);
  }
  return nodes;
}

void ValidateSpeculativeOptions(const LoadedModel& target, const DecoderOptions& o) {
  if (!target.model) Fail("decoder: target: no model loaded");
  const int ctx = target.model->config.max_seq_len;
  if (o.k <= 0 || o.k >= ctx) Fail("decoder: k: must be in [1, {}] (context {}), got {}", ctx - 1, ctx, o.k);
  if (o.draft.tree_budget() > o.k)
    Fail(
        "decoder: k: {} is below tree_budget {} of draft {}: every step's tree would be cut to {} nodes (give k >= "
        "{}, or leave k out: the budget sets it)",
        o.k, o.draft.tree_budget(), o.draft.Label(), o.k, o.draft.tree_budget());
  if (!(o.draft_p_min > 0.0f && o.draft_p_min < 1.0f))
    Fail("decoder: draft_p_min: must be in (0, 1), got {}", o.draft_p_min);
  if (o.max_new_tokens < 0) Fail("decoder: max_new_tokens: must be >= 0, got {}", o.max_new_tokens);
  if (o.draft.IsTree() && o.k_policy != KPolicy::Constant)
    Fail("decoder: k_policy: a token tree's shape is set by its draft ({}); use constant (K caps its nodes)",
         o.draft.Label());
  ValidateSampling(o.sampling, "decoder");
  // A replayed trace drafts its recorded K's: k bounds them (caches, cost model).
  const AcceptanceSource& a = o.acceptance_source;
  if (o.draft.IsTree() && a.replayed() && o.draft.ModelFree())
    Fail(
        "decoder: acceptance_source: {} replays a draft model's token trees; {} has no model and needs measured "
        "acceptance",
        a.Label(), o.draft.Label());
  if (o.draft.IsTree() && a.replayed() && a.kind != AcceptanceSource::Kind::Trace && o.draft.branching().empty())
    Fail(
        "decoder: acceptance_source: {} applies along a static tree's first-child path; a dynamic tree ({}) takes "
        "its shape from its draft's confidence, which a replay cannot declare: replay a trace of a real dynamic "
        "tree (trace=...)",
        a.Label(), o.draft.Label());
  if (a.kind == AcceptanceSource::Kind::Trace && a.traces) {
    bool trees = false;
    int k_max = 0;
    for (auto& t : *a.traces)
      for (auto& s : t) {
        trees |= !s.tree.ranks.empty();
        k_max = std::max(k_max, s.k);
      }
    if (trees != o.draft.IsTree())
      Fail("decoder: acceptance_source: the trace {} records {}; replay it on {}", a.trace,
           trees ? "token trees" : "chains", trees ? "the token tree draft it was recorded with" : "a chain draft");
    if (k_max > o.k)
      Fail("decoder: k: the trace {} drafts up to {} tokens a step; k must be at least that, got {}", a.trace, k_max,
           o.k);
  }
}

DecoderKind ParseDecoderKind(std::string_view s, std::string_view what) {
  if (s == "ar" || s == "autoregressive") return DecoderKind::Autoregressive;
  if (s == "speculative" || s == "assisted" || s == "self-spec") return DecoderKind::Speculative;
  Fail("{}: unknown decoder '{}'{} (expected ar, speculative, or its aliases assisted, self-spec)", what, s,
       DidYouMean(s, {"ar", "autoregressive", "speculative", "assisted", "self-spec"}));
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
    case DecoderKind::Speculative: return "speculative";
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

std::string KLabel(int k, KPolicy p) {
  switch (p) {
    case KPolicy::Constant: return fmt::format("k={}", k);
    case KPolicy::Heuristic: return fmt::format("k0={} heuristic", k);
    case KPolicy::Threshold:
    case KPolicy::Adaptive: return fmt::format("k<={} {}", k, KPolicyName(p));
  }
  return fmt::format("k={} {}", k, KPolicyName(p));
}

}  // namespace specsweep
