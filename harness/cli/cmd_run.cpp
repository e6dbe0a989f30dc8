// `specsweep run EXPERIMENT [-o DIR] [--resume[=changed]|--overwrite] [--list] [--shard I/N]
// [--skip-missing-models]`: measures an experiment's grid into DIR/<name>.jsonl (one
// record per point, as measured) and DIR/<name>.json (aggregated, Google Benchmark
// layout); a shard measures its part of the grid into DIR/<name>.shard-I-of-N.{jsonl,json}
// (harness/sweep/shard.h). Without -o, DIR is a new folder <name>-<UTC time> in
// $SPECSWEEP_RESULTS or ./results (harness/pipeline.h DefaultOutDir).
#include <cstdio>

#include "harness/cli/commands.h"
#include "harness/measure/model_store.h"
#include "harness/sweep/draft_tokenizer.h"
#include "harness/sweep/experiment.h"
#include "harness/measure/measure.h"
#include "harness/pipeline.h"
#include "harness/sweep/shard.h"

namespace specsweep {
namespace {

struct RunArgs {
  std::string experiment, out_dir, shard;
  std::string resume;  // "" (not given), "same" or "changed"
  bool overwrite = false, list = false, skip_missing = false;
};

// --list: the plan's points; a missing model is named (run would stop at it).
void ListPoints(const Experiment& e) {
  for (const MissingModel& m : MissingModels(e))
    std::fprintf(stderr, "note: %s; run needs it, --skip-missing-models leaves its %zu point%s out\n",
                 MissingModelText(m.name, e.models_dir).c_str(), m.points, m.points == 1 ? "" : "s");
  const BridgedDrafts bridged = FindBridgedDrafts(e);
  for (auto& p : e.points) std::printf("%s%s\n", p.Key().c_str(), BridgedNote(p, bridged).c_str());
  std::printf("%zu points\n", e.points.size());
}

void RunCommand(const RunArgs& a) {
  Experiment e = LoadExperiment(a.experiment, Globals().models_dir);
  RunOptions o;
  o.experiment_sha256 = ExperimentSha256(e);  // of the whole grid, before sharding or skipping
  const size_t total = e.points.size();
  ShardSpec shard;
  if (!a.shard.empty()) {
    shard = AsUsage([&] { return ParseShard(a.shard, "--shard"); });
    e.points = ShardPoints(e, shard);
    o.out_stem = ShardStem(e.name, shard);
  }
  if (a.skip_missing) {
    nlohmann::json skipped = nlohmann::json::array();
    for (const MissingModel& m : SkipMissingModels(e, stderr))
      skipped.push_back({{"model", m.name}, {"points", m.points}});
    if (!skipped.empty()) o.context["skipped_models"] = skipped;  // not measured: merge counts them missing
  }
  if (!a.shard.empty()) o.context.update(ShardContext(shard, e.points.size(), total));
  if (a.list) return ListPoints(e);
  o.out_dir = a.out_dir;
  o.resume = a.resume.empty() ? ResumeMode::None : AsUsage([&] { return ParseResumeMode(a.resume); });
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
  cmd->add_option("-o,--out", a->out_dir,
                  "Output directory for <name>.jsonl and <name>.json (default: a new <name>-<UTC time> folder in "
                  "$SPECSWEEP_RESULTS, else ./results)");
  // A flag without a default value: CLI11 2.1 prints a default as "--resume{same}" in help.
  // Given bare, a flag's value is "true", read as "same" below.
  auto* resume = cmd->add_flag("--resume", a->resume,
                               "Reuse the groups already in <name>.jsonl that match the experiment; any difference "
                               "is an error. --resume=changed re-measures what changed instead (old records are "
                               "moved to <name>.jsonl.replaced). Without -o: the newest <name>-* folder");
  cmd->add_flag("--overwrite", a->overwrite, "Discard an existing <name>.jsonl")->excludes(resume);
  cmd->add_option("--shard", a->shard, "Run shard I of N (0-based, e.g. 0/4): baseline groups balanced by cost");
  cmd->add_flag("--list", a->list, "Print the expanded grid (point keys) and exit");
  cmd->add_flag("--skip-missing-models", a->skip_missing,
                "Leave out the points of a model missing from the models folder (one line per model) instead of "
                "stopping");
  cmd->callback([a] {
    if (a->resume == "true") a->resume = "same";
    RunCommand(*a);
  });
});

}  // namespace
}  // namespace specsweep
