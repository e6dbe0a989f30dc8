#include "decoders/draft_spec.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/suggest.h"

namespace specsweep {
namespace {

// " (did you mean 'q4_0'?)" for a part no draft spells: a word or a quant type, or a
// misspelt key of a part that takes a value (layer=2 -> layers=2).
std::string DraftPartHint(std::string_view part) {
  if (const size_t eq = part.find('='); eq != std::string_view::npos) {
    const std::string key =
        ClosestName(part.substr(0, eq), {"layers", "model", "window", "ngram", "candidates", "corpus", "max_ngram",
                                         "min_ngram", "tree_budget", "branching"});
    return key.empty() ? "" : fmt::format(" (did you mean '{}{}'?)", key, part.substr(eq));
  }
  std::vector<std::string> words = {"self", "lookup", "recycling", "lookahead", "rest"};
  for (const QTypeTraits& t : kQTypes)
    if (CanQuantizeTo(t.type)) words.emplace_back(t.name);
  std::string lower(part);  // quant types are read in any case
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return DidYouMean(lower, words);
}

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

std::string TreeLabelOf(const DraftParts& d) {
  if (!d.branching.empty()) return fmt::format("+branching={}", fmt::join(d.branching, ","));
  return d.tree_budget > 0 ? fmt::format("+tree_budget={}", d.tree_budget) : "";
}

std::string ModelLabel(const DraftParts& d) {
  // The n-gram range is the lookup draft's architecture: tables tell variants apart.
  if (d.lookup) return fmt::format("lookup+max_ngram={}+min_ngram={}", d.max_ngram, d.min_ngram);
  if (d.recycling) return "recycling";
  if (d.lookahead) return fmt::format("lookahead+window={}+ngram={}+candidates={}", d.window, d.ngram, d.candidates);
  if (d.rest) return "rest+corpus=" + d.corpus;
  std::string s;
  if (!d.model.empty()) s = "model=" + d.model;
  if (d.layers > 0) s += fmt::format("{}layers={}", s.empty() ? "" : "+", d.layers);
  return s.empty() ? "self" : s;
}

static bool ParseInt(std::string_view s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

// Lookup excludes a model, layers and quantization; n-gram lengths need lookup; ... Fills
// the defaults (lookup 3, 1; ...). `text` names the draft in errors.
void CheckParts(DraftParts& d, std::string_view what, std::string_view text) {
  if (!d.branching.empty() && d.tree_budget)
    Fail("{}: '{}': a tree is static (branching) or dynamic (tree_budget), not both", what, text);
  if (d.lookup && !d.branching.empty())
    Fail("{}: '{}': a lookup tree holds every matching continuation; give tree_budget, not branching", what, text);
  if (d.recycling) {
    if (d.lookup || !d.model.empty() || d.layers || d.quant || d.tree_budget)
      Fail(
          "{}: '{}': a recycling draft has no model, layers, quant type, lookup or tree_budget (its shape is "
          "branching)",
          what, text);
    if (d.branching.empty()) d.branching = {4, 2, 2, 1};
  }
  if (d.lookahead) {
    if (d.lookup || d.recycling || d.rest || !d.model.empty() || d.layers || d.quant || !d.branching.empty() ||
        d.tree_budget)
      Fail(
          "{}: '{}': a lookahead draft has no model, layers, quant type, other draft or tree shape (its shape is "
          "window, ngram, candidates)",
          what, text);
    if (!d.window) d.window = 5;
    if (!d.ngram) d.ngram = 3;
    if (!d.candidates) d.candidates = d.window;  // the paper's G = W
  } else if (d.window || d.ngram || d.candidates) {
    Fail("{}: '{}': window/ngram/candidates need the lookahead draft", what, text);
  }
  if (d.rest) {
    if (d.lookup || d.recycling || !d.model.empty() || d.layers || d.quant || !d.branching.empty())
      Fail(
          "{}: '{}': a rest draft has no model, layers, quant type, other draft or branching (its shape is "
          "tree_budget)",
          what, text);
    if (d.corpus.empty()) Fail("{}: '{}': rest needs corpus=PATH (a text file, one document a line)", what, text);
    if (!d.tree_budget) d.tree_budget = 16;
  } else if (!d.corpus.empty()) {
    Fail("{}: '{}': corpus needs the rest draft", what, text);
  }
  // Parsed text and the CLI's parts are in range already; a kind built in code is checked here.
  const auto out = [](int v, int lo, int hi) { return v && (v < lo || v > hi); };
  if (out(d.max_ngram, 1, 64) || out(d.min_ngram, 1, 64) || out(d.window, 1, 64) || out(d.ngram, 2, 64) ||
      out(d.candidates, 1, 64) || out(d.tree_budget, 1, 1024) || d.tree_budget < 0 || d.branching.size() > 64 ||
      std::any_of(d.branching.begin(), d.branching.end(), [&](int b) { return out(b, 1, 64) || !b; }))
    Fail(
        "{}: '{}': a draft size is out of range (n-grams, window and branching in [1, 64], tree_budget in [1, "
        "1024])",
        what, text);
  if (!d.lookup) {
    if (d.max_ngram || d.min_ngram) Fail("{}: '{}': max_ngram/min_ngram need the lookup draft", what, text);
    return;
  }
  if (!d.model.empty() || d.layers || d.quant)
    Fail("{}: '{}': a lookup draft has no model, layers or quant type", what, text);
  if (!d.max_ngram) d.max_ngram = std::max(3, d.min_ngram);
  if (!d.min_ngram) d.min_ngram = 1;
  if (d.min_ngram > d.max_ngram)
    Fail("{}: '{}': min_ngram {} is larger than max_ngram {}", what, text, d.min_ngram, d.max_ngram);
}

// A part given twice would silently take the last ('q4_0+q8_0', 'model=a+model=b'): refused,
// naming both. Parts (each already parsed) are keyed by their name before '='; a word
// that is none of the named parts is a quant type.
void RefuseRepeatedPart(std::map<std::string_view, std::string_view>& seen, std::string_view part,
                        std::string_view what, std::string_view text) {
  static constexpr std::string_view kWords[] = {"self", "lookup", "recycling", "lookahead", "rest"};
  std::string_view key = part.substr(0, part.find('='));
  if (part.find('=') == std::string_view::npos &&
      std::find(std::begin(kWords), std::end(kWords), part) == std::end(kWords))
    key = "quant";
  const auto [it, fresh] = seen.emplace(key, part);
  if (!fresh)
    Fail("{}: '{}': {} is given twice ('{}' and '{}'); give each part once", what, text,
         key == "quant" ? "the quant type" : key, it->second, part);
}

}  // namespace

DraftSpec DraftSpec::FromParts(DraftParts d, std::string_view what, std::string_view text) {
  CheckParts(d, what, text);
  DraftSpec s;
  if (!d.branching.empty()) s.tree_ = DraftTree::Static(d.branching);
  if (d.tree_budget > 0) s.tree_ = DraftTree::Dynamic(d.tree_budget);
  if (d.lookup)
    s.kind_ = LookupDraft{d.max_ngram, d.min_ngram};
  else if (d.recycling)
    s.kind_ = RecyclingDraft{};
  else if (d.lookahead)
    s.kind_ = LookaheadDraft{d.window, d.ngram, d.candidates};
  else if (d.rest)
    s.kind_ = RestDraft{d.corpus};
  else if (!d.model.empty())
    s.kind_ = SeparateDraft{d.model, d.layers, d.quant};
  else
    s.kind_ = TargetDraft{d.layers, d.quant};
  return s;
}

DraftParts DraftSpec::Parts() const {
  DraftParts p;
  std::visit(Overload{[&](const TargetDraft& k) { p.layers = k.layers, p.quant = k.quant; },
                      [&](const SeparateDraft& k) { p.model = k.model, p.layers = k.layers, p.quant = k.quant; },
                      [&](const LookupDraft& k) {
                        p.lookup = true, p.max_ngram = k.max_ngram, p.min_ngram = k.min_ngram;
                      },
                      [&](const RecyclingDraft&) { p.recycling = true; },
                      [&](const LookaheadDraft& k) {
                        p.lookahead = true, p.window = k.window, p.ngram = k.ngram, p.candidates = k.candidates;
                      },
                      [&](const RestDraft& k) { p.rest = true, p.corpus = k.corpus; }},
             kind_);
  p.branching = branching();
  p.tree_budget = tree_budget();
  return p;
}

DraftSpec DraftSpec::Make(Kind kind, std::optional<DraftTree> tree, std::string_view what) {
  DraftSpec s;
  s.kind_ = std::move(kind);
  s.tree_ = std::move(tree);
  const DraftParts p = s.Parts();
  return FromParts(p, what, ModelLabel(p) + TreeLabelOf(p));
}

DraftSpec DraftSpec::WithQuant(std::optional<QType> q) const {
  DraftSpec s = *this;
  if (auto* t = std::get_if<TargetDraft>(&s.kind_))
    t->quant = q;
  else if (auto* m = std::get_if<SeparateDraft>(&s.kind_))
    m->quant = q;
  else if (q)
    Fail("draft: '{}': a {} draft has no quant type", Label(), ModelFreeName());
  return s;
}

DraftSpec DraftSpec::WithTree(std::optional<DraftTree> tree, std::string_view what) const {
  return Make(kind_, std::move(tree), what);
}

DraftSpec DraftSpec::WithNgrams(int max_ngram, int min_ngram, std::string_view what) const {
  if (!get<LookupDraft>()) Fail("{}: '{}': max_ngram/min_ngram need the lookup draft", what, Label());
  return Make(LookupDraft{max_ngram, min_ngram}, tree_, what);
}

std::string DraftSpec::TreeLabel() const { return TreeLabelOf(Parts()); }
std::string DraftSpec::BaseLabel() const {
  const DraftParts p = Parts();
  return ModelLabel(p) + TreeLabelOf(p);
}

std::string DraftSpec::Label() const {
  const DraftParts p = Parts();
  std::string base = ModelLabel(p);
  if (p.quant) base = base == "self" ? std::string(QTypeName(*p.quant)) : base + "+" + std::string(QTypeName(*p.quant));
  return base + TreeLabelOf(p);
}

bool DraftSpec::IsSelf() const {
  const auto* t = get<TargetDraft>();
  return t && t->layers == 0 && !t->quant;
}

bool DraftSpec::ModelFree() const { return !get<TargetDraft>() && !get<SeparateDraft>(); }

std::string_view DraftSpec::ModelFreeName() const {
  if (get<LookupDraft>()) return "lookup";
  if (get<RecyclingDraft>()) return "recycling";
  if (get<LookaheadDraft>()) return "lookahead";
  if (get<RestDraft>()) return "rest";
  return "";
}

const std::string& DraftSpec::model() const {
  static const std::string none;
  const auto* m = get<SeparateDraft>();
  return m ? m->model : none;
}

int DraftSpec::layers() const {
  if (const auto* t = get<TargetDraft>()) return t->layers;
  if (const auto* m = get<SeparateDraft>()) return m->layers;
  return 0;
}

std::optional<QType> DraftSpec::quant() const {
  if (const auto* t = get<TargetDraft>()) return t->quant;
  if (const auto* m = get<SeparateDraft>()) return m->quant;
  return std::nullopt;
}

const std::vector<int>& DraftSpec::branching() const {
  static const std::vector<int> none;
  return tree_ ? tree_->branching() : none;
}

int DraftSpec::tree_budget() const { return tree_ ? tree_->budget() : 0; }

DraftSpec ParseDraftSpec(std::string_view text, std::string_view what) {
  DraftParts d;
  if (text.empty())
    Fail("{}: empty draft (expected self, a quant type, layers=N, model=NAME, lookup, recycling, lookahead or rest)",
         what);
  std::map<std::string_view, std::string_view> seen;  // each part's key ("quant" for a type) -> the part
  size_t start = 0;
  while (start <= text.size()) {
    size_t plus = text.find('+', start);
    std::string_view part = text.substr(start, plus == std::string_view::npos ? text.npos : plus - start);
    if (part == "self") {
    } else if (part == "lookup") {
      d.lookup = true;
    } else if (part == "recycling") {
      d.recycling = true;
    } else if (part == "lookahead") {
      d.lookahead = true;
    } else if (part == "rest") {
      d.rest = true;
    } else if (part.starts_with("window=") || part.starts_with("ngram=") || part.starts_with("candidates=")) {
      const size_t eq = part.find('=');
      int& n = part[0] == 'w' ? d.window : part[0] == 'n' ? d.ngram : d.candidates;
      if (!ParseInt(part.substr(eq + 1), n) || n < (part[0] == 'n' ? 2 : 1) || n > 64)
        Fail("{}: '{}': {} must be an integer in [{}, 64]", what, part, part.substr(0, eq), part[0] == 'n' ? 2 : 1);
    } else if (part.starts_with("corpus=")) {
      d.corpus = std::string(part.substr(7));
      if (d.corpus.empty()) Fail("{}: '{}': empty corpus path", what, part);
    } else if (part.starts_with("max_ngram=") || part.starts_with("min_ngram=")) {
      int& n = part[1] == 'a' ? d.max_ngram : d.min_ngram;
      if (!ParseInt(part.substr(10), n) || n < 1 || n > 64)
        Fail("{}: '{}': n-gram length must be an integer in [1, 64]", what, part);
    } else if (part.starts_with("tree_budget=")) {
      if (!ParseInt(part.substr(12), d.tree_budget) || d.tree_budget < 1 || d.tree_budget > 1024)
        Fail("{}: '{}': tree_budget must be an integer in [1, 1024]", what, part);
    } else if (part.starts_with("branching=")) {
      d.branching.clear();
      std::string_view list = part.substr(10);
      for (size_t a = 0; a <= list.size();) {
        const size_t comma = std::min(list.find(',', a), list.size());
        int b = 0;
        if (!ParseInt(list.substr(a, comma - a), b) || b < 1 || b > 64 || d.branching.size() >= 64)
          Fail("{}: '{}': branching must be up to 64 comma-separated integers in [1, 64] (e.g. 4,2,2,1)", what, part);
        d.branching.push_back(b);
        a = comma + 1;
      }
    } else if (part.starts_with("layers=")) {
      if (!ParseInt(part.substr(7), d.layers) || d.layers < 1)
        Fail("{}: '{}': layers must be a positive integer", what, part);
    } else if (part.starts_with("model=")) {
      d.model = std::string(part.substr(6));
      if (d.model.empty()) Fail("{}: '{}': empty model name", what, part);
    } else {
      try {
        d.quant = ParseQType(part);
      } catch (const Error&) {
        Fail(
            "{}: '{}' is not self, layers=N, model=NAME, lookup, recycling, lookahead, rest or a quant type (q8_0, "
            "q4_0, ...){}",
            what, part, DraftPartHint(part));
      }
      if (!CanQuantizeTo(*d.quant)) Fail("{}: {}", what, LoadOnlyReason(*d.quant));
    }
    RefuseRepeatedPart(seen, part, what, text);
    if (plus == std::string_view::npos) break;
    start = plus + 1;
  }
  return DraftSpec::FromParts(std::move(d), what, text);
}

void ApplyDecoderAlias(std::string_view decoder, DraftSpec& d,
                       const std::function<std::string(std::string_view part)>& option) {
  if (decoder == "assisted") {
    if (d.ModelFree())
      Fail("{}: assisted drafts with a separate model, not by {} (use --decoder speculative)", option("lookup"),
           d.BaseLabel());
    if (d.model().empty()) Fail("{}: assisted needs a separate draft model", option("model"));
  } else if (decoder == "self-spec") {
    if (!d.model().empty())
      Fail("{}: self-spec drafts with the target's own weights, not a separate model (use assisted)", option("model"));
    if (d.ModelFree())
      Fail("{}: self-spec drafts with the target's own weights, not by {} (use speculative)", option("lookup"),
           d.BaseLabel());
    if (d.layers())
      Fail(
          "{}: self-spec drafts with all of the target's blocks quantized; an early-exit draft is "
          "speculative with layers",
          option("layers"));
    if (!d.quant()) d = d.WithQuant(QType::Q4_0);
  }
}

}  // namespace specsweep
