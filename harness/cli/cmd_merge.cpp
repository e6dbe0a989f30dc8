// `specsweep merge INPUT... -o OUT [--experiment EXP] [--partial]`: one results file
// from the shard outputs of `run --shard I/N` (directories or .json files).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harness/report/load.h"
#include "harness/cli/commands.h"
#include "harness/sweep/experiment.h"
#include "harness/measure/measure.h"
#include "harness/store/merge.h"
#include "harness/store/results.h"
#include "harness/sweep/shard.h"
#include "base/error.h"

namespace fs = std::filesystem;

namespace specsweep {
namespace {

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string out, experiment;
  bool partial = false;
};

// The experiment's keys in grid order: from --experiment, else from the file the shards
// name when it is still there unchanged; empty when neither is available.
std::vector<std::string> ExpectedKeys(const MergeArgs& a, const Results& first) {
  const std::string hash = first.context.value("experiment_sha256", "");
  const bool given = !a.experiment.empty();
  const std::string path = given ? a.experiment : first.context.value("experiment_file", "");
  auto unnamed = [&](const char* why) {
    std::fprintf(stderr, "merge: experiment file %s %s: missing points are counted, not named\n",
                 path.empty() ? "(none)" : path.c_str(), why);
    return std::vector<std::string>{};
  };
  if (!given && (path.empty() || !fs::exists(path))) return unnamed("not found");
  Experiment e = LoadExperiment(path, Globals().models_dir);
  if (ExperimentSha256(e) != hash) {
    if (!given) return unnamed("changed since the shards ran");
    Fail("{}: sha256 {} differs from the shards' experiment_sha256 {} ({})", path, ExperimentSha256(e), hash,
         first.path);
  }
  std::vector<std::string> keys;
  for (auto& p : e.points) keys.push_back(p.Key());
  return keys;
}

void PrintList(const char* what, const std::vector<std::string>& keys) {
  if (keys.empty()) return;
  std::fprintf(stderr, "merge: %zu %s point(s):\n", keys.size(), what);
  for (auto& k : keys) std::fprintf(stderr, "  %s\n", k.c_str());
}

void MergeCommand(const MergeArgs& a) {
  std::vector<Results> shards;
  const std::vector<std::string> files = FindShardFiles(a.inputs);
  for (auto& f : files) shards.push_back(LoadResults(f));
  MergedResults m = MergeShards(shards, ExpectedKeys(a, shards[0]));
  const MergeReport& r = m.report;
  if (!r.missing_shards.empty()) {
    std::string list;
    for (int i : r.missing_shards) list += (list.empty() ? "" : ", ") + std::to_string(i);
    std::fprintf(stderr, "merge: shard(s) %s of %d missing\n", list.c_str(), r.shard_count);
  }
  PrintList("missing", r.missing);
  PrintList("duplicated", r.duplicated);
  PrintList("unexpected (not in the experiment)", r.unexpected);
  if (!r.complete() && !a.partial)
    Fail("merge: incomplete: {} of {} points from {} file(s), {} duplicated (--partial writes what there is)",
         r.merged_points, r.experiment_points, shards.size(), r.duplicated.size());
  std::string out = a.out;
  if (fs::is_directory(out) || fs::path(out).extension() != ".json")
    out = (fs::path(out) / (m.doc["context"].value("experiment", "merged") + ".json")).string();
  // Writing over an input would lose that shard's results.
  for (auto& f : files) {
    std::error_code ec;
    if (fs::equivalent(f, out, ec))
      Fail("merge: -o {}: is one of the input shards; write the merged results elsewhere", out);
  }
  if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path());
  {
    std::ofstream f(out + ".tmp", std::ios::trunc);
    if (!f) Fail("{}: cannot open for writing", out + ".tmp");
    f << DumpJson(m.doc, 2) << "\n";
    if (!f) Fail("{}: write failed", out + ".tmp");
  }
  fs::rename(out + ".tmp", out);
  std::printf("%zu of %zu points from %zu shard file(s) of %d\nresults: %s\n", r.merged_points, r.experiment_points,
              shards.size(), r.shard_count, out.c_str());
}

const CommandRegistrar kRegister(45, [](CLI::App& app) {
  auto a = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand("merge", "Merge the shard results of `run --shard I/N` into one results file");
  cmd->add_option("inputs", a->inputs, "Shard .json files or directories holding <name>.shard-I-of-N.json")->required();
  cmd->add_option("-o,--out", a->out, "Merged results file (.json), or a directory for <name>.json")->required();
  cmd->add_option("--experiment", a->experiment,
                  "Experiment file, to name missing points (default: the file the shards record, if unchanged)");
  cmd->add_flag("--partial", a->partial, "Write the merged file even when points are missing or duplicated");
  cmd->callback([a] { MergeCommand(*a); });
});

}  // namespace
}  // namespace specsweep
