// `specsweep check RESULTS --baseline BASELINE [--tolerance T]`: CI regression gate on
// acceptance rate and mean accepted length. Prints the regressions; exits 1 on any.
#include <cstdio>

#include "harness/report/load.h"
#include "harness/report/check.h"
#include "harness/cli/commands.h"
#include "harness/store/results.h"
#include "base/error.h"

namespace specsweep {
namespace {

struct CheckArgs {
  std::string results, baseline;
  double tolerance = 0.02;
};

void CheckCommand(const CheckArgs& a) {
  LoadedRecords cur = LoadRecords(a.results), base = LoadRecords(a.baseline);
  // A corrupt line is a point the gate would silently not compare.
  for (const LoadedRecords* r : {&cur, &base})
    if (!r->warnings.empty())
      Fail("{}{}: a gate that skipped it could pass without comparing it", r->warnings[0],
           r->warnings.size() > 1 ? fmt::format(" (and {} more)", r->warnings.size() - 1) : "");
  CheckReport rep = CheckRegressions(cur.records, base.records, a.tolerance, a.baseline);
  if (rep.ok()) {
    std::printf(
        "check: %d of %d speculative points of %s compared: none regressed (greedy at tolerance 0, "
        "sampled at %g)%s\n",
        rep.compared, rep.baseline_points, a.baseline.c_str(), a.tolerance,
        rep.replayed ? fmt::format("; {} points with replayed acceptance not gated", rep.replayed).c_str() : "");
    return;
  }
  std::fputs(RenderTable(rep.AsTable(), TableFormat::Markdown).c_str(), stdout);
  // The Error makes main print one line and exit 1.
  Fail("{}: {} regression(s) against {} (tolerance {})", a.results, rep.failures.size(), a.baseline, a.tolerance);
}

const CommandRegistrar kRegister(43, [](CLI::App& app) {
  auto a = std::make_shared<CheckArgs>();
  auto* cmd = app.add_subcommand("check", "Fail (exit 1) when acceptance drops against a baseline results file");
  cmd->add_option("results", a->results, "Results file (.json or .jsonl)")->required();
  cmd->add_option("--baseline", a->baseline, "Baseline results file")->required();
  cmd->add_option("--tolerance", a->tolerance,
                  "Allowed relative drop for sampled points (0.02 = 2%); greedy points are gated at 0");
  cmd->callback([a] { CheckCommand(*a); });
});

}  // namespace
}  // namespace specsweep
