#include "harness/sweep/grid.h"

#include <algorithm>
#include <map>
#include <set>

#include "decoders/draft_spec.h"

using nlohmann::json;

namespace specsweep {

using namespace schema;

void ExpandDecoderEntry(const Ctx& c, const json& doc, const json& entry, const std::string& dp, const Axes& global,
                        const std::vector<std::string>& models, const std::string& prompt_category,
                        const std::string& models_dir, std::vector<Point>& ar, std::vector<Point>& spec,
                        const PointBudget& budget) {
  const json d = ResolveHfAliases(c, entry, dp);
  Axes a = global;
  std::string kind_name;
  if (d.is_string()) {
    kind_name = c.Str(d, dp);
  } else if (d.is_object()) {
    if (!d.contains("decoder")) c.Bad(dp + ".decoder", "missing");
    std::set<std::string> allowed = kAxisKeys;
    allowed.insert("decoder");
    c.CheckKeys(d, dp, allowed);
    kind_name = c.Str(d["decoder"], dp + ".decoder");
  } else {
    c.Bad(dp, fmt::format("expected a decoder name or a map, got {}", TypeName(d)));
  }
  DecoderKind kind;
  try {
    kind = ParseDecoderKind(kind_name);
  } catch (const Error&) {
    c.Bad(d.is_object() ? dp + ".decoder" : dp,
          fmt::format("unknown decoder '{}'{} (expected ar, speculative, or its aliases assisted, self-spec)",
                      kind_name, DidYouMean(kind_name, {"ar", "speculative", "assisted", "self-spec"})));
  }
  if (d.is_object()) {
    if (kind == DecoderKind::Autoregressive)
      for (auto& [k, v] : d.items())
        if (kSpecAxes.count(k)) c.Bad(dp + "." + k, "not used by the autoregressive decoder");
    json overrides = d;
    overrides.erase("decoder");
    ParseAxes(c, overrides, dp, a, models_dir);
  }
  bool is_spec = kind != DecoderKind::Autoregressive;
  // Non-speculative decoders collapse the draft axes to one value.
  std::vector<int> ks = is_spec ? a.k : std::vector<int>{0};
  std::vector<KPolicy> kps = is_spec ? a.k_policy : std::vector<KPolicy>{KPolicy::Constant};
  std::vector<DraftSpec> drafts = is_spec ? a.draft : std::vector<DraftSpec>{DraftSpec{}};
  std::vector<AcceptanceSource> sources = is_spec ? a.acceptance_source : std::vector<AcceptanceSource>{{}};
  std::vector<std::optional<QType>> dqs = a.draft_quant;
  if (!is_spec || dqs.empty()) dqs = {std::nullopt};
  // Where the drafts of this entry were given, for errors.
  const std::string draft_path = d.is_object() && d.contains("draft") ? dp + ".draft"
                                 : doc.contains("sweep") && doc["sweep"].contains("draft") ? "sweep.draft"
                                                                                          : dp;
  for (size_t i = 0; i < drafts.size() && is_spec && !a.draft_quant.empty(); ++i)
    if (drafts[i].quant)
      c.Bad(draft_path, fmt::format("'{}' sets a quant type and draft_quant is swept too; use one of them",
                                    drafts[i].Label()));
  // Concrete drafts: lookup drafts take the n-gram axes (pairs with min > max are
  // skipped), model drafts the draft_quant axis; an alias (assisted, self-spec) then
  // settles its kind of draft (self-spec's default q4_0 made explicit so the label
  // names what is measured).
  std::vector<DraftSpec> concrete;
  for (auto& dr : drafts) {
    if (dr.lookup) {
      for (KPolicy kp : kps)
        if (kp == KPolicy::Threshold || kp == KPolicy::Adaptive)
          c.Bad(d.is_object() && d.contains("k_policy") ? dp + ".k_policy" : "sweep.k_policy",
                fmt::format("{} reads the draft's probabilities, which a lookup draft does not have "
                            "(use constant or heuristic)", KPolicyName(kp)));
      const size_t before = concrete.size();
      for (int mx : a.max_ngram.empty() ? std::vector<int>{dr.max_ngram} : a.max_ngram)
        for (int mn : a.min_ngram.empty() ? std::vector<int>{dr.min_ngram} : a.min_ngram) {
          if (mn > mx) continue;
          DraftSpec d = dr;
          d.max_ngram = mx;
          d.min_ngram = mn;
          concrete.push_back(d);
        }
      if (concrete.size() == before)
        c.Bad(d.is_object() && d.contains("min_ngram") ? dp + ".min_ngram" : "sweep.min_ngram",
              "every min_ngram is larger than every max_ngram: no lookup draft left");
      continue;
    }
    if (dr.ModelFree()) {  // recycling, lookahead, rest: no model, draft_quant does not apply
      concrete.push_back(dr);
      continue;
    }
    for (auto& dq : dqs) {
      DraftSpec d = dr;
      if (dq) d.quant = dq;
      concrete.push_back(d);
    }
  }
  if (!a.tree_budget.empty() || !a.branching.empty()) {  // every draft in every tree shape
    std::vector<DraftSpec> shaped;
    for (const DraftSpec& dr : concrete) {
      const size_t before = shaped.size();
      for (int b : a.tree_budget) {
        if (dr.recycling || dr.lookahead) break;  // shaped by branching / by its window
        if (dr.rest && b == 0) continue;          // a rest draft is a tree
        DraftSpec t = dr;
        t.tree_budget = b, t.branching.clear();
        shaped.push_back(t);
      }
      for (const std::vector<int>& br : a.branching) {
        if (dr.lookup && !br.empty()) continue;  // a lookup tree has no fixed shape
        if (dr.lookahead || dr.rest) continue;    // shaped by its window / its tree_budget
        if (dr.recycling && br.empty()) continue;  // nor a recycling chain
        DraftSpec t = dr;
        t.branching = br, t.tree_budget = 0;
        if (std::none_of(shaped.begin(), shaped.end(), [&](const DraftSpec& o) { return o.Label() == t.Label(); }))
          shaped.push_back(t);
      }
      if (shaped.size() == before && (dr.lookahead || dr.rest)) shaped.push_back(dr);  // no axis shapes it
    }
    concrete.swap(shaped);
  }
  if (is_spec)
    for (DraftSpec& dr : concrete) {
      const std::string label = dr.Label();
      ApplyDecoderAlias(kind_name, dr, [&](std::string_view part) {
        return fmt::format("{}: {} '{}' ({})", c.file, draft_path, label, part);
      });
      if (dr.IsSelf())
        c.Bad(draft_path, fmt::format("{} needs a draft (layers=N, a quant type, model=NAME or lookup)", kind_name));
    }
  // Count first: refuse a grid too large to plan before allocating any of it.
  {
    const std::vector<std::pair<const char*, size_t>> axes = {
        {"models", models.size()}, {"target_quant", a.target_quant.size()}, {"input_length", a.input_length.size()},
        {"max_new_tokens", a.max_new_tokens.size()}, {"temperature", a.temperature.size()},
        {"top_k", a.top_k.size()}, {"top_p", a.top_p.size()}, {"seed", a.seed.size()}, {"threads", a.threads.size()},
        {"kv_type", a.kv_type.size()}, {"k", ks.size()}, {"k_policy", kps.size()},
        {"draft_p_min", a.draft_p_min.size()}, {"drafts", concrete.size()}};
    double n = 1;  // a double: the product of a hostile file's axes overflows 64 bits
    std::string product;
    for (auto& [name, size] : axes) {
      n *= double(size);
      if (size > 1) product += fmt::format("{}{} {}", product.empty() ? "" : " x ", size, name);
    }
    const double planned = n + double(ar.size() + spec.size());
    if (planned > double(budget.max_points))
      c.Bad(dp, fmt::format("plans {:.0f} points ({}{}), above {} of {}: raise max_points to plan it",
                            n, product.empty() ? "1" : product,
                            ar.size() + spec.size() ? fmt::format("; {} before it", ar.size() + spec.size()) : "",
                            budget.where, budget.max_points));
  }
  for (auto& model : models)
    for (auto& tq : a.target_quant)
      for (int in : a.input_length)
        for (int mnt : a.max_new_tokens)
          for (float temp : a.temperature)
            for (int topk : a.top_k)
              for (float topp : a.top_p)
                for (uint64_t seed : a.seed)
                  for (int thr : a.threads)
                    for (KvType kv : a.kv_type)
                      for (int k : ks)
                        for (KPolicy kp : kps)
                          for (float pmin : a.draft_p_min)
                            for (auto& dr : concrete)
                              for (auto& src : sources) {
                                // A model drafting for itself measures nothing; skipping
                                // it lets one draft list serve every target (e.g. two
                                // models drafting for each other).
                                if (is_spec && !dr.model.empty() && dr.model == model) continue;
                                Point pt;
                                pt.model = model;
                                pt.target_quant = tq;
                                pt.decoder = kind;
                                pt.input_length = in;
                                pt.max_new_tokens = mnt;
                                pt.sampling.temperature = temp;
                                if (temp > 0) {
                                  pt.sampling.top_k = topk;
                                  pt.sampling.top_p = topp;
                                  pt.sampling.seed = seed;
                                }
                                pt.threads = thr;
                                pt.kv_type = kv;
                                pt.prompt_category = prompt_category;
                                if (is_spec) {
                                  pt.k = k;
                                  pt.k_policy = kp;
                                  if (kp == KPolicy::Threshold) pt.draft_p_min = pmin;
                                  pt.draft = dr;
                                  pt.acceptance_source = src;
                                }
                                (is_spec ? spec : ar).push_back(pt);
                              }
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

}  // namespace specsweep
