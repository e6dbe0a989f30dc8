// The draft of the speculative decoder, under one name everywhere: `--draft` and its
// parts (--draft-model, --draft-layers, --draft-quant, --draft-lookup, --max-ngram,
// --min-ngram) on the command line, `draft:` in experiment files, the draft,
// draft_base and draft_quant fields of results, and DecoderOptions::draft here.
//
// A draft is the target itself (its first `layers` blocks and/or a copy quantized in
// memory), a separate model (same or another tokenizer; layers/quant apply to it), or
// prompt lookup (no model). "assisted" and "self-spec" are not other decoders but names
// of two kinds of draft (ApplyDecoderAlias).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quant/qtype.h"

namespace specsweep {

struct DraftSpec {
  std::string model;           // separate draft model ("" = the target)
  int layers = 0;              // early exit after this many blocks (0 = all)
  std::optional<QType> quant;  // draft weights quantized in memory
  bool lookup = false;         // prompt lookup (n-gram copy); excludes the three above
  bool recycling = false;      // token recycling (a tree of `branching`, no model); excludes the above
  int max_ngram = 0, min_ngram = 0;  // lookup only (0 otherwise; CheckDraftSpec: 3 and 1)
  // Lookahead decoding (no model; the target's own verification pass runs its Jacobi
  // window): window W, n-gram size N, at most `candidates` G n-grams verified a step
  // (0 otherwise; CheckDraftSpec: 5, 3, 5). Excludes everything above.
  bool lookahead = false;
  int window = 0, ngram = 0, candidates = 0;
  // REST retrieval (no model): the datastore's text file, tokenized with the target's
  // tokenizer; the tree is its tree_budget most frequent continuation nodes (default 16).
  bool rest = false;
  std::string corpus;
  // Token trees (docs/trees.md), verified in one target pass. A model draft: a static
  // tree with `branching` children per node at depth 1, 2, ... ("branching=4,2,2,1"), or
  // a dynamic tree of the tree_budget nodes of highest cumulative draft probability
  // (EAGLE-2). Lookup: every matching continuation in a trie of tree_budget nodes.
  // K still caps the nodes of a step.
  std::vector<int> branching;
  int tree_budget = 0;

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
  // "self": the target unchanged, which cannot draft for itself.
  bool IsSelf() const { return model.empty() && layers == 0 && !quant && !lookup && !recycling && !lookahead && !rest; }
  // A draft without a model: lookup, recycling, lookahead, rest.
  bool ModelFree() const { return lookup || recycling || lookahead || rest; }
  bool IsTree() const { return !branching.empty() || tree_budget > 0 || lookahead; }
  std::string TreeLabel() const;  // "+branching=4,2,2,1", "+tree_budget=16" or ""
};

// Parses the text form above; throws Error("<what>: ...").
DraftSpec ParseDraftSpec(std::string_view text, std::string_view what);
// Lookup excludes a model, layers and quantization; n-gram lengths need lookup. Fills
// the defaults (3, 1) when lookup is given without them. `text` names the draft in errors.
void CheckDraftSpec(DraftSpec& d, std::string_view what, std::string_view text);

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
