// `specsweep run EXPERIMENT [-o DIR] [--resume[=changed]|--overwrite] [--list] [--shard I/N]`:
// measures an experiment's grid into DIR/<name>.jsonl (one record per point, as
// measured) and DIR/<name>.json (aggregated, Google Benchmark layout); a shard measures
// its part of the grid into DIR/<name>.shard-I-of-N.{jsonl,json} (harness/sweep/shard.h).
#include <cstdio>

#include "harness/cli/commands.h"
#include "harness/sweep/draft_tokenizer.h"
#include "harness/sweep/experiment.h"
#include "harness/measure/measure.h"
#include "harness/pipeline.h"
#include "harness/sweep/shard.h"

namespace specsweep {
namespace {

struct RunArgs {
  std::string experiment, out_dir = "results", shard;
  std::string resume;  // "" (not given), "same" or "changed"
  bool overwrite = false, list = false;
};

void RunCommand(const RunArgs& a) {
  Experiment e = LoadExperiment(a.experiment, Globals().models_dir);
  RunOptions o;
  o.experiment_sha256 = ExperimentSha256(e);  // of the whole grid, before sharding
  if (!a.shard.empty()) {
    ShardSpec s = ParseShard(a.shard, "--shard");
    const size_t total = e.points.size();
    e.points = ShardPoints(e, s);
    o.out_stem = ShardStem(e.name, s);
    o.context.update(ShardContext(s, e.points.size(), total));
  }
  if (a.list) {
    const BridgedDrafts bridged = FindBridgedDrafts(e);
    for (auto& p : e.points) std::printf("%s%s\n", p.Key().c_str(), BridgedNote(p, bridged).c_str());
    std::printf("%zu points\n", e.points.size());
    return;
  }
  o.out_dir = a.out_dir;
  o.resume = a.resume.empty() ? ResumeMode::None : ParseResumeMode(a.resume);
  o.overwrite = a.overwrite;
  o.default_threads = Globals().threads;
  RunSummary s = RunExperiment(e, o);
  std::printf("%d points (%d resumed, %d measured, %d records set aside)\nraw:     %s\nresults: %s\n", s.total,
              s.resumed, s.measured, s.set_aside, s.jsonl_path.c_str(), s.json_path.c_str());
}

const CommandRegistrar kRegister(40, [](CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Run an experiment sweep (YAML/JSON) and write results");
  cmd->add_option("experiment", a->experiment, "Experiment file (.yaml, .yml or .json)")->required();
  cmd->add_option("-o,--out", a->out_dir, "Output directory for <name>.jsonl and <name>.json");
  // A flag without a default value: CLI11 2.1 prints a default as "--resume{same}" in help.
  // Given bare, a flag's value is "true", read as "same" below.
  auto* resume = cmd->add_flag("--resume", a->resume,
                               "Reuse the groups already in <name>.jsonl that match the experiment; any difference "
                               "is an error. --resume=changed re-measures what changed instead (old records are "
                               "moved to <name>.jsonl.replaced)");
  cmd->add_flag("--overwrite", a->overwrite, "Discard an existing <name>.jsonl")->excludes(resume);
  cmd->add_option("--shard", a->shard, "Run shard I of N (0-based, e.g. 0/4): baseline groups balanced by cost");
  cmd->add_flag("--list", a->list, "Print the expanded grid (point keys) and exit");
  cmd->callback([a] {
    if (a->resume == "true") a->resume = "same";
    RunCommand(*a);
  });
});

}  // namespace
}  // namespace specsweep
