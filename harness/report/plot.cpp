#include "harness/report/plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/ranges.h>

#include "decoders/draft_spec.h"
#include "harness/report/aggregate.h"
#include "harness/report/plot_layout.h"
#include "harness/report/table_cells.h"
#include "harness/store/results.h"
#include "base/build_info.h"
#include "base/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {

namespace {

bool IsSpec(const json& r) { return FieldText(r, "decoder") != "ar"; }

// Parameters that take more than one value among `recs`, minus `exclude`. "-" (a field
// that does not apply, e.g. k_policy of an AR point) and absent fields are no value, so
// they never make a field vary.
std::vector<std::string> VaryingFields(const std::vector<const json*>& recs, const std::set<std::string>& exclude) {
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
std::string ShortDraft(const json& r) {
  std::string label = FieldText(r, "draft");
  if (label.empty()) {  // records without the whole label: its base and quant
    const std::string base = FieldText(r, "draft_base"), q = FieldText(r, "draft_quant");
    const bool has_q = !q.empty() && q != "none" && q != "-";
    label = base.empty() || base == "self" ? (has_q ? q : "self") : base + (has_q ? "+" + q : "");
  }
  DraftSpec d;
  try {
    d = ParseDraftSpec(label, "draft");
  } catch (const Error&) {
    return label;  // a draft this version does not know: as written
  }
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
  return f == "draft" || f == "draft_base" || f == "draft_quant" || f == "max_ngram" || f == "min_ngram";
}

std::string SeriesTitle(const json& r, const std::vector<std::string>& fields) {
  std::string t;
  bool draft_said = false;
  const bool ar = FieldText(r, "decoder") == "ar";
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
      if (!std::exchange(draft_said, true) && !ar)
        t += (t.empty() ? "" : " ") + ShortDraft(r);
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
  // A replayed point says so in its legend even when every point is replayed alike.
  if (IsReplayed(r) && std::find(fields.begin(), fields.end(), "acceptance_source") == fields.end())
    t += (t.empty() ? "" : " ") + AcceptanceCaptionOf(r);
  return t.empty() ? "all" : t;
}

// Groups records into series by the varying fields except `x_fields`, with the point
// of a record from fn (skipped when x or y is not finite).
template <typename F>
std::vector<Series> Group(const std::vector<const json*>& recs, const std::set<std::string>& x_fields, F point) {
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

// A suspect speedup is no result: it is not plotted.
bool Suspect(const json& r) { return FieldText(r, "suspect") == "true"; }

bool Varies(const std::vector<json>& recs, const std::string& field) {
  std::set<std::string> vals;
  for (auto& r : recs) vals.insert(FieldText(r, field));
  return vals.size() > 1;
}

std::vector<const json*> Spec(const std::vector<json>& recs) {
  std::vector<const json*> out;
  for (auto& r : recs)
    if (IsSpec(r)) out.push_back(&r);
  return out;
}

}  // namespace

std::vector<Series> SpeedupVsK(const std::vector<json>& recs) {
  return Group(Spec(recs), {"k"}, [](const json& r) {
    if (Suspect(r)) return Pt{};
    return Pt{FieldNumber(r, "k"), FieldNumber(r, "speedup"), FieldNumber(r, "speedup_ci_low"),
              FieldNumber(r, "speedup_ci_high"), "", PointMarks(r)};
  });
}

// A metric against K, with its interval when the results hold one (METRIC_ci_low/high).
std::vector<Series> MetricVsK(const std::vector<json>& recs, const std::string& metric) {
  return Group(Spec(recs), {"k"}, [&](const json& r) {
    return Pt{FieldNumber(r, "k"), FieldNumber(r, metric), FieldNumber(r, metric + "_ci_low"),
              FieldNumber(r, metric + "_ci_high")};
  });
}

// Per-token acceptance alpha, not accepted/drafted: the latter falls with K by
// construction (a position is drafted only after every earlier one was accepted).
std::vector<Series> AcceptanceVsK(const std::vector<json>& recs) { return MetricVsK(recs, "alpha"); }
std::vector<Series> AcceptedLengthVsK(const std::vector<json>& recs) {
  return MetricVsK(recs, "mean_accepted_length");
}

std::vector<Series> LatencyVsInputLength(const std::vector<json>& recs) {
  std::vector<const json*> all;
  for (auto& r : recs) all.push_back(&r);
  // x is the measured prompt length, so natural prompts plot at their real length.
  return Group(all, {"input_length"}, [](const json& r) {
    Pt p{FieldNumber(r, "prompt_tokens"), 1e3 * FieldNumber(r, "mean_next_token_latency_s")};
    p.marks = PointMarks(r);
    return p;
  });
}

std::vector<Series> AcceptancePerPosition(const std::vector<json>& recs) {
  // One curve per draft configuration, at its largest K (which covers every position).
  std::vector<const json*> spec = Spec(recs);
  auto fields = VaryingFields(spec, {"k"});
  std::map<std::string, const json*> best;
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
    const json& r = *best[t];
    Series s;
    s.title = t + " " + KLabelOf(r);
    // Conditional: accepted at i+1 given i accepted (the unconditional rate falls with
    // i by construction; the results hold both).
    if (r.contains("acceptance_at_pos_conditional") && r["acceptance_at_pos_conditional"].is_array()) {
      const json& a = r["acceptance_at_pos_conditional"];
      for (size_t i = 0; i < a.size(); ++i)
        if (a[i].is_number()) s.xy.emplace_back(double(i + 1), a[i].get<double>());
    }
    if (!s.xy.empty()) out.push_back(s);
  }
  return out;
}

std::vector<Series> PredictedVsMeasured(const std::vector<json>& recs) {
  std::vector<const json*> spec = Spec(recs);
  auto fields = VaryingFields(spec, {});
  std::set<std::string> keep = {"model", "decoder", "draft_base", "draft_quant", "acceptance_source"};
  std::set<std::string> exclude;
  for (auto& f : fields)
    if (!keep.count(f)) exclude.insert(f);
  for (auto& f : ParamFields())
    if (!keep.count(f)) exclude.insert(f);
  return Group(spec, exclude, [](const json& r) {
    if (Suspect(r)) return Pt{};
    std::string label = KLabelOf(r);  // K: the marker shape (PointKeys); the draft is the series' colour
    return Pt{FieldNumber(r, "predicted_speedup"), FieldNumber(r, "speedup"), FieldNumber(r, "speedup_ci_low"),
              FieldNumber(r, "speedup_ci_high"), label, PointMarks(r)};
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

std::string FindGnuplot() {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    fs::path p = fs::path(dir) / "gnuplot";
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

static std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<PlotOutput> MakePlots(const std::vector<json>& records, const PlotOptions& o) {
  std::string gnuplot = o.gnuplot.empty() ? FindGnuplot() : o.gnuplot;
  if (gnuplot.empty() || access(gnuplot.c_str(), X_OK) != 0)
    Fail("plot: gnuplot: not found{} (install gnuplot, e.g. apt-get install gnuplot-nox, or pass --gnuplot PATH)",
         gnuplot.empty() ? " in PATH" : " at '" + gnuplot + "'");
  std::string scripts = o.scripts_dir.empty() ? std::string(SourceDir()) + "/plots" : o.scripts_dir;
  fs::create_directories(o.out_dir);

  // The legend below the plot (the width kept for the curves) or, for the square
  // predicted-vs-measured plot, beside it when it fits there; `extra` key entries besides
  // the series, the point keys and the hollow marks (a reference line); subtitle lines of
  // at most `wrap` characters.
  struct Spec {
    const char* name;
    const char* title;
    std::vector<Series> (*data)(const std::vector<json>&);
    bool key_right = false;
    int extra = 0;
    Canvas canvas{};
    size_t wrap = 150;
  };
  const Spec specs[] = {
      {"speedup_vs_k", "Speedup over autoregressive vs draft length K", SpeedupVsK, false, 1},
      {"acceptance_vs_k", "Per-token acceptance alpha vs draft length K", AcceptanceVsK},
      {"accepted_length_vs_k", "Mean accepted length tau vs draft length K", AcceptedLengthVsK},
      {"latency_vs_input_length", "Next-token latency vs prompt length", LatencyVsInputLength},
      {"acceptance_per_position", "Conditional acceptance per draft position", AcceptancePerPosition},
      {"predicted_vs_measured", "Predicted (verify-cost model) vs measured speedup", PredictedVsMeasured, true, 1,
       Canvas{1100, 700}, 80},
  };
  std::vector<PlotOutput> out;
  for (auto& s : specs) {
    PlotOutput p;
    p.name = s.name;
    std::vector<Series> series = s.data(records);
    if (std::string(s.name) == "latency_vs_input_length" && !Varies(records, "input_length")) {
      p.skipped = "the experiment has no input_length axis";
      out.push_back(p);
      continue;
    }
    if (series.empty()) {
      p.skipped = "no data points for this plot in the results";
      out.push_back(p);
      continue;
    }
    // x ticks at the measured values only (K, prompt lengths), when they are few.
    std::set<double> xs;
    for (auto& se : series)
      for (auto& [x, y] : se.xy) xs.insert(x);
    std::string xtics;
    if (xs.size() <= 16)
      for (double x : xs) xtics += (xtics.empty() ? "" : ",") + fmt::format("{}", x);
    std::string base = (fs::path(o.out_dir) / s.name).string();
    p.dat = base + ".dat";
    {
      std::ofstream f(p.dat);
      if (!f) Fail("plot: {}: cannot write", p.dat);
      f << DatText(s.title, series);
    }
    std::string script = (fs::path(scripts) / (std::string(s.name) + ".gp")).string();
    if (!fs::exists(script)) Fail("plot: {}: script not found", script);
    // The subtitle names the error bars only on a plot that has them.
    std::string subtitle = o.subtitle;
    const bool errorbars = std::any_of(series.begin(), series.end(), [](const Series& x) { return !x.ci.empty(); });
    if (!errorbars)
      if (const size_t at = subtitle.find("; error bars:"); at != std::string::npos) subtitle.resize(at);
    subtitle = WrapParts(subtitle, s.wrap);
    std::replace(subtitle.begin(), subtitle.end(), '\n', '|');  // common.gp breaks the lines there
    const std::string marks = MarksKey(series);
    const std::vector<std::string> keys = PointKeys(series);
    const KeyText key = KeyTextOf(series, marks, keys, s.extra);
    const bool right = s.key_right && KeyFitsRight(s.canvas, key);
    const Canvas canvas = right ? CanvasForKeyRight(s.canvas, key) : CanvasForKeyBelow(s.canvas, key);
    std::string err = base + ".gnuplot.log";
    std::string cmd =
        Quote(gnuplot) + " -e " +
        Quote(fmt::format("datafile='{}'; outbase='{}'; plottitle='{}'; plotsubtitle='{}'; xticvals='{}'; markkey='{}'; "
                          "canvas='{},{}'; pointkeys='{}'; errorbars={:d}; keyside='{}'",
                          p.dat, base, s.title, subtitle, xtics, marks, canvas.width, canvas.height,
                          fmt::join(keys, "|"), errorbars, right ? "right" : "below")) +
        " " + Quote(script) + " >" + Quote(err) + " 2>&1";
    int status = std::system(cmd.c_str());
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::ifstream f(err);
      std::string line, last;
      while (std::getline(f, line))
        if (!line.empty()) last = line;
      Fail("plot: {}: gnuplot failed: {}", script, last.empty() ? "exit status " + std::to_string(status) : last);
    }
    fs::remove(err);
    for (const char* ext : {".png", ".svg"}) {
      if (!fs::exists(base + ext)) Fail("plot: {}: gnuplot wrote no {}", script, base + ext);
      p.images.push_back(base + ext);
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace specsweep
