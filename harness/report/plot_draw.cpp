// Drawing the plots: each plot's data file, its layout and the gnuplot run.
#include "harness/report/plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/ranges.h>

#include "harness/report/plot_layout.h"
#include "base/build_info.h"
#include "base/error.h"

namespace fs = std::filesystem;

namespace specsweep {

namespace {

bool Varies(const std::vector<AggregateRecord>& recs, const std::string& field) {
  std::set<std::string> vals;
  for (auto& r : recs) vals.insert(FieldText(r, field));
  return vals.size() > 1;
}

}  // namespace

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

namespace {

// A plot: its data and the layout of its text. The legend goes below the plot (the
// width kept for the curves) or, for the square predicted-vs-measured plot, beside it
// when it fits there; `extra` key entries besides the series, the point keys and the
// hollow marks (a reference line); subtitle lines of at most `wrap` characters. Point
// keys: the labels are K, drawn as marker shapes (else they are no key entries); bars:
// the labels are the groups, x tick labels; log_decade: a log y axis when the values
// span a decade.
struct PlotSpec {
  const char* name;
  const char* title;
  std::vector<Series> (*data)(const std::vector<AggregateRecord>&);
  bool key_right = false;
  int extra = 0;
  Canvas canvas{};
  size_t wrap = 150;
  bool point_keys = false, bars = false, log_decade = false;
  const char* intervals = nullptr;  // what the error bars are when not the speedup's bootstrap interval
  // Series come in pairs, measured and predicted (SpeedupVsBatch): a pair shares its
  // colour and its one key entry.
  bool paired = false;
  const char* axis = nullptr;  // a parameter the plot needs more than one value of (skipped otherwise)
};

const std::vector<PlotSpec>& PlotSpecs() {
  static const std::vector<PlotSpec> specs = {
      {"speedup_vs_k", "Speedup over autoregressive vs draft length K", SpeedupVsK, false, 1},
      {"acceptance_vs_k", "Per-token acceptance α vs draft length K", AcceptanceVsK},
      {"accepted_length_vs_k", "Mean accepted length τ vs draft length K", AcceptedLengthVsK},
      {"latency_vs_input_length", "Next-token latency vs prompt length", LatencyVsInputLength, false, 0, Canvas{}, 150,
       false, false, true},
      {"acceptance_per_position", "Conditional acceptance per draft position (n: steps that reached it)",
       AcceptancePerPosition, false, 0, Canvas{}, 150, false, false, false, "95% Wilson interval"},
      {"predicted_vs_measured", "Predicted (verify-cost model) vs measured speedup", PredictedVsMeasured, true, 1,
       Canvas{1100, 700}, 80, true},
      {"speedup_vs_batch", "Speedup over autoregressive at the same batch size vs batch size", SpeedupVsBatch, false, 2,
       Canvas{}, 150, false, false, false, nullptr, true, "batch"},
  };
  return specs;
}

// `plot --by category`: Spec-Bench's leaderboard as grouped bars, methods x task groups.
const std::vector<PlotSpec>& CategorySpecs() {
  static const std::vector<PlotSpec> specs = {
      {"speedup_by_category", "Speedup over autoregressive per task group", SpeedupByCategory, false, 1, Canvas{}, 150,
       false, true},
      {"accepted_length_by_category", "Mean accepted length τ per task group", AcceptedLengthByCategory, false, 0,
       Canvas{}, 150, false, true},
  };
  return specs;
}

// x ticks at the measured values only (K, prompt lengths), when they are few; for bars
// the groups' names at their centres, broken into lines of about 14 characters.
std::string XTics(const std::vector<Series>& series, const std::vector<std::string>& groups) {
  std::string xtics;
  if (!groups.empty()) {
    for (size_t g = 0; g < groups.size(); ++g) {
      std::string name = WrapParts(std::regex_replace(groups[g], std::regex(" "), "; "), 14);
      name = std::regex_replace(name, std::regex("; "), " ");
      name = std::regex_replace(name, std::regex("\n"), "\\n");
      std::erase(name, '\''), std::erase(name, '"');
      xtics += fmt::format("{}\"{}\" {}", xtics.empty() ? "" : ", ", name, g);
    }
    return xtics;
  }
  std::set<double> xs;
  for (auto& se : series)
    for (auto& [x, y] : se.xy) xs.insert(x);
  if (xs.size() <= 16)
    for (double x : xs) xtics += (xtics.empty() ? "" : ",") + fmt::format("{}", x);
  return xtics;
}

// The title's lines below the plot's name, '|' between them (common.gp breaks them
// there): the subtitle, wrapped, naming the error bars only on a plot that has them, then
// the caption.
std::string TitleLines(std::string subtitle, const std::string& caption, bool errorbars, const PlotSpec& s) {
  const size_t wrap = s.wrap;
  if (const size_t at = subtitle.find("; error bars:"); at != std::string::npos && (!errorbars || s.intervals))
    subtitle = subtitle.substr(0, at) + (errorbars ? fmt::format("; error bars: {}", s.intervals) : "");
  subtitle = WrapParts(subtitle, wrap);
  if (!caption.empty()) subtitle += (subtitle.empty() ? "" : "\n") + WrapParts(caption, wrap);
  std::replace(subtitle.begin(), subtitle.end(), '\n', '|');
  return subtitle;
}

std::string Literal(std::string text) {
  std::erase(text, '\'');  // passed in gnuplot's single quotes
  return "'" + text + "'";
}

// The gnuplot settings of plot `s` of `series` (common.gp lists them).
std::vector<std::pair<std::string, std::string>> PlotVars(const PlotSpec& s, const std::vector<Series>& series,
                                                          const std::vector<std::string>& groups, const PlotOptions& o,
                                                          const std::string& base) {
  const bool errorbars = std::any_of(series.begin(), series.end(), [](const Series& x) { return !x.ci.empty(); });
  const std::string marks = MarksKey(series);
  const std::vector<std::string> keys = s.point_keys ? PointKeys(series) : std::vector<std::string>{};
  const std::string note = WrapParts(SuspectNote(series), s.wrap * 5 / 4);  // in the legend's smaller font
  // A pair's predicted series has no key entry and its measured one's style.
  std::vector<Series> keyed;
  for (size_t i = 0; i < series.size(); i += s.paired ? 2 : 1) keyed.push_back(series[i]);
  KeyText key = KeyTextOf(keyed, marks, keys, s.extra);
  const bool right = s.key_right && KeyFitsRight(s.canvas, key);
  Canvas canvas = right ? CanvasForKeyRight(s.canvas, key) : CanvasForKeyBelow(s.canvas, key);
  canvas.height += note.empty() ? 0 : 16 * int(std::count(note.begin(), note.end(), '\n') + 2);
  std::vector<std::string> colours, dashes, shapes;
  for (const SeriesStyle& st : SeriesStyles(keyed))
    for (int copy = 0; copy < (s.paired ? 2 : 1); ++copy) {
      colours.push_back(st.colour), dashes.push_back(std::to_string(st.dash));
      shapes.push_back(std::to_string(st.shape));
    }
  std::string note_lines = note;
  std::replace(note_lines.begin(), note_lines.end(), '\n', '|');
  return {{"datafile", Literal(base + ".dat")},
          {"outbase", Literal(base)},
          {"plottitle", Literal(s.title)},
          {"plotsubtitle", Literal(TitleLines(o.subtitle, o.caption, errorbars, s))},
          {"xticvals", Literal(XTics(series, groups))},
          {"markkey", Literal(marks)},
          {"canvas", Literal(fmt::format("{},{}", canvas.width, canvas.height))},
          {"pointkeys", Literal(fmt::format("{}", fmt::join(keys, "|")))},
          {"errorbars", errorbars ? "1" : "0"},
          {"keyside", Literal(right ? "right" : "below")},
          {"colours", Literal(fmt::format("{}", fmt::join(colours, "|")))},
          {"dashes", Literal(fmt::format("{}", fmt::join(dashes, "|")))},
          {"shapes", Literal(fmt::format("{}", fmt::join(shapes, "|")))},
          {"logy", s.log_decade && SpansDecade(series) ? "1" : "0"},
          {"note", Literal(note_lines)},
          {"boxwidth", fmt::format("{}", BarWidth(series.size()))},
          {"ngroups", std::to_string(groups.size())}};
}

// Runs gnuplot on `script` with the -e assignments `vars`; Error with its last output
// line when it fails.
void RunGnuplot(const std::string& gnuplot, const std::string& script, const std::string& vars,
                const std::string& err) {
  std::string cmd = Quote(gnuplot) + " -e " + Quote(vars) + " " + Quote(script) + " >" + Quote(err) + " 2>&1";
  int status = std::system(cmd.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream f(err);
    std::string line, last;
    while (std::getline(f, line))
      if (!line.empty()) last = line;
    Fail("plot: {}: gnuplot failed: {}", script, last.empty() ? "exit status " + std::to_string(status) : last);
  }
  fs::remove(err);
}

// Writes the data of figure `f` and draws it with its script in `scripts`: PNG and SVG,
// and PDF (pdfcairo) or, from a gnuplot without it, EPS.
void DrawPlot(const PlotFigure& f, const std::string& gnuplot, const std::string& scripts, const std::string& out_dir,
              PlotOutput& p) {
  const std::string base = (fs::path(out_dir) / f.name).string();
  p.dat = base + ".dat";
  {
    std::ofstream out(p.dat);
    if (!out) Fail("plot: {}: cannot write", p.dat);
    out << f.dat;
  }
  std::string script = (fs::path(scripts) / (f.name + ".gp")).string();
  if (!fs::exists(script)) Fail("plot: {}: script not found", script);
  std::string vars;
  for (auto& [name, value] : f.vars) vars += (vars.empty() ? "" : "; ") + name + "=" + value;
  for (const char* ext : {".png", ".svg", ".pdf", ".eps"}) fs::remove(base + ext);
  RunGnuplot(gnuplot, script, vars, base + ".gnuplot.log");
  for (const char* ext : {".png", ".svg"}) {
    if (!fs::exists(base + ext)) Fail("plot: {}: gnuplot wrote no {}", script, base + ext);
    p.images.push_back(base + ext);
  }
  if (fs::exists(base + ".pdf"))
    p.images.push_back(base + ".pdf");
  else if (fs::exists(base + ".eps"))
    p.images.push_back(base + ".eps"), p.note = "no PDF: this gnuplot has no pdfcairo terminal (EPS instead)";
  else
    p.note = "no PDF: this gnuplot has neither pdfcairo nor an EPS terminal";
}

}  // namespace

std::string PlotFigure::Var(const std::string& name) const {
  for (auto& [n, v] : vars)
    if (n == name) return v;
  return "";
}

std::vector<PlotFigure> PlotFigures(const std::vector<AggregateRecord>& records, const PlotOptions& o) {
  std::vector<PlotFigure> out;
  const std::vector<std::string> groups = o.by_category ? PlotCategories(records) : std::vector<std::string>{};
  for (const PlotSpec& s : o.by_category ? CategorySpecs() : PlotSpecs()) {
    PlotFigure f;
    f.name = s.name;
    f.series = s.data(records);
    if (f.name == "latency_vs_input_length" && !Varies(records, "input_length"))
      f.skipped = "the experiment has no input_length axis";
    else if (s.axis && !Varies(records, s.axis))
      f.skipped = fmt::format("the experiment has no {} axis", s.axis);
    else if (f.series.empty())
      f.skipped = "no data points for this plot in the results";
    if (!f.skipped.empty()) {
      out.push_back(f);
      continue;
    }
    for (Series& series : f.series) series.title = FitKeyTitle(series.title);
    f.dat = DatText(s.title, f.series);
    f.vars =
        PlotVars(s, f.series, s.bars ? groups : std::vector<std::string>{}, o, (fs::path(o.out_dir) / s.name).string());
    out.push_back(f);
  }
  return out;
}

std::vector<PlotOutput> MakePlots(const std::vector<AggregateRecord>& records, const PlotOptions& o) {
  std::string gnuplot = o.gnuplot.empty() ? FindGnuplot() : o.gnuplot;
  if (gnuplot.empty() || access(gnuplot.c_str(), X_OK) != 0)
    Fail("plot: gnuplot: not found{} (install gnuplot, e.g. apt-get install gnuplot-nox, or pass --gnuplot PATH)",
         gnuplot.empty() ? " in PATH" : " at '" + gnuplot + "'");
  std::string scripts = o.scripts_dir.empty() ? std::string(SourceDir()) + "/plots" : o.scripts_dir;
  fs::create_directories(o.out_dir);
  std::vector<PlotOutput> out;
  for (const PlotFigure& f : PlotFigures(records, o)) {
    PlotOutput p;
    p.name = f.name;
    p.skipped = f.skipped;
    if (p.skipped.empty()) DrawPlot(f, gnuplot, scripts, o.out_dir, p);
    out.push_back(p);
  }
  return out;
}

}  // namespace specsweep
