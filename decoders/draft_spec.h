// The draft of the speculative decoder, under one name everywhere: `--draft` and its
// parts (--draft-model, --draft-layers, --draft-quant, --draft-lookup, --max-ngram,
// --min-ngram) on the command line, `draft:` in experiment files, the draft,
// draft_base and draft_quant fields of results, and DecoderOptions::draft here.
//
// A draft is one of its kinds (a variant, so two kinds at once cannot be written): the
// target itself (its first `layers` blocks and/or a copy quantized in memory), a separate
// model (same or another tokenizer; layers/quant apply to it), prompt lookup, token
// recycling, lookahead or REST (no model); plus an optional token-tree shape. Every
// DraftSpec was checked when it was built (ParseDraftSpec, DraftSpec::Make), so whoever
// holds one need not check it again. "assisted" and "self-spec" are not other decoders
// but names of two kinds of draft (ApplyDecoderAlias).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "quant/qtype.h"

namespace specsweep {

// The target drafting for itself: early exit after `layers` blocks (0 = all) and/or its
// weights quantized in memory. Neither ("self") is no draft (DraftSpec::IsSelf).
struct TargetDraft {
  int layers = 0;
  std::optional<QType> quant;
};
// A separate draft model (a folder in the models dir, or a path); layers/quant apply to it.
struct SeparateDraft {
  std::string model;
  int layers = 0;
  std::optional<QType> quant;
};
// Prompt lookup (n-gram copy): n = max_ngram down to min_ngram.
struct LookupDraft {
  int max_ngram = 3, min_ngram = 1;
};
// Token recycling: a static tree (its shape is the tree's branching, default 4,2,2,1).
struct RecyclingDraft {};
// Lookahead decoding (the target's own verification pass runs its Jacobi window): window
// W, n-gram size N, at most `candidates` G n-grams verified a step. Never a DraftTree.
struct LookaheadDraft {
  int window = 5, ngram = 3, candidates = 5;
};
// REST retrieval: the datastore's text file, tokenized with the target's tokenizer; the
// tree is its tree_budget most frequent continuation nodes (default 16).
struct RestDraft {
  std::string corpus;
};

// Token trees (docs/trees.md), verified in one target pass: a static tree with
// `branching` children per node at depth 1, 2, ... ("branching=4,2,2,1"), or a dynamic
// tree of the `budget` nodes of highest cumulative draft probability (EAGLE-2; lookup:
// every matching continuation in a trie of `budget` nodes). K still caps a step's nodes.
class DraftTree {
 public:
  static DraftTree Static(std::vector<int> branching) { return DraftTree(std::move(branching), 0); }
  static DraftTree Dynamic(int budget) { return DraftTree({}, budget); }
  // Static when `branching` is given, else dynamic when `budget` is, else no tree.
  static std::optional<DraftTree> Of(std::vector<int> branching, int budget) {
    if (!branching.empty()) return Static(std::move(branching));
    return budget > 0 ? std::optional(Dynamic(budget)) : std::nullopt;
  }
  const std::vector<int>& branching() const { return branching_; }  // empty: dynamic
  int budget() const { return budget_; }                            // 0: static
  bool operator==(const DraftTree&) const = default;

 private:
  DraftTree(std::vector<int> b, int n) : branching_(std::move(b)), budget_(n) {}
  std::vector<int> branching_;
  int budget_ = 0;
};

// A draft's parts as written (flag by flag, key by key), unchecked; DraftSpec::FromParts
// checks and combines them. 0 / "" / empty mean "not given".
struct DraftParts {
  std::string model;
  int layers = 0;
  std::optional<QType> quant;
  bool lookup = false, recycling = false, lookahead = false, rest = false;
  int max_ngram = 0, min_ngram = 0;
  int window = 0, ngram = 0, candidates = 0;
  std::string corpus;
  std::vector<int> branching;
  int tree_budget = 0;
};

class DraftSpec {
 public:
  using Kind = std::variant<TargetDraft, SeparateDraft, LookupDraft, RecyclingDraft, LookaheadDraft, RestDraft>;

