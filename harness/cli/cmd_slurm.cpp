// `specsweep slurm EXPERIMENT -o DIR --shards N [--partition P --time T --cpus-per-task C
// --mem M] [--submit]`: writes DIR/<name>.array.sbatch (the shards as one Slurm job
// array, task I runs `run --shard I/N --resume`) and DIR/<name>.merge.sbatch (merges the
// shards into DIR/<name>.json), and with --submit submits both, the merge depending on
// the whole array (afterok).
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harness/cli/commands.h"
#include "harness/measure/model_store.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/shard.h"
#include "base/error.h"
#include "models/loader.h"

namespace fs = std::filesystem;

namespace specsweep {
namespace {

struct SlurmArgs {
  std::string experiment, out_dir, partition, time, mem, sbatch = "sbatch";
  int shards = 0, cpus_per_task = 0;
  bool submit = false;
};

// Single-quoted for bash (a quote inside becomes '\'').
std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string Absolute(const std::string& p) { return fs::absolute(p).lexically_normal().string(); }

// #SBATCH lines for the resource options given on the command line.
std::string ResourceLines(const SlurmArgs& a, bool with_cpus) {
  std::string s;
  if (!a.partition.empty()) s += "#SBATCH --partition=" + a.partition + "\n";
  if (!a.time.empty()) s += "#SBATCH --time=" + a.time + "\n";
  if (with_cpus && a.cpus_per_task > 0) s += fmt::format("#SBATCH --cpus-per-task={}\n", a.cpus_per_task);
  if (with_cpus && !a.mem.empty()) s += "#SBATCH --mem=" + a.mem + "\n";
  return s;
}

void WriteScript(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) Fail("{}: cannot open for writing", path);
  f << text;
  if (!f) Fail("{}: write failed", path);
  f.close();
  fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
}

// Runs `sbatch --parsable [extra] script` and returns the job id ("ID" of "ID;cluster").
std::string Submit(const SlurmArgs& a, const std::string& extra, const std::string& script) {
  std::string cmd = Quote(a.sbatch) + " --parsable " + extra + " " + Quote(script) + " 2>&1";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) Fail("{}: cannot run sbatch", script);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  int status = pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  std::string id = out.substr(0, out.find(';'));
  bool numeric = !id.empty() && id.find_first_not_of("0123456789") == std::string::npos;
  if (status != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !numeric)
    Fail("{}: sbatch failed: {}", script, out.empty() ? fmt::format("exit status {}", status) : out);
  return id;
}

