// `specsweep plot RESULTS [-o DIR]`: writes .dat files and PNG, SVG and PDF images
// through the gnuplot scripts in plots/.
#include <cstdio>

#include "harness/report/category.h"
#include "harness/report/load.h"
#include "harness/cli/commands.h"
#include "harness/report/plot.h"
#include "harness/report/plot_layout.h"
#include "harness/store/results.h"
#include "base/error.h"

namespace specsweep {
namespace {

struct PlotArgs {
  std::string results, out_dir = "plots-out", scripts, gnuplot, by;
};

void PlotCommand(const PlotArgs& a) {
  if (!a.by.empty() && a.by != "category") FailUsage("plot: --by: '{}' (expected category)", a.by);
  LoadedRecords res = LoadRecords(a.results);
  if (!res.speedup_note.empty()) std::fprintf(stderr, "note: %s\n", res.speedup_note.c_str());
  if (res.records.empty()) Fail("{}: no records", a.results);
  PlotOptions o;
  o.caption = PlotCaption(res.context, res.records);  // n: the whole run's prompts, before any split
  if (a.by == "category") {
    if (CategoryOrder(res.records).empty()) FailUsage("plot: --by category: the records carry no prompt categories");
    res.records = SplitByCategory(res.records);
    o.by_category = true;
  }
  o.out_dir = a.out_dir;
  o.scripts_dir = a.scripts;
  o.gnuplot = a.gnuplot;
  o.subtitle = PlotSubtitle(res.context, res.records);
  for (auto& p : MakePlots(res.records, o)) {
    if (!p.skipped.empty()) {
      std::printf("%-24s skipped: %s\n", p.name.c_str(), p.skipped.c_str());
      continue;
    }
    std::printf("%-24s %s", p.name.c_str(), p.dat.c_str());
    for (auto& img : p.images) std::printf(" %s", img.c_str());
    std::printf("%s\n", p.note.empty() ? "" : (" (" + p.note + ")").c_str());
  }
}

const CommandRegistrar kRegister(42, [](CLI::App& app) {
  auto a = std::make_shared<PlotArgs>();
  auto* cmd = app.add_subcommand("plot", "Plot sweep results with gnuplot (PNG, SVG and PDF)");
  cmd->add_option("results", a->results, "Results file (.json or .jsonl)")->required();
  cmd->add_option("-o,--out", a->out_dir, "Output directory for .dat, .png, .svg and .pdf files");
  cmd->add_option("--scripts", a->scripts, "Directory of the .gp scripts (default: plots/ of the source tree)");
  cmd->add_option("--gnuplot", a->gnuplot, "gnuplot executable (default: from PATH)");
  cmd->add_option("--by", a->by, "category: grouped bars, methods x task groups and overall (question sets)");
  cmd->callback([a] { PlotCommand(*a); });
});

}  // namespace
}  // namespace specsweep
