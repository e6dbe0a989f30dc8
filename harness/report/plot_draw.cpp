// Drawing the plots: each plot's data file, its layout and the gnuplot run.
#include "harness/report/plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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
// hollow marks (a reference line); subtitle lines of at most `wrap` characters.
struct PlotSpec {
  const char* name;
  const char* title;
  std::vector<Series> (*data)(const std::vector<AggregateRecord>&);
  bool key_right = false;
  int extra = 0;
  Canvas canvas{};
  size_t wrap = 150;
};

const std::vector<PlotSpec>& PlotSpecs() {
  static const std::vector<PlotSpec> specs = {
      {"speedup_vs_k", "Speedup over autoregressive vs draft length K", SpeedupVsK, false, 1},
      {"acceptance_vs_k", "Per-token acceptance alpha vs draft length K", AcceptanceVsK},
      {"accepted_length_vs_k", "Mean accepted length tau vs draft length K", AcceptedLengthVsK},
      {"latency_vs_input_length", "Next-token latency vs prompt length", LatencyVsInputLength},
      {"acceptance_per_position", "Conditional acceptance per draft position", AcceptancePerPosition},
      {"predicted_vs_measured", "Predicted (verify-cost model) vs measured speedup", PredictedVsMeasured, true, 1,
       Canvas{1100, 700}, 80},
  };
  return specs;
}

// x ticks at the measured values only (K, prompt lengths), when they are few.
std::string XTics(const std::vector<Series>& series) {
  std::set<double> xs;
  for (auto& se : series)
    for (auto& [x, y] : se.xy) xs.insert(x);
  std::string xtics;
  if (xs.size() <= 16)
    for (double x : xs) xtics += (xtics.empty() ? "" : ",") + fmt::format("{}", x);
  return xtics;
}

// The subtitle of a plot, wrapped, lines separated by '|' (common.gp breaks them there);
// it names the error bars only on a plot that has them.
std::string PlotSubtitleLines(std::string subtitle, bool errorbars, size_t wrap) {
  if (!errorbars)
    if (const size_t at = subtitle.find("; error bars:"); at != std::string::npos) subtitle.resize(at);
  subtitle = WrapParts(subtitle, wrap);
  std::replace(subtitle.begin(), subtitle.end(), '\n', '|');
  return subtitle;
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

// Writes the data of plot `s` and draws it with its script in `scripts`.
void DrawPlot(const PlotSpec& s, const std::vector<Series>& series, const std::string& gnuplot,
              const std::string& scripts, const PlotOptions& o, PlotOutput& p) {
  std::string base = (fs::path(o.out_dir) / s.name).string();
  p.dat = base + ".dat";
  {
    std::ofstream f(p.dat);
    if (!f) Fail("plot: {}: cannot write", p.dat);
    f << DatText(s.title, series);
  }
  std::string script = (fs::path(scripts) / (std::string(s.name) + ".gp")).string();
  if (!fs::exists(script)) Fail("plot: {}: script not found", script);
  const bool errorbars = std::any_of(series.begin(), series.end(), [](const Series& x) { return !x.ci.empty(); });
  const std::string subtitle = PlotSubtitleLines(o.subtitle, errorbars, s.wrap);
  const std::string marks = MarksKey(series);
  const std::vector<std::string> keys = PointKeys(series);
  const KeyText key = KeyTextOf(series, marks, keys, s.extra);
  const bool right = s.key_right && KeyFitsRight(s.canvas, key);
  const Canvas canvas = right ? CanvasForKeyRight(s.canvas, key) : CanvasForKeyBelow(s.canvas, key);
  RunGnuplot(gnuplot, script,
             fmt::format("datafile='{}'; outbase='{}'; plottitle='{}'; plotsubtitle='{}'; xticvals='{}'; "
                         "markkey='{}'; canvas='{},{}'; pointkeys='{}'; errorbars={:d}; keyside='{}'",
                         p.dat, base, s.title, subtitle, XTics(series), marks, canvas.width, canvas.height,
                         fmt::join(keys, "|"), errorbars, right ? "right" : "below"),
             base + ".gnuplot.log");
  for (const char* ext : {".png", ".svg"}) {
    if (!fs::exists(base + ext)) Fail("plot: {}: gnuplot wrote no {}", script, base + ext);
    p.images.push_back(base + ext);
  }
}

}  // namespace

std::vector<PlotOutput> MakePlots(const std::vector<AggregateRecord>& records, const PlotOptions& o) {
  std::string gnuplot = o.gnuplot.empty() ? FindGnuplot() : o.gnuplot;
  if (gnuplot.empty() || access(gnuplot.c_str(), X_OK) != 0)
    Fail("plot: gnuplot: not found{} (install gnuplot, e.g. apt-get install gnuplot-nox, or pass --gnuplot PATH)",
         gnuplot.empty() ? " in PATH" : " at '" + gnuplot + "'");
  std::string scripts = o.scripts_dir.empty() ? std::string(SourceDir()) + "/plots" : o.scripts_dir;
  fs::create_directories(o.out_dir);
  std::vector<PlotOutput> out;
  for (const PlotSpec& s : PlotSpecs()) {
    PlotOutput p;
    p.name = s.name;
    std::vector<Series> series = s.data(records);
    if (std::string(s.name) == "latency_vs_input_length" && !Varies(records, "input_length"))
      p.skipped = "the experiment has no input_length axis";
    else if (series.empty())
      p.skipped = "no data points for this plot in the results";
    else
      DrawPlot(s, series, gnuplot, scripts, o, p);
    out.push_back(p);
  }
  return out;
}

}  // namespace specsweep
