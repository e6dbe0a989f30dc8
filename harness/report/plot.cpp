// Series of the plots from aggregated records: what each plot shows, legends from the
// axes that vary, the marks of busy and wide points (drawn in plot_draw.cpp).
#include "harness/report/plot.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include <fmt/ranges.h>

#include "decoders/draft_spec.h"
#include "harness/report/aggregate.h"
#include "harness/report/plot_layout.h"
#include "harness/report/table_cells.h"
#include "harness/store/results.h"

using nlohmann::json;

namespace specsweep {

namespace {

// Parameters that take more than one value among `recs`, minus `exclude`. "-" (a field
// that does not apply, e.g. k_policy of an AR point) and absent fields are no value, so
// they never make a field vary.
std::vector<std::string> VaryingFields(const std::vector<const AggregateRecord*>& recs,
                                       const std::set<std::string>& exclude) {
  std::vector<std::string> out;
  for (auto& f : ParamFields()) {
    if (exclude.count(f)) continue;
    std::set<std::string> vals;
    for (auto* r : recs) {
      const std::string v = FieldText(*r, f);
      if (!v.empty() && v != "-") vals.insert(v);
    }
    if (vals.size() > 1) out.push_back(f);
  }
  return out;
}

// One plotted point: y with its interval, a label and the table's marks (PointMarks).
struct Pt {
  double x = NAN, y = NAN, lo = NAN, hi = NAN;
  std::string label{};  // initializers, so Pt{x, y} is complete for -Wmissing-field-initializers
  std::string marks{};
};

// A draft in short words for a legend: "q4_0 self-draft", "early exit L=1", "lookup n<=3",
// "tinystories-656k draft", "early exit L=2 q8_0".
std::string ShortDraft(const AggregateRecord& r) {
  const std::string& label = r.identity.draft_label;
  if (!r.identity.draft) return label;  // a draft this version does not know: as written
  const DraftSpec& d = *r.identity.draft;
  if (const LookupDraft* l = d.get<LookupDraft>())
    return l->min_ngram > 1 ? fmt::format("lookup {}<=n<={}", l->min_ngram, l->max_ngram)
                            : fmt::format("lookup n<={}", l->max_ngram);
  const std::string quant = d.quant() ? std::string(QTypeName(*d.quant())) : "";
  if (!d.model().empty())
    return d.model() + " draft" + (d.layers() ? fmt::format(" L={}", d.layers()) : "") +
           (quant.empty() ? "" : " " + quant);
  if (d.layers()) return fmt::format("early exit L={}", d.layers()) + (quant.empty() ? "" : " " + quant);
  return quant.empty() ? label : quant + " self-draft";
}

bool IsDraftField(const std::string& f) {
  return f == "draft" || f == "draft_base" || f == "draft_quant" || f == "max_ngram" || f == "min_ngram" ||
         f == "draft_tokenizer";
}

// The draft of a legend, a bridged one marked as in the tables (kBridgedMark).
std::string DraftWords(const AggregateRecord& r) { return ShortDraft(r) + (Bridged(r) ? kBridgedMark : ""); }

std::string SeriesTitle(const AggregateRecord& r, const std::vector<std::string>& fields) {
  std::string t;
  bool draft_said = false;
  const bool ar = !r.Speculative();
  const bool draft_varies = std::any_of(fields.begin(), fields.end(), IsDraftField);
  for (auto& f : fields) {
    // AR drafts nothing: its K (0) is no value. A named draft already says "speculative".
    if (ar && f == "k") continue;
    if (f == "decoder" && (ar || !draft_varies)) {
      t += (t.empty() ? "" : " ") + std::string(ar ? "AR" : FieldText(r, f));
      continue;
    }
    if (f == "decoder") continue;
    if (IsDraftField(f)) {
      if (!std::exchange(draft_said, true) && !ar) t += (t.empty() ? "" : " ") + DraftWords(r);
      continue;
    }
    std::string v = FieldText(r, f);
    // Bare values read well for names; numeric knobs keep their field name.
    bool bare = f == "model" || f == "decoder" || f == "draft_base" || f == "target_quant";
    if (f == "target_quant") v = "target " + v;
    if (f == "kv_type") v = "KV " + v, bare = true;
    // x is K: say what K is under the policy (KLabel).
    if (f == "k_policy" && (v == "threshold" || v == "adaptive")) v += " (K = bound)", bare = true;
    if (f == "k_policy" && v == "heuristic") v += " (K = start)", bare = true;
    if (f == "acceptance_source") v = AcceptanceCaptionOf(r), bare = true;
    t += (t.empty() ? "" : " ") + (bare ? v : f + "=" + v);
  }
  // A bridged draft and a replayed point say so in their legend even when every point is alike.
  if (Bridged(r) && !draft_said) t += (t.empty() ? "" : " ") + DraftWords(r);
  if (IsReplayed(r) && std::find(fields.begin(), fields.end(), "acceptance_source") == fields.end())
    t += (t.empty() ? "" : " ") + AcceptanceCaptionOf(r);
  return t.empty() ? "all" : t;
}

// Groups records into series by the varying fields except `x_fields`, with the point
// of a record from fn (skipped when x or y is not finite).
template <typename F>
std::vector<Series> Group(const std::vector<const AggregateRecord*>& recs, const std::set<std::string>& x_fields,
                          F point) {
  auto fields = VaryingFields(recs, x_fields);
  std::map<std::string, std::vector<Pt>> by;
  std::vector<std::string> order;
  bool any_ci = false, any_label = false, any_marks = false;
  for (auto* r : recs) {
    Pt p = point(*r);
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
    std::string t = SeriesTitle(*r, fields);
    if (!by.count(t)) order.push_back(t);
    any_ci = any_ci || std::isfinite(p.lo);
    any_label = any_label || !p.label.empty();
    any_marks = any_marks || !p.marks.empty();
    by[t].push_back(p);
  }
  std::vector<Series> out;
  for (auto& t : order) {
    auto& pts = by[t];
    std::sort(pts.begin(), pts.end(), [](const Pt& a, const Pt& b) { return a.x < b.x; });
    Series s;
    s.title = t;
    for (auto& p : pts) {
      s.xy.emplace_back(p.x, p.y);
      if (any_ci) s.ci.emplace_back(std::isfinite(p.lo) ? p.lo : p.y, std::isfinite(p.hi) ? p.hi : p.y);
      if (any_label) s.labels.push_back(p.label);
      if (any_marks) s.marks.push_back(p.marks);
    }
    out.push_back(s);
  }
  return out;
}

std::vector<const AggregateRecord*> Spec(const std::vector<AggregateRecord>& recs) {
  std::vector<const AggregateRecord*> out;
  for (auto& r : recs)
    if (r.Speculative()) out.push_back(&r);
  return out;
}

}  // namespace

std::vector<Series> SpeedupVsK(const std::vector<AggregateRecord>& recs) {
  return Group(Spec(recs), {"k"}, [](const AggregateRecord& r) {
    if (r.Suspect()) return Pt{};  // a suspect speedup is no result: not plotted
    return Pt{FieldNumber(r, "k"),
              FieldNumber(r, "speedup"),
              FieldNumber(r, "speedup_ci_low"),
              FieldNumber(r, "speedup_ci_high"),
              "",
              PointMarks(r)};
  });
}

// A metric against K, with its interval when the results hold one (METRIC_ci_low/high).
std::vector<Series> MetricVsK(const std::vector<AggregateRecord>& recs, const std::string& metric) {
  return Group(Spec(recs), {"k"}, [&](const AggregateRecord& r) {
    return Pt{FieldNumber(r, "k"), FieldNumber(r, metric), FieldNumber(r, metric + "_ci_low"),
              FieldNumber(r, metric + "_ci_high")};
  });
}

// Per-token acceptance alpha, not accepted/drafted: the latter falls with K by
// construction (a position is drafted only after every earlier one was accepted).
std::vector<Series> AcceptanceVsK(const std::vector<AggregateRecord>& recs) { return MetricVsK(recs, "alpha"); }
std::vector<Series> AcceptedLengthVsK(const std::vector<AggregateRecord>& recs) {
  return MetricVsK(recs, "mean_accepted_length");
}

std::vector<Series> LatencyVsInputLength(const std::vector<AggregateRecord>& recs) {
  std::vector<const AggregateRecord*> all;
  for (auto& r : recs) all.push_back(&r);
  // x is the measured prompt length, so natural prompts plot at their real length.
  return Group(all, {"input_length"}, [](const AggregateRecord& r) {
    Pt p{FieldNumber(r, "prompt_tokens"), 1e3 * FieldNumber(r, "mean_next_token_latency_s")};
    p.marks = PointMarks(r);
    return p;
  });
}

std::vector<Series> AcceptancePerPosition(const std::vector<AggregateRecord>& recs) {
  // One curve per draft configuration, at its largest K (which covers every position).
  std::vector<const AggregateRecord*> spec = Spec(recs);
  auto fields = VaryingFields(spec, {"k"});
  std::map<std::string, const AggregateRecord*> best;
  std::vector<std::string> order;
  for (auto* r : spec) {
    std::string t = SeriesTitle(*r, fields);
    if (!best.count(t)) {
      order.push_back(t);
      best[t] = r;
    } else if (FieldNumber(*r, "k") > FieldNumber(*best[t], "k")) {
      best[t] = r;
    }
  }
  std::vector<Series> out;
  for (auto& t : order) {
    const AggregateRecord& r = *best[t];
    Series s;
    s.title = t + " " + KLabelOf(r);
    // Conditional: accepted at i+1 given i accepted (the unconditional rate falls with
    // i by construction; the results hold both).
    const std::vector<double>& a = r.positions.acceptance_at_pos_conditional;
    for (size_t i = 0; i < a.size(); ++i)
      if (std::isfinite(a[i])) s.xy.emplace_back(double(i + 1), a[i]);
    if (!s.xy.empty()) out.push_back(s);
  }
  return out;
}

std::vector<Series> PredictedVsMeasured(const std::vector<AggregateRecord>& recs) {
  std::vector<const AggregateRecord*> spec = Spec(recs);
  auto fields = VaryingFields(spec, {});
  std::set<std::string> keep = {"model", "decoder", "draft_base", "draft_quant", "acceptance_source"};
  std::set<std::string> exclude;
  for (auto& f : fields)
    if (!keep.count(f)) exclude.insert(f);
  for (auto& f : ParamFields())
    if (!keep.count(f)) exclude.insert(f);
  return Group(spec, exclude, [](const AggregateRecord& r) {
    if (r.Suspect()) return Pt{};     // a suspect speedup is no result: not plotted
    std::string label = KLabelOf(r);  // K: the marker shape (PointKeys); the draft is the series' colour
    return Pt{FieldNumber(r, "predicted_speedup"),
              FieldNumber(r, "speedup"),
              FieldNumber(r, "speedup_ci_low"),
              FieldNumber(r, "speedup_ci_high"),
              label,
              PointMarks(r)};
  });
}

std::string DatText(const std::string& title, const std::vector<Series>& series) {
  std::string out = "# " + title + "\n";
  for (size_t i = 0; i < series.size(); ++i) {
    if (i) out += "\n\n";
    std::string t = series[i].title;
    std::replace(t.begin(), t.end(), '"', '\'');
    out += "\"" + t + "\"\n";
    const Series& se = series[i];
    for (size_t j = 0; j < se.xy.size(); ++j) {
      auto [x, y] = se.xy[j];
      auto [lo, hi] = j < se.ci.size() ? se.ci[j] : std::make_pair(y, y);
      std::string label = j < se.labels.size() ? se.labels[j] : "";
      std::replace(label.begin(), label.end(), '"', '\'');
      const std::string marks = j < se.marks.size() ? se.marks[j] : "";
      out += fmt::format("{} {} {} {} \"{}\" \"{}\"\n", x, y, lo, hi, label, marks);
    }
  }
  return out;
}

std::string MarksKey(const std::vector<Series>& series) {
  bool busy = false, wide = false;
  for (auto& se : series)
    for (auto& m : se.marks) busy |= m.find("†") != std::string::npos, wide |= m.find("‡") != std::string::npos;
  std::vector<std::string> says;
  if (busy) says.push_back("hollow: † host busy while measured");
  if (wide) says.push_back(fmt::format("hollow: ‡ 95% CI wider than ±{:.0f}%", 100 * kWideInterval));
  return fmt::format("{}", fmt::join(says, "|"));
}

}  // namespace specsweep
