#include "decoders/draft_spec.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"

namespace specsweep {

std::string DraftSpec::TreeLabel() const {
  if (!branching.empty()) return fmt::format("+branching={}", fmt::join(branching, ","));
  return tree_budget > 0 ? fmt::format("+tree_budget={}", tree_budget) : "";
}

static std::string ModelLabel(const DraftSpec& d) {
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

std::string DraftSpec::BaseLabel() const { return ModelLabel(*this) + TreeLabel(); }

std::string DraftSpec::Label() const {
  std::string base = ModelLabel(*this);
  if (quant) base = base == "self" ? std::string(QTypeName(*quant)) : base + "+" + std::string(QTypeName(*quant));
  return base + TreeLabel();
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

void CheckDraftSpec(DraftSpec& d, std::string_view what, std::string_view text) {
  if (!d.branching.empty() && d.tree_budget)
    Fail("{}: '{}': a tree is static (branching) or dynamic (tree_budget), not both", what, text);
  if (d.lookup && !d.branching.empty())
    Fail("{}: '{}': a lookup tree holds every matching continuation; give tree_budget, not branching", what, text);
  if (d.recycling) {
    if (d.lookup || !d.model.empty() || d.layers || d.quant || d.tree_budget)
      Fail("{}: '{}': a recycling draft has no model, layers, quant type, lookup or tree_budget (its shape is "
           "branching)", what, text);
    if (d.branching.empty()) d.branching = {4, 2, 2, 1};
  }
  if (d.lookahead) {
    if (d.lookup || d.recycling || d.rest || !d.model.empty() || d.layers || d.quant || !d.branching.empty() ||
        d.tree_budget)
      Fail("{}: '{}': a lookahead draft has no model, layers, quant type, other draft or tree shape (its shape is "
           "window, ngram, candidates)", what, text);
    if (!d.window) d.window = 5;
    if (!d.ngram) d.ngram = 3;
    if (!d.candidates) d.candidates = d.window;  // the paper's G = W
  } else if (d.window || d.ngram || d.candidates) {
    Fail("{}: '{}': window/ngram/candidates need the lookahead draft", what, text);
  }
  if (d.rest) {
    if (d.lookup || d.recycling || !d.model.empty() || d.layers || d.quant || !d.branching.empty())
      Fail("{}: '{}': a rest draft has no model, layers, quant type, other draft or branching (its shape is "
           "tree_budget)", what, text);
    if (d.corpus.empty()) Fail("{}: '{}': rest needs corpus=PATH (a text file, one document a line)", what, text);
    if (!d.tree_budget) d.tree_budget = 16;
  } else if (!d.corpus.empty()) {
    Fail("{}: '{}': corpus needs the rest draft", what, text);
  }
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

DraftSpec ParseDraftSpec(std::string_view text, std::string_view what) {
  DraftSpec d;
  if (text.empty())
    Fail("{}: empty draft (expected self, a quant type, layers=N, model=NAME, lookup, recycling, lookahead or rest)",
         what);
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
        Fail("{}: '{}' is not self, layers=N, model=NAME, lookup, recycling, lookahead, rest or a quant type (q8_0, "
             "q4_0, ...)", what, part);
      }
      if (!CanQuantizeTo(*d.quant)) Fail("{}: {}", what, LoadOnlyReason(*d.quant));
    }
    if (plus == std::string_view::npos) break;
    start = plus + 1;
  }
  CheckDraftSpec(d, what, text);
  return d;
}

void ApplyDecoderAlias(std::string_view decoder, DraftSpec& d,
                       const std::function<std::string(std::string_view part)>& option) {
  if (decoder == "assisted") {
    if (d.ModelFree())
      Fail("{}: assisted drafts with a separate model, not by {} (use --decoder speculative)", option("lookup"),
           d.BaseLabel());
    if (d.model.empty()) Fail("{}: assisted needs a separate draft model", option("model"));
  } else if (decoder == "self-spec") {
    if (!d.model.empty())
      Fail("{}: self-spec drafts with the target's own weights, not a separate model (use assisted)", option("model"));
    if (d.ModelFree())
      Fail("{}: self-spec drafts with the target's own weights, not by {} (use speculative)", option("lookup"),
           d.BaseLabel());
    if (d.layers)
      Fail("{}: self-spec drafts with all of the target's blocks quantized; an early-exit draft is "
           "speculative with layers", option("layers"));
    if (!d.quant) d.quant = QType::Q4_0;
  }
}

}  // namespace specsweep