  DraftSpec() = default;  // "self"
  // Checked combination; throws Error("<what>: '<text>': ...") for one that is no draft
  // (the messages of ParseDraftSpec). Fills the defaults (lookup 3, 1; lookahead 5, 3, 5;
  // recycling 4,2,2,1; rest tree_budget 16).
  static DraftSpec FromParts(DraftParts parts, std::string_view what, std::string_view text);
  static DraftSpec Make(Kind kind, std::optional<DraftTree> tree = std::nullopt, std::string_view what = "draft");

  const Kind& kind() const { return kind_; }
  template <class T>
  const T* get() const {
    return std::get_if<T>(&kind_);
  }
  const std::optional<DraftTree>& tree() const { return tree_; }

  // Canonical text, also the accepted input syntax: "self", "q4_0", "layers=2",
  // "layers=2+q4_0", "model=tinystories-260k", "model=x+q8_0",
  // "lookup+max_ngram=3+min_ngram=1" (input: "lookup" alone means these defaults),
  // trees "q4_0+branching=4,2,2,1", "q4_0+tree_budget=16", "lookup+...+tree_budget=16",
  // "recycling+branching=4,2,2,1" (input: "recycling" alone means this shape),
  // "lookahead+window=5+ngram=3+candidates=5" (input: "lookahead" alone means these),
  // "rest+corpus=PATH+tree_budget=16" (PATH without '+'; tree_budget defaults to 16).
  std::string Label() const;
  // Label without the quantization (the draft's architecture, tree included): "self",
  // "layers=2", "layers=2+tree_budget=16", ...
  std::string BaseLabel() const;
  std::string TreeLabel() const;  // "+branching=4,2,2,1", "+tree_budget=16" or ""
  // "self": the target unchanged, which cannot draft for itself.
  bool IsSelf() const;
  // A draft without a model: lookup, recycling, lookahead, rest.
  bool ModelFree() const;
  bool IsTree() const { return tree_.has_value() || get<LookaheadDraft>(); }
  // "lookup", "recycling", "lookahead", "rest"; "" for a model draft.
  std::string_view ModelFreeName() const;

  // What a model draft reads: the separate model ("" = the target), early exit (0 = all
  // blocks), in-memory quantization; "", 0, none for a model-free draft.
  const std::string& model() const;
  int layers() const;
  std::optional<QType> quant() const;
  // The tree shape: branching (empty: none or dynamic), tree_budget (0: none or static).
  const std::vector<int>& branching() const;
  int tree_budget() const;

  // Copies with one part changed, checked like Make (`what` names the draft in errors).
  DraftSpec WithQuant(std::optional<QType> q) const;  // a model draft's quant type
  DraftSpec WithTree(std::optional<DraftTree> tree, std::string_view what = "draft") const;
  DraftSpec WithNgrams(int max_ngram, int min_ngram, std::string_view what = "draft") const;  // lookup

  bool operator==(const DraftSpec& o) const { return Label() == o.Label(); }

 private:
  DraftParts Parts() const;
  Kind kind_;
  std::optional<DraftTree> tree_;
};

// Parses the text form above; throws Error("<what>: ...").
DraftSpec ParseDraftSpec(std::string_view text, std::string_view what);

// The decoder names a user may give: "ar", "speculative", and two aliases of
// speculative that name a kind of draft:
//   assisted   a separate draft model (--draft-model; its layers and quant may be set);
//              no lookup
//   self-spec  the target's own weights quantized in memory (q4_0 unless the draft's
//              quant says otherwise); no separate model, no early exit, no lookup
// Applies the alias `decoder` to `draft` (other names leave it as is). A draft part the
// alias contradicts is an Error naming it through option(part), part one of "model",
// "layers", "quant", "lookup" (e.g. "--draft-layers" or "decoders[1].draft[0]").
void ApplyDecoderAlias(std::string_view decoder, DraftSpec& draft,
                       const std::function<std::string(std::string_view part)>& option);

}  // namespace specsweep
