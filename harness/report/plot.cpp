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

// One plotted point: y with its interval and a label.
struct Pt {
  double x = NAN, y = NAN, lo = NAN, hi = NAN;
  std::string label{};  // an initializer, so Pt{x, y} is complete for -Wmissing-field-initializers
};

std::string SeriesTitle(const json& r, const std::vector<std::string>& fields) {
  std::string t;
  for (auto& f : fields) {
    std::string v = FieldText(r, f);
    // Bare values read well for names; numeric knobs keep their field name.
    bool bare = f == "model" || f == "decoder" || f == "draft_base" || f == "target_quant";
    if (f == "draft_quant") v = "draft " + v;
    if (f == "target_quant") v = "target " + v;
    // x is K: say what K is under the policy (KLabel).
    if (f == "k_policy" && (v == "threshold" || v == "adaptive")) v += " (K = bound)", bare = true;
    if (f == "k_policy" && v == "heuristic") v += " (K = start)", bare = true;
    if (f == "acceptance_source") v = AcceptanceCaptionOf(r), bare = true;
    t += (t.empty() ? "" : " ") + (bare || f == "draft_quant" ? v : f + "=" + v);
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
  bool any_ci = false, any_label = false;
  for (auto* r : recs) {
    Pt p = point(*r);
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
    std::string t = SeriesTitle(*r, fields);
    if (!by.count(t)) order.push_back(t);
    any_ci = any_ci || std::isfinite(p.lo);
    any_label = any_label || !p.label.empty();
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
              FieldNumber(r, "speedup_ci_high")};
  });
}

std::vector<Series> AcceptanceVsK(const std::vector<json>& recs) {
  return Group(Spec(recs), {"k"}, [](const json& r) {
    return Pt{FieldNumber(r, "k"), FieldNumber(r, "acceptance_rate")};
  });
}

std::vector<Series> LatencyVsInputLength(const std::vector<json>& recs) {
  std::vector<const json*> all;
  for (auto& r : recs) all.push_back(&r);
  // x is the measured prompt length, so natural prompts plot at their real length.
  return Group(all, {"input_length"}, [](const json& r) {
    return Pt{FieldNumber(r, "prompt_tokens"), 1e3 * FieldNumber(r, "mean_next_token_latency_s")};
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
    if (r.contains("acceptance_at_pos") && r["acceptance_at_pos"].is_array()) {
      const json& a = r["acceptance_at_pos"];
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
    std::string label = KLabelOf(r) + " " + FieldText(r, "draft");
    return Pt{FieldNumber(r, "predicted_speedup"), FieldNumber(r, "speedup"), FieldNumber(r, "speedup_ci_low"),
              FieldNumber(r, "speedup_ci_high"), label};
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
      out += fmt::format("{} {} {} {} \"{}\"\n", x, y, lo, hi, label);
    }
  }
  return out;
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

  struct Spec {
    const char* name;
    const char* title;
    std::vector<Series> (*data)(const std::vector<json>&);
  };
  const Spec specs[] = {
      {"speedup_vs_k", "Speedup over autoregressive vs draft length K", SpeedupVsK},
      {"acceptance_vs_k", "Acceptance rate vs draft length K", AcceptanceVsK},
      {"latency_vs_input_length", "Next-token latency vs prompt length", LatencyVsInputLength},
      {"acceptance_per_position", "Acceptance rate per draft position", AcceptancePerPosition},
      {"predicted_vs_measured", "Predicted (verify-cost model) vs measured speedup", PredictedVsMeasured},
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
    std::string err = base + ".gnuplot.log";
    std::string cmd = Quote(gnuplot) + " -e " +
                      Quote(fmt::format("datafile='{}'; outbase='{}'; plottitle='{}'; xticvals='{}'", p.dat, base, s.title, xtics)) + " " +
                      Quote(script) + " >" + Quote(err) + " 2>&1";
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
