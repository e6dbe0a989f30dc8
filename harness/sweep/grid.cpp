#include "harness/sweep/grid.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/ranges.h>

#include "decoders/draft_spec.h"

using nlohmann::json;

namespace specsweep {

using namespace schema;

namespace {

// A decoder entry's kind, and its axes: the global ones with the entry's own on top.
struct Entry {
  std::string kind_name;  // as written: ar, speculative, assisted, self-spec
  DecoderKind kind = DecoderKind::Autoregressive;
  Axes axes;
  std::string draft_path;  // where its drafts were given, for errors
  bool speculative() const { return kind != DecoderKind::Autoregressive; }
};

Entry ReadEntry(const Ctx& c, const json& doc, const json& d, const std::string& dp, const Axes& global,
                const std::string& models_dir) {
  Entry e;
  e.axes = global;
  if (d.is_string()) {
    e.kind_name = c.Str(d, dp);
  } else if (d.is_object()) {
    if (!d.contains("decoder")) c.Bad(dp + ".decoder", "missing");
    std::set<std::string> allowed = AxisKeys();
    allowed.insert("decoder");
    c.CheckKeys(d, dp, allowed);
    e.kind_name = c.Str(d["decoder"], dp + ".decoder");
  } else {
    c.Bad(dp, fmt::format("expected a decoder name or a map, got {}", TypeName(d)));
  }
  try {
    e.kind = ParseDecoderKind(e.kind_name);
  } catch (const Error&) {
    c.Bad(d.is_object() ? dp + ".decoder" : dp,
          fmt::format("unknown decoder '{}'{} (expected ar, speculative, or its aliases assisted, self-spec)",
                      e.kind_name, DidYouMean(e.kind_name, {"ar", "speculative", "assisted", "self-spec"})));
  }
  if (d.is_object()) {
    if (!e.speculative())
      for (auto& [k, v] : d.items())
        if (SpecAxes().count(k)) c.Bad(dp + "." + k, "not used by the autoregressive decoder");
    json overrides = d;
    overrides.erase("decoder");
    ParseAxes(c, overrides, dp, e.axes, models_dir);
  }
  e.draft_path = d.is_object() && d.contains("draft")                      ? dp + ".draft"
                 : doc.contains("sweep") && doc["sweep"].contains("draft") ? "sweep.draft"
                                                                           : dp;
  if (!e.speculative()) {  // non-speculative decoders collapse the draft axes to one value
    Axes& a = e.axes;
    a.k = {0}, a.k_policy = {KPolicy::Constant}, a.draft = {DraftSpec{}}, a.acceptance_source = {{}};
  }
  return e;
}

// A lookup draft in each pair of the n-gram axes (pairs with min > max are skipped).
void AddLookupDrafts(const Ctx& c, const json& d, const std::string& dp, const Axes& a, const DraftSpec& dr,
                     std::vector<DraftSpec>& out) {
  for (KPolicy kp : a.k_policy)
    if (kp == KPolicy::Threshold || kp == KPolicy::Adaptive)
      c.Bad(d.is_object() && d.contains("k_policy") ? dp + ".k_policy" : "sweep.k_policy",
            fmt::format("{} reads the draft's probabilities, which a lookup draft does not have "
                        "(use constant or heuristic)",
                        KPolicyName(kp)));
  const LookupDraft& lookup = *dr.get<LookupDraft>();
  const size_t before = out.size();
  for (int mx : a.max_ngram.empty() ? std::vector<int>{lookup.max_ngram} : a.max_ngram)
    for (int mn : a.min_ngram.empty() ? std::vector<int>{lookup.min_ngram} : a.min_ngram)
      if (mn <= mx) out.push_back(dr.WithNgrams(mx, mn));
  if (out.size() == before)
    c.Bad(d.is_object() && d.contains("min_ngram") ? dp + ".min_ngram" : "sweep.min_ngram",
          "every min_ngram is larger than every max_ngram: no lookup draft left");
}

// Why a tree axis value does not apply to draft `dr` ("" when it does): `chain` is
// tree_budget 0 or branching "chain", `dynamic` a tree_budget above 0, else a static
// branching. The CLI's draft spec refuses the same combinations (decoders/draft_spec.cpp).
std::string TreeMismatch(const DraftSpec& dr, bool chain, bool dynamic) {
  if (dr.get<RecyclingDraft>())
    return chain ? "a recycling draft is always a tree" : dynamic ? "a recycling tree's shape is branching" : "";
  if (dr.get<LookaheadDraft>()) return "a lookahead draft's shape is its window, ngram and candidates";
  if (dr.get<RestDraft>())
    return chain ? "a rest draft is always a tree" : dynamic ? "" : "a rest tree's shape is tree_budget";
  if (dr.get<LookupDraft>() && !chain && !dynamic)
    return "a lookup tree holds every matching continuation (its shape is tree_budget)";
  // A model's or lookup's tree comes only from its label or the axes: the axis would replace it.
  if (dr.tree()) return "its label gives its tree already, which the axis would replace";
  return "";
}

// A tree axis value that does not apply to one of the entry's drafts is an error naming
// both: shaping only some drafts left others out of the plan without a word.
void CheckTreeAxes(const Ctx& c, const json& d, const std::string& dp, const Entry& e) {
  if (!e.speculative()) return;
  const Axes& a = e.axes;
  struct Value {
    std::string axis, text;
    bool chain, dynamic;
  };
  std::vector<Value> kinds;  // the first value of each kind given: |draft| x 4 checks at most
  auto add = [&](const std::string& axis, const std::string& text, bool chain, bool dynamic) {
    for (const Value& v : kinds)
      if (v.axis == axis && v.chain == chain && v.dynamic == dynamic) return;
    kinds.push_back({axis, text, chain, dynamic});
  };
  for (int b : a.tree_budget) add("tree_budget", std::to_string(b), b == 0, b > 0);
  for (const std::vector<int>& br : a.branching)
    add("branching", br.empty() ? "chain" : fmt::format("\"{}\"", fmt::join(br, ",")), br.empty(), false);
  for (const DraftSpec& dr : a.draft)
    for (const Value& v : kinds)
      if (const std::string why = TreeMismatch(dr, v.chain, v.dynamic); !why.empty())
        c.Bad(d.is_object() && d.contains(v.axis) ? dp + "." + v.axis : "sweep." + v.axis,
              fmt::format("{} does not apply to the draft '{}' ({}): {}; give the tree axes in a decoder entry of "
                          "the drafts they shape",
                          v.text, dr.Label(), e.draft_path, why));
}

// Every draft in every tree shape of the tree_budget and branching axes (CheckTreeAxes
// has made sure each shape applies to each draft); equal shapes once.
std::vector<DraftSpec> ShapeTrees(const Axes& a, const std::vector<DraftSpec>& drafts) {
  if (a.tree_budget.empty() && a.branching.empty()) return drafts;
  std::vector<std::optional<DraftTree>> trees;
  for (int b : a.tree_budget) trees.push_back(b ? std::optional(DraftTree::Dynamic(b)) : std::nullopt);
  for (const std::vector<int>& br : a.branching)
    trees.push_back(br.empty() ? std::nullopt : std::optional(DraftTree::Static(br)));
  std::vector<DraftSpec> shaped;
  for (const DraftSpec& dr : drafts) {
    std::set<std::string> labels;
    for (const std::optional<DraftTree>& t : trees)
      if (DraftSpec s = dr.WithTree(t); labels.insert(s.Label()).second) shaped.push_back(std::move(s));
  }
  return shaped;
}

// How many drafts ConcreteDrafts makes, counted without making them (an upper bound:
// equal tree shapes count twice): each model draft once per draft_quant, each lookup
// draft once per n-gram pair with min <= max, times the tree shapes.
double CountDrafts(const Entry& e) {
  const Axes& a = e.axes;
  const double shapes =
      a.tree_budget.empty() && a.branching.empty() ? 1 : double(a.tree_budget.size() + a.branching.size());
  if (!e.speculative()) return double(a.draft.size()) * shapes;
  std::vector<int> maxes = a.max_ngram, mins = a.min_ngram;
  std::sort(maxes.begin(), maxes.end());
  std::sort(mins.begin(), mins.end());
  double swept_pairs = 0;  // both n-gram axes given: the same pairs for every lookup draft
  for (int mx : maxes) swept_pairs += double(std::upper_bound(mins.begin(), mins.end(), mx) - mins.begin());
  double n = 0;
  for (const DraftSpec& dr : a.draft) {
    if (const LookupDraft* l = dr.get<LookupDraft>()) {
      if (!maxes.empty() && !mins.empty())
        n += swept_pairs;
      else if (!maxes.empty())
        n += double(maxes.end() - std::lower_bound(maxes.begin(), maxes.end(), l->min_ngram));
      else if (!mins.empty())
        n += double(std::upper_bound(mins.begin(), mins.end(), l->max_ngram) - mins.begin());
      else
        n += 1;
    } else {
      n += dr.ModelFree() || a.draft_quant.empty() ? 1 : double(a.draft_quant.size());
    }
  }
  return n * shapes;
}

// The entry's concrete drafts: lookup drafts take the n-gram axes, model drafts the
// draft_quant axis, every draft the tree axes; an alias (assisted, self-spec) then settles
// its kind of draft (self-spec's default q4_0 made explicit so the label names what is
// measured).
std::vector<DraftSpec> ConcreteDrafts(const Ctx& c, const json& d, const std::string& dp, const Entry& e) {
  const Axes& a = e.axes;
  if (!e.speculative()) return ShapeTrees(a, a.draft);  // counted as before, though its points ignore the draft
  if (!a.draft_quant.empty())
    for (const DraftSpec& dr : a.draft)
      if (dr.quant())
        c.Bad(e.draft_path,
              fmt::format("'{}' sets a quant type and draft_quant is swept too; use one of them", dr.Label()));
  std::vector<DraftSpec> concrete;
  for (const DraftSpec& dr : a.draft) {
    if (dr.get<LookupDraft>()) {
      AddLookupDrafts(c, d, dp, a, dr, concrete);
    } else if (dr.ModelFree() || a.draft_quant.empty()) {  // recycling, lookahead, rest: draft_quant does not apply
      concrete.push_back(dr);
    } else {
      for (const std::optional<QType>& dq : a.draft_quant) concrete.push_back(dq ? dr.WithQuant(dq) : dr);
    }
  }
  concrete = ShapeTrees(a, concrete);
  for (DraftSpec& dr : concrete) {
    const std::string label = dr.Label();
    ApplyDecoderAlias(e.kind_name, dr, [&](std::string_view part) {
      return fmt::format("{}: {} '{}' ({})", c.file, e.draft_path, label, part);
    });
    if (dr.IsSelf())
      c.Bad(e.draft_path, fmt::format("{} needs a draft (layers=N, a quant type, model=NAME or lookup)", e.kind_name));
  }
  return concrete;
}

// The table-form settings (decoders/settings.h) given for this entry's decoder.
std::vector<std::pair<const DecoderSetting*, const std::vector<std::string>*>> TableAxes(const Entry& e) {
  std::vector<std::pair<const DecoderSetting*, const std::vector<std::string>*>> out;
  for (auto& [name, texts] : e.axes.table)
    if (const DecoderSetting& s = Setting(name); e.speculative() || !s.speculative_only) out.emplace_back(&s, &texts);
  return out;
}

// Refuses a grid too large to plan before allocating any of it.
void CheckGridSize(const Ctx& c, const std::string& dp, const Entry& e, size_t models, double drafts,
                   size_t planned_before, const PointBudget& budget) {
  const Axes& a = e.axes;
  std::vector<std::pair<std::string, double>> axes = {{"models", models},
                                                      {"target_quant", a.target_quant.size()},
                                                      {"input_length", a.input_length.size()},
                                                      {"max_new_tokens", a.max_new_tokens.size()},
                                                      {"temperature", a.temperature.size()},
                                                      {"top_k", a.top_k.size()},
                                                      {"top_p", a.top_p.size()},
                                                      {"seed", a.seed.size()},
                                                      {"threads", a.threads.size()},
                                                      {"kv_type", a.kv_type.size()},
                                                      {"k", a.k.size()},
                                                      {"k_policy", a.k_policy.size()},
                                                      {"draft_p_min", a.draft_p_min.size()},
                                                      {"drafts", drafts},
                                                      {"acceptance_source", a.acceptance_source.size()}};
  for (auto& [s, texts] : TableAxes(e)) axes.emplace_back(std::string(s->name), texts->size());
  double n = 1;  // a double: the product of a hostile file's axes overflows 64 bits
  std::string product;
  for (auto& [name, size] : axes) {
    n *= size;
    if (size != 1) product += fmt::format("{}{:.0f} {}", product.empty() ? "" : " x ", size, name);
  }
  if (n + double(planned_before) > double(budget.max_points))
    c.Bad(dp, fmt::format("plans {:.0f} points ({}{}), above {} of {}: raise max_points to plan it", n,
                          product.empty() ? "1" : product,
                          planned_before ? fmt::format("; {} before it", planned_before) : "", budget.where,
                          budget.max_points));
}

// Each point of `points` once for every value, values innermost: the grid's order.
template <class T, class Set>
void Multiply(std::vector<Point>& points, const std::vector<T>& values, Set set) {
  std::vector<Point> out;
  out.reserve(points.size() * values.size());
  for (const Point& p : points)
    for (const T& v : values) set(out.emplace_back(p), v);
  points.swap(out);
}

// The cartesian product of the entry's axes over `models`.
std::vector<Point> Product(const Entry& e, const std::vector<std::string>& models, const std::vector<DraftSpec>& drafts,
                           const std::string& prompt_category) {
  const Axes& a = e.axes;
  Point base;
  base.options.kind = e.kind;
  base.prompt_category = prompt_category;
  std::vector<Point> pts{base};
  Multiply(pts, models, [](Point& p, const std::string& m) { p.model = m; });
  Multiply(pts, a.target_quant, [](Point& p, const std::optional<QType>& q) { p.target_quant = q; });
  Multiply(pts, a.input_length, [](Point& p, int n) { p.input_length = n; });
  Multiply(pts, a.max_new_tokens, [](Point& p, int n) { p.options.max_new_tokens = n; });
  // A greedy point's other sampling settings stay at their defaults (equal keys).
  Multiply(pts, a.temperature, [](Point& p, float t) { p.options.sampling.temperature = t; });
  auto sampled = [](const Point& p) { return p.options.sampling.temperature > 0; };
  Multiply(pts, a.top_k, [&](Point& p, int v) {
    if (sampled(p)) p.options.sampling.top_k = v;
  });
  Multiply(pts, a.top_p, [&](Point& p, float v) {
    if (sampled(p)) p.options.sampling.top_p = v;
  });
  Multiply(pts, a.seed, [&](Point& p, uint64_t v) {
    if (sampled(p)) p.options.sampling.seed = v;
  });
  Multiply(pts, a.threads, [](Point& p, int n) { p.threads = n; });
  Multiply(pts, a.kv_type, [](Point& p, KvType t) { p.options.kv_type = t; });
  const bool spec = e.speculative();
  Multiply(pts, a.k, [&](Point& p, int k) {
    if (spec) p.options.k = k;
  });
  Multiply(pts, a.k_policy, [&](Point& p, KPolicy kp) {
    if (spec) p.options.k_policy = kp;
  });
  Multiply(pts, a.draft_p_min, [&](Point& p, float v) {
    if (spec && p.options.k_policy == KPolicy::Threshold) p.options.draft_p_min = v;
  });
  Multiply(pts, drafts, [&](Point& p, const DraftSpec& d) {
    if (spec) p.options.draft = d;
    if (spec && p.options.k == 0) p.options.k = DefaultK(d);  // k not given: a tree's size sets it
  });
  Multiply(pts, a.acceptance_source, [&](Point& p, const AcceptanceSource& s) {
    if (spec) p.options.acceptance_source = s;
  });
  for (auto& [s, texts] : TableAxes(e))
    Multiply(pts, *texts, [s = s](Point& p, const std::string& t) { s->parse(p.options, t, s->name); });
  // A model drafting for itself measures nothing; skipping it lets one draft list serve
  // every target (e.g. two models drafting for each other).
  std::erase_if(pts, [&](const Point& p) {
    return spec && !p.options.draft.model().empty() && p.options.draft.model() == p.model;
  });
  return pts;
}

}  // namespace

void ExpandDecoderEntry(const Ctx& c, const json& doc, const json& entry, const std::string& dp, const Axes& global,
                        const std::vector<std::string>& models, const std::string& prompt_category,
                        const std::string& models_dir, std::vector<Point>& ar, std::vector<Point>& spec,
                        const PointBudget& budget) {
  const json d = ResolveHfAliases(c, entry, dp);
  const Entry e = ReadEntry(c, doc, d, dp, global, models_dir);
  CheckTreeAxes(c, d, dp, e);
  // Every axis counted before any of it is made (drafts and points alike).
  CheckGridSize(c, dp, e, models.size(), CountDrafts(e), ar.size() + spec.size(), budget);
  const std::vector<DraftSpec> drafts = ConcreteDrafts(c, d, dp, e);
  std::vector<Point>& out = e.speculative() ? spec : ar;
  for (Point& p : Product(e, models, drafts, prompt_category)) out.push_back(std::move(p));
}

std::vector<Point> OrderIntoGroups(const std::vector<Point>& ar, const std::vector<Point>& spec) {
  std::vector<std::string> group_order;
  std::map<std::string, std::vector<Point>> groups;
  std::set<std::string> seen;
  auto add = [&](const Point& pt, const std::string& group) {
    if (!seen.insert(pt.Key()).second) return;
    if (!groups.count(group)) group_order.push_back(group);
    groups[group].push_back(pt);
  };
  for (auto& pt : ar) add(pt, pt.Key());
  for (auto& pt : spec) {
    Point b = pt.Baseline();
    add(b, b.Key());
    add(pt, b.Key());
  }
  std::vector<Point> points;
  for (auto& g : group_order)
    for (auto& pt : groups[g]) points.push_back(pt);
  return points;
}

std::vector<Point> SplitIntoParts(const std::vector<Point>& points, const std::vector<QuestionPart>& parts) {
  std::vector<Point> out;
  for (size_t begin = 0, end = 0; begin < points.size(); begin = end) {
    const std::string base = points[begin].Baseline().Key();
    for (end = begin + 1; end < points.size() && points[end].Baseline().Key() == base;) ++end;
    if (points[begin].input_length > 0) {
      out.insert(out.end(), points.begin() + long(begin), points.begin() + long(end));
      continue;
    }
    for (const QuestionPart& part : parts)
      for (size_t i = begin; i < end; ++i) out.emplace_back(points[i]).part = part.name;
  }
  return out;
}

}  // namespace specsweep
