#include "harness/report/method_name.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "harness/report/table.h"
#include "harness/report/table_cells.h"
#include "harness/store/results.h"
#include "quant/qtype.h"

namespace specsweep {

namespace {

std::string QuantName(const std::optional<QType>& q) {
  std::string s(q ? QTypeName(*q) : "");
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string LayersText(int layers) { return layers ? fmt::format("{} layer{}", layers, layers == 1 ? "" : "s") : ""; }

// "NAME (part, part)" without the empty parts.
std::string Named(std::string name, const std::vector<std::string>& parts) {
  std::string in;
  for (auto& p : parts)
    if (!p.empty()) in += (in.empty() ? "" : ", ") + p;
  return in.empty() ? name : name + " (" + in + ")";
}

// The name of a draft's kind and what sets it apart from others of that kind.
std::string DraftMethod(const DraftSpec& d, bool bridged) {
  const bool tree = d.tree().has_value();
  if (d.get<LookupDraft>()) return tree ? "PLD tree" : "PLD";
  if (d.get<LookaheadDraft>()) return "Lookahead";
  if (d.get<RestDraft>()) return "REST";
  if (d.get<RecyclingDraft>()) return "Recycling";
  const std::string quant = QuantName(d.quant()), layers = LayersText(d.layers());
  if (d.get<SeparateDraft>()) return Named(tree ? "SpS tree" : "SpS", {layers, quant, bridged ? "bridged" : ""});
  // The target drafting for itself: quantized (self-speculative), early exit, or both.
  if (tree) return Named("Self-draft tree", {layers.empty() ? "" : "early exit, " + layers, quant});
  if (layers.empty()) return Named("Self-spec", {quant});
  return Named("Early exit", {layers, quant});
}

std::string BaseName(const AggregateRecord& r) {
  if (!r.Speculative()) return "AR";
  std::string name = r.identity.draft ? DraftMethod(*r.identity.draft, Bridged(r)) : r.identity.draft_label;
  if (IsReplayed(r)) name += " [" + AcceptanceCaptionOf(r) + "]";  // never mistaken for a measured one
  return name;
}

// What tells `a` apart among `group`: its values of the fields varying there.
std::string Distinguishing(const AggregateRecord& a, const std::vector<AggregateRecord>& group) {
  std::string out;
  for (auto& f : Varying(group, {"category", "prompt_category"})) {
    const std::string v = f == "k" || f == "k_policy"               ? KLabelOf(a)
                          : f == "draft_base" || f == "draft_quant" ? "draft " + a.identity.draft_label
                                                                    : f + "=" + FieldText(a, f);
    if (out.find(v) == std::string::npos) out += (out.empty() ? "" : ", ") + v;
  }
  return out;
}

}  // namespace

std::string MethodName(const AggregateRecord& r) { return BaseName(r); }

std::vector<std::string> MethodNames(const std::vector<AggregateRecord>& points) {
  std::vector<std::string> names;
  std::map<std::string, std::vector<AggregateRecord>> same;
  for (auto& p : points) {
    names.push_back(BaseName(p));
    same[names.back()].push_back(p);
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const std::vector<AggregateRecord>& group = same[names[i]];
    if (group.size() < 2) continue;
    const std::string extra = Distinguishing(points[i], group);
    if (!extra.empty())
      names[i] = names[i].back() == ')' ? names[i].substr(0, names[i].size() - 1) + ", " + extra + ")"
                                        : names[i] + " (" + extra + ")";
  }
  // Still alike (nothing among the parameters differs): numbered in order.
  std::map<std::string, int> seen;
  for (auto& n : names)
    if (const int c = ++seen[n]; c > 1) n += fmt::format(" #{}", c);
  return names;
}

std::string MethodSpec(const AggregateRecord& r) {
  if (!r.Speculative()) return "autoregressive";
  std::string s = "draft " + r.identity.draft_label + (Bridged(r) ? kBridgedMark : "");
  if (const std::string k = KLabelOf(r); !k.empty()) s += ", " + k;
  if (IsReplayed(r)) s += ", " + AcceptanceCaptionOf(r);
  return s;
}

}  // namespace specsweep