void SlurmCommand(const SlurmArgs& a) {
  Experiment e = LoadExperiment(a.experiment, Globals().models_dir);  // fails early on a bad file
  CheckModelsPresent(e);  // or on a missing model, before any job waits in the queue
  const std::string dir = Absolute(a.out_dir), logs = dir + "/logs";
  fs::create_directories(logs);  // Slurm does not create the directories of --output
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  const std::string models = Absolute(ResolveModelsDir(Globals().models_dir));
  const std::string exp = Absolute(a.experiment);
  const int n = a.shards;
  const size_t groups = BaselineGroups(e.points).size();
  if (size_t(n) > groups)
    std::fprintf(stderr, "slurm: note: %d shards but %zu baseline group(s): %zu task(s) will have no points\n", n,
                 groups, size_t(n) - groups);
  const std::string array_path = fmt::format("{}/{}.array.sbatch", dir, e.name);
  const std::string merge_path = fmt::format("{}/{}.merge.sbatch", dir, e.name);
  const std::string merged = fmt::format("{}/{}.json", dir, e.name);

  std::string array = "#!/bin/bash\n";
  array += fmt::format("# specsweep: experiment '{}' ({} points) as a job array of {} shards.\n", e.name,
                       e.points.size(), n);
  array += "# Task I runs shard I/N with --resume: a failed task is resubmitted alone and continues\n";
  array += "# where it stopped, then the merge:\n";
  array += fmt::format("#   jid=$(sbatch --parsable --array=I {}) &&\n", Quote(array_path));
  array += fmt::format("#   sbatch --dependency=afterok:${{jid%%;*}} {}\n", Quote(merge_path));
  array += fmt::format("#SBATCH --job-name=specsweep-{}\n", e.name);
  array += fmt::format("#SBATCH --array=0-{}\n", n - 1);
  // One log per attempt: a resubmitted task does not overwrite the log of the failed one.
  array += fmt::format("#SBATCH --output={}/{}.shard-%a-of-{}.job-%A.log\n", logs, e.name, n);
  array += ResourceLines(a, /*with_cpus=*/true);
  array += "set -euo pipefail\n";
  array += "# Threads: the CPUs Slurm gave the task (0, all cores, when --cpus-per-task is unset).\n";
  array += fmt::format(
      "exec {} --models {} --threads \"${{SLURM_CPUS_PER_TASK:-0}}\" run {} -o {} "
      "--shard \"${{SLURM_ARRAY_TASK_ID}}/{}\" --resume\n",
      Quote(exe), Quote(models), Quote(exp), Quote(dir), n);

  std::string merge = "#!/bin/bash\n";
  merge += fmt::format("# specsweep: merges the {} shards of experiment '{}' into {}.\n", n, e.name, merged);
  merge += fmt::format("#SBATCH --job-name=specsweep-{}-merge\n", e.name);
  merge += fmt::format("#SBATCH --output={}/{}.merge.job-%j.log\n", logs, e.name);
  merge += ResourceLines(a, /*with_cpus=*/false);
  merge += "set -euo pipefail\n";
  merge += fmt::format("exec {} --models {} merge {}/{}.shard-{{0..{}}}-of-{}.json -o {} --experiment {}\n", Quote(exe),
                       Quote(models), Quote(dir), Quote(e.name), n - 1, n, Quote(merged), Quote(exp));

  WriteScript(array_path, array);
  WriteScript(merge_path, merge);
  std::printf("array script: %s\nmerge script: %s\n", array_path.c_str(), merge_path.c_str());
  if (!a.submit) {
    std::printf("submit with:\n  jid=$(sbatch --parsable %s) && sbatch --dependency=afterok:${jid%%%%;*} %s\n",
                Quote(array_path).c_str(), Quote(merge_path).c_str());
    return;
  }
  std::string array_id = Submit(a, "", array_path);
  std::printf("array job: %s (%d tasks)\n", array_id.c_str(), n);
  std::fflush(stdout);
  std::string merge_id = Submit(a, "--dependency=afterok:" + array_id, merge_path);
  std::printf("merge job: %s\nresults:   %s\n", merge_id.c_str(), merged.c_str());
}

const CommandRegistrar kRegister(46, [](CLI::App& app) {
  auto a = std::make_shared<SlurmArgs>();
  auto* cmd =
      app.add_subcommand("slurm", "Write (and --submit) Slurm scripts: the shards as a job array + a merge job");
  cmd->add_option("experiment", a->experiment, "Experiment file (.yaml, .yml or .json)")->required();
  cmd->add_option("-o,--out", a->out_dir, "Output directory (shard results, logs/, scripts, merged <name>.json)")
      ->required();
  cmd->add_option("--shards", a->shards, "Number of shards (array tasks)")->required()->check(IntAtLeast(1));
  cmd->add_option("--partition", a->partition, "Slurm partition");
  cmd->add_option("--time", a->time, "Time limit per task (Slurm syntax, e.g. 2-00:00:00)");
  cmd->add_option("--cpus-per-task", a->cpus_per_task, "CPUs per task (the run's threads)")->check(IntAtLeast(1));
  cmd->add_option("--mem", a->mem, "Memory per task (Slurm syntax, e.g. 32G)");
  cmd->add_flag("--submit", a->submit, "Submit both jobs with sbatch and print their ids");
  cmd->add_option("--sbatch", a->sbatch, "sbatch command to submit with");
  cmd->callback([a] { SlurmCommand(*a); });
});

}  // namespace
}  // namespace specsweep
