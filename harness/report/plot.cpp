// Series of the plots from aggregated records: what each plot shows, legends from the
// axes that vary, the marks of busy and wide points (drawn in plot_draw.cpp).
#include "harness/report/plot.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include <fmt/ranges.h>

#include "harness/report/aggregate.h"
#include "harness/report/category.h"
#include "harness/report/plot_layout.h"
#include "harness/report/table_cells.h"
#include "harness/store/results.h"

using nlohmann::json;

namespace specsweep {

namespace {

// One plotted point: y with its interval, a label and the table's marks (PointMarks).
struct Pt {
  double x = NAN, y = NAN, lo = NAN, hi = NAN;
  std::string label{};  // initializers, so Pt{x, y} is complete for -Wmissing-field-initializers
  std::string marks{};
  std::string suspect{};  // where a suspect point is ("k=4"): drawn hollow and named in the note
};

std::vector<AggregateRecord> Copies(const std::vector<const AggregateRecord*>& recs) {
  std::vector<AggregateRecord> out;
  for (auto* r : recs) out.push_back(*r);
  return out;
}

bool Varies(const std::vector<const AggregateRecord*>& recs, const std::string& field) {
  std::set<std::string> vals;
  for (auto* r : recs)
    if (r->Speculative()) vals.insert(FieldText(*r, field));
  return vals.size() > 1;
}

// How a plot names its series: a point's main-table row name (RowName over MainRowFields,
// so a draft has the table's name), then what the table says in its column and the
// plot's x does not: the K policy where x is K, the K label where x is not K.
struct Naming {
  std::vector<std::string> rows;
  bool policy = false, k = false;
  Naming(const std::vector<const AggregateRecord*>& recs, const std::vector<std::string>& x_fields) {
    std::vector<const AggregateRecord*> spec;
    for (auto* r : recs)
      if (r->Speculative()) spec.push_back(r);
    rows = MainRowFields(Copies(spec), x_fields);
    const bool x_is_k = std::find(x_fields.begin(), x_fields.end(), "k") != x_fields.end();
    policy = x_is_k && Varies(spec, "k_policy");
    k = !x_is_k && (Varies(spec, "k") || Varies(spec, "k_policy"));
  }
  std::string operator()(const AggregateRecord& r) const {
    std::string t = RowName(r, rows);
    if (!r.Speculative()) return t;
    std::string v = FieldText(r, "k_policy");
    if (v == "threshold" || v == "adaptive") v += " (K = bound)";
    if (v == "heuristic") v += " (K = start)";
    if (policy) t += ", " + v;
    if (k) t += ", " + KLabelOf(r);
    return t;
  }
};

// Groups records into series by `name`, with the point of a record from fn (skipped when
// x or y is not finite).
template <typename F>
std::vector<Series> Group(const std::vector<const AggregateRecord*>& recs, const Naming& name, F point) {
  std::map<std::string, std::vector<Pt>> by;
  std::vector<std::string> order;
  std::map<std::string, bool> ar;
  bool any_ci = false, any_label = false, any_marks = false;
  for (auto* r : recs) {
    Pt p = point(*r);
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
    std::string t = name(*r);
    if (!by.count(t)) order.push_back(t);
    ar[t] = !r->Speculative();
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
    s.ar = ar[t];
    for (auto& p : pts) {
      s.xy.emplace_back(p.x, p.y);
      if (any_ci) s.ci.emplace_back(std::isfinite(p.lo) ? p.lo : p.y, std::isfinite(p.hi) ? p.hi : p.y);
      if (any_label) s.labels.push_back(p.label);
      if (any_marks) s.marks.push_back(p.marks);
      if (!p.suspect.empty()) s.suspects.push_back(p.suspect);
    }
    out.push_back(s);
  }
  return out;
}

// A measured speedup with its interval and marks; a suspect one (above what the step
// counts and verify costs allow) is no result, but is drawn hollow and named, not dropped.
Pt SpeedupPt(const AggregateRecord& r, double x) {
  Pt p{x,
       FieldNumber(r, "speedup"),
       FieldNumber(r, "speedup_ci_low"),
       FieldNumber(r, "speedup_ci_high"),
       "",
       PointMarks(r)};
  if (r.Suspect()) p.marks += kSuspectMark, p.suspect = KLabelOf(r);
  return p;
}

std::vector<const AggregateRecord*> Spec(const std::vector<AggregateRecord>& recs) {
  std::vector<const AggregateRecord*> out;
  for (auto& r : recs)
    if (r.Speculative()) out.push_back(&r);
  return out;
}

}  // namespace

const char* const kSuspectMark = "suspect";

std::vector<Series> SpeedupVsK(const std::vector<AggregateRecord>& recs) {
  const auto spec = Spec(recs);
  return Group(spec, Naming(spec, {"k"}), [](const AggregateRecord& r) { return SpeedupPt(r, FieldNumber(r, "k")); });
}

// A metric against K, with its interval when the results hold one (METRIC_ci_low/high).
std::vector<Series> MetricVsK(const std::vector<AggregateRecord>& recs, const std::string& metric) {
  const auto spec = Spec(recs);
  return Group(spec, Naming(spec, {"k"}), [&](const AggregateRecord& r) {
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
  return Group(all, Naming(all, {"input_length"}), [](const AggregateRecord& r) {
    Pt p{FieldNumber(r, "prompt_tokens"), 1e3 * FieldNumber(r, "mean_next_token_latency_s")};
    p.marks = PointMarks(r);
    return p;
  });
}

std::pair<double, double> WilsonInterval(double k, double n) {
  if (!(n > 0)) return {NAN, NAN};
  const double z = 1.959963984540054, p = k / n, z2n = z * z / n;
  const double centre = (p + z2n / 2) / (1 + z2n), half = z * std::sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n);
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

// The conditional acceptance of `r` per draft position with its Wilson interval and n
// (the steps that reached the position: drafted it with every earlier one accepted); a
// position no step reached is a gap (0/0), not 0.
Series PositionSeries(const AggregateRecord& r, const std::string& title) {
  Series s;
  const auto& drafted = r.positions.drafted_at_pos;
  const auto& accepted = r.positions.accepted_at_pos;
  const auto& rates = r.positions.acceptance_at_pos_conditional;  // as stored, when a record holds no counts
  std::vector<std::string> ns;
  const size_t positions = drafted.empty() ? rates.size() : std::min(drafted.size(), accepted.size());
  for (size_t i = 0; i < positions; ++i) {
    if (drafted.empty()) {
      s.xy.emplace_back(double(i + 1), std::isfinite(rates[i]) ? rates[i] : NAN);
      s.ci.emplace_back(s.xy.back().second, s.xy.back().second);
      continue;
    }
    const double d = double(drafted[i]), a = double(accepted[i]);
    const double reached = i == 0 ? d : std::min(d, double(accepted[i - 1]));
    const auto [lo, hi] = WilsonInterval(a, reached);
    s.xy.emplace_back(double(i + 1), reached > 0 ? a / reached : NAN);
    s.ci.emplace_back(lo, hi);
    ns.push_back(fmt::format("{}", int64_t(reached)));
  }
  s.title = title + (ns.empty() ? "" : fmt::format(", n {}", fmt::join(ns, "/")));
  return s;
}

std::vector<Series> AcceptancePerPosition(const std::vector<AggregateRecord>& recs) {
  // One curve per draft configuration, at its largest K (which covers every position).
  std::vector<const AggregateRecord*> spec = Spec(recs);
  const Naming name(spec, {"k"});
  std::map<std::string, const AggregateRecord*> best;
  std::vector<std::string> order;
  for (auto* r : spec) {
    std::string t = name(*r);
    if (!best.count(t)) {
      order.push_back(t);
      best[t] = r;
    } else if (FieldNumber(*r, "k") > FieldNumber(*best[t], "k")) {
      best[t] = r;
    }
  }
  std::vector<Series> out;
  for (auto& t : order) {
    // Conditional: accepted at i+1 given i accepted (the unconditional rate falls with
    // i by construction; the results hold both).
    Series s = PositionSeries(*best[t], t + ", " + KLabelOf(*best[t]));
    if (std::any_of(s.xy.begin(), s.xy.end(), [](auto& xy) { return std::isfinite(xy.second); })) out.push_back(s);
  }
  return out;
}

std::vector<Series> PredictedVsMeasured(const std::vector<AggregateRecord>& recs) {
  std::vector<const AggregateRecord*> spec = Spec(recs);
  return Group(spec, Naming(spec, {"k"}), [](const AggregateRecord& r) {
    Pt p = SpeedupPt(r, FieldNumber(r, "predicted_speedup"));
    p.label = KLabelOf(r);  // K: the marker shape (PointKeys); the draft is the series' colour
    return p;
  });
}

std::vector<std::string> PlotCategories(const std::vector<AggregateRecord>& recs) {
  std::vector<std::string> order;
  bool overall = false;
  for (auto& r : recs) {
    const std::string c = FieldText(r, "category");
    if (c.empty() || c == "-") continue;
    if (c == kOverallCategory)
      overall = true;
    else if (std::find(order.begin(), order.end(), c) == order.end())
      order.push_back(c);
  }
  if (overall) order.push_back(kOverallCategory);
  return order;
}

double BarWidth(size_t methods) { return 0.8 / double(std::max<size_t>(methods, 1)); }

// Grouped bars (Spec-Bench's leaderboard as a figure): a series per method, its bar in
// group g at g + its offset among the methods, the group's name as the label.
std::vector<Series> ByCategory(const std::vector<AggregateRecord>& recs, const std::string& metric) {
  std::vector<const AggregateRecord*> spec;
  for (auto* r : Spec(recs))
    if (r->flat.contains("category")) spec.push_back(r);
  const std::vector<std::string> groups = PlotCategories(recs);
  const Naming name(spec, {"category", "prompt_category"});
  std::vector<std::string> methods;
  for (auto* r : spec)
    if (std::find(methods.begin(), methods.end(), name(*r)) == methods.end()) methods.push_back(name(*r));
  const double width = BarWidth(methods.size());
  return Group(spec, name, [&](const AggregateRecord& r) {
    const double g = double(std::find(groups.begin(), groups.end(), FieldText(r, "category")) - groups.begin());
    const double m = double(std::find(methods.begin(), methods.end(), name(r)) - methods.begin());
    const double x = g + (m - double(methods.size() - 1) / 2) * width;
    Pt p = metric == "speedup"
               ? SpeedupPt(r, x)
               : Pt{x, FieldNumber(r, metric), FieldNumber(r, metric + "_ci_low"), FieldNumber(r, metric + "_ci_high")};
    p.label = FieldText(r, "category");
    if (!p.suspect.empty()) p.suspect = p.label;
    return p;
  });
}

std::vector<Series> SpeedupByCategory(const std::vector<AggregateRecord>& recs) { return ByCategory(recs, "speedup"); }
std::vector<Series> AcceptedLengthByCategory(const std::vector<AggregateRecord>& recs) {
  return ByCategory(recs, "mean_accepted_length");
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
      if (!std::isfinite(y)) {  // a blank line breaks the curve: a gap, not a point at 0
        out += fmt::format("# {}: no data (0/0)\n\n", x);
        continue;
      }
      out += fmt::format("{} {} {} {} \"{}\" \"{}\"\n", x, y, lo, hi, label, marks);
    }
  }
  return out;
}

std::string MarksKey(const std::vector<Series>& series) {
  bool busy = false, wide = false;
  for (auto& se : series)
    for (auto& m : se.marks) busy |= m.find("†") != std::string::npos, wide |= m.find("‡") != std::string::npos;
  bool suspect = false;
  for (auto& se : series) suspect |= !se.suspects.empty();
  std::vector<std::string> says;
  if (suspect) says.push_back("hollow: suspect (see the note)");
  if (busy) says.push_back("hollow: † host busy while measured");
  if (wide)
    says.push_back(
        fmt::format("hollow: ‡ 95% CI wider than ±{:.0f}% or of < {} rounds", 100 * kWideInterval, kMinIntervalRounds));
  return fmt::format("{}", fmt::join(says, "|"));
}

std::string SuspectNote(const std::vector<Series>& series) {
  std::vector<std::string> where;
  for (auto& se : series)
    if (!se.suspects.empty()) where.push_back(fmt::format("{} at {}", se.title, fmt::join(se.suspects, ", ")));
  if (where.empty()) return "";
  return fmt::format("suspect, drawn hollow: speedup above what its step counts and verify costs allow (no result); {}",
                     fmt::join(where, "; "));
}

}  // namespace specsweep
