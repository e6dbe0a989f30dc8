#include "decoders/draft_spec.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.h"

namespace specsweep {

std::string DraftSpec::BaseLabel() const {
  // The n-gram range is the lookup draft's architecture: tables tell variants apart.
  if (lookup) return fmt::format("lookup+max_ngram={}+min_ngram={}", max_ngram, min_ngram);
  std::string s;
  if (!model.empty()) s = "model=" + model;
  if (layers > 0) s += fmt::format("{}layers={}", s.empty() ? "" : "+", layers);
  return s.empty() ? "self" : s;
}

std::string DraftSpec::Label() const {
  std::string base = BaseLabel();
  if (!quant) return base;
  std::string q(QTypeName(*quant));
  return base == "self" ? q : base + "+" + q;
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
  if (text.empty()) Fail("{}: empty draft (expected self, a quant type, layers=N, model=NAME or lookup)", what);
  size_t start = 0;
  while (start <= text.size()) {
    size_t plus = text.find('+', start);
    std::string_view part = text.substr(start, plus == std::string_view::npos ? text.npos : plus - start);
    if (part == "self") {
    } else if (part == "lookup") {
      d.lookup = true;
    } else if (part.starts_with("max_ngram=") || part.starts_with("min_ngram=")) {
      int& n = part[1] == 'a' ? d.max_ngram : d.min_ngram;
      if (!ParseInt(part.substr(10), n) || n < 1 || n > 64)
        Fail("{}: '{}': n-gram length must be an integer in [1, 64]", what, part);
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
        Fail("{}: '{}' is not self, layers=N, model=NAME, lookup or a quant type (q8_0, q4_0, ...)", what, part);
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
    if (d.lookup) Fail("{}: assisted drafts with a separate model, not by lookup (use --decoder speculative)", option("lookup"));
    if (d.model.empty()) Fail("{}: assisted needs a separate draft model", option("model"));
  } else if (decoder == "self-spec") {
    if (!d.model.empty())
      Fail("{}: self-spec drafts with the target's own weights, not a separate model (use assisted)", option("model"));
    if (d.lookup) Fail("{}: self-spec drafts with the target's own weights, not by lookup (use speculative)", option("lookup"));
    if (d.layers)
      Fail("{}: self-spec drafts with all of the target's blocks quantized; an early-exit draft is "
           "speculative with layers", option("layers"));
    if (!d.quant) d.quant = QType::Q4_0;
  }
}

}  // namespace specsweep
