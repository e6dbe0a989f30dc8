#include "harness/measure/runner.h"

#include <filesystem>
#include <map>
#include <set>

#include "harness/measure/context.h"
#include "harness/measure/measure.h"
#include "harness/measure/progress.h"
#include "harness/store/results.h"
#include "harness/store/results_dir.h"
#include "harness/sweep/schedule.h"
#include "base/error.h"
#include "models/forward.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {

ResumeMode ParseResumeMode(const std::string& s) {
  if (s.empty() || s == "same") return ResumeMode::Same;
  if (s == "changed") return ResumeMode::Changed;
  Fail("run: --resume: unknown mode '{}' (expected same or changed)", s);
}

namespace {

// What to do with the records already in the .jsonl.
struct ResumePlan {
  std::set<size_t> reused_groups;
  std::vector<std::string> keep_lines, replaced_lines, corrupt_lines, duplicate_lines;
  bool rewrite = false;  // the .jsonl must be rewritten with keep_lines
};

ResumePlan PlanResume(const ResultsDir& dir, const Experiment& e, const std::vector<Group>& groups,
                      const std::vector<std::vector<RawRecord>>& expected, ResumeMode mode, Progress& progress) {
  ResumePlan plan;
  JsonlContents c = ReadJsonl(dir.jsonl_path());
  const std::string& path = dir.jsonl_path();
  for (auto& [line, text] : c.corrupt) {
    progress.Note(fmt::format("{}:{}: corrupt line moved to {}.corrupt", path, line, path));
    plan.corrupt_lines.push_back(text);
  }
  for (auto& d : c.duplicates) {
    if (d.same) {
      progress.Note(fmt::format("{}:{}: second, identical record of point {} dropped (the first is kept)", path,
                                d.line, d.name));
      continue;
    }
    progress.Note(fmt::format("warning: {}:{}: second, differing record of point {} moved to {}.duplicate (the "
                              "first is kept)", path, d.line, d.name, path));
    plan.duplicate_lines.push_back(d.text);
  }
  plan.rewrite = !c.corrupt.empty() || !c.duplicates.empty() || c.complete_bytes != fs::file_size(path);

  std::map<std::string, const RawRecord*> found;
  for (auto& r : c.records) found[r.key] = &r;
  std::set<std::string> in_grid;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    bool all_same = true;
    for (auto& want : expected[gi]) {
      in_grid.insert(want.key);
      auto it = found.find(want.key);
      if (it == found.end()) {
        all_same = false;
        continue;
      }
      const std::string diff = it->second->Difference(want);
      if (diff.empty()) continue;
      all_same = false;
      if (mode == ResumeMode::Same)
        Fail("{}: --resume: point {}: {}; use --resume=changed to re-measure what changed, or --overwrite",
             path, want.name, diff);
    }
    if (all_same) plan.reused_groups.insert(gi);
  }
  for (auto& r : c.records) {
    const bool keep = in_grid.count(r.key) && [&] {
      for (size_t gi : plan.reused_groups)
        for (auto& want : expected[gi])
          if (want.key == r.key) return true;
      return false;
    }();
    if (keep) {
      plan.keep_lines.push_back(DumpJson(RawToJson(r)));
      continue;
    }
    if (!in_grid.count(r.key) && mode == ResumeMode::Same)
      Fail("{}: --resume: holds point {}, which {} does not ask for (another experiment with the same name, or "
           "an earlier version of this one); use --resume=changed to set such records aside, --overwrite, or "
           "another -o",
           path, r.name, e.file);
    plan.replaced_lines.push_back(DumpJson(RawToJson(r)));
    plan.rewrite = true;
  }
  return plan;
}

}  // namespace

MeasuredRun MeasureExperiment(const Experiment& e, const RunOptions& o) {
  MeasuredRun run;
  RunSummary& s = run.summary;
  s.total = int(e.points.size());
  ResultsDir dir(o.out_dir, o.out_stem.empty() ? e.name : o.out_stem);
  s.jsonl_path = dir.jsonl_path();
  s.json_path = dir.json_path();

  // experiment -> schedule
  ModelCache cache(e);
  const std::vector<Group> groups = MakeGroups(e.points);
  const std::string experiment_sha = o.experiment_sha256.empty() ? ExperimentSha256(e) : o.experiment_sha256;
  std::vector<std::vector<RawRecord>> expected;
  for (auto& g : groups) expected.push_back(DescribeGroup(e, experiment_sha, g, cache));

  Progress progress(o.progress, s.total, 0);
  ResumePlan plan;
  if (fs::exists(s.jsonl_path)) {
    if (o.overwrite) {
      dir.RewriteJsonl({});
    } else if (o.resume == ResumeMode::None) {
      Fail("{}: already exists (use --resume to continue that sweep or --overwrite to start over)", s.jsonl_path);
    } else {
      plan = PlanResume(dir, e, groups, expected, o.resume, progress);
      dir.SetAside(".corrupt", plan.corrupt_lines);
      dir.SetAside(".replaced", plan.replaced_lines);
      dir.SetAside(".duplicate", plan.duplicate_lines);
      if (!plan.replaced_lines.empty())
        progress.Note(fmt::format("{}: {} record(s) of changed or foreign points moved to {}.replaced", s.jsonl_path,
                                  plan.replaced_lines.size(), s.jsonl_path));
      if (plan.rewrite) dir.RewriteJsonl(plan.keep_lines);
      s.set_aside = int(plan.replaced_lines.size() + plan.corrupt_lines.size() + plan.duplicate_lines.size());
    }
  }
  for (size_t gi : plan.reused_groups) s.resumed += int(groups[gi].points.size());
  progress = Progress(o.progress, s.total, s.resumed);
  for (size_t gi = 0; gi < groups.size(); ++gi)
    if (!plan.reused_groups.count(gi)) Preflight(e, groups[gi], cache);

  // measure: one group at a time, its records on disk before the next starts
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    if (plan.reused_groups.count(gi)) continue;
    const Group& g = groups[gi];
    progress.Start(g.baseline().Name());
    std::vector<RawRecord> records = expected[gi];
    MeasureGroup(e, g, cache, o.default_threads, records);
    std::vector<std::string> lines;
    for (auto& r : records) lines.push_back(DumpJson(RawToJson(r)));
    dir.Append(lines);
    s.measured += int(records.size());
    if (records[0].host.busy)
      progress.Note(fmt::format("warning: the machine was busy while measuring {} (other processes {:.0f}% of the "
                                "cores, steal {:.0f}%): its points are marked busy",
                                g.baseline().Name(), 100 * records[0].host.other_cpu, 100 * records[0].host.steal));
    for (auto& r : records)
      progress.Done(r.name, o.summarize ? o.summarize(r, r.baseline_key.empty() ? nullptr : &records[0]) : "");
  }
  progress.Finish();

  // the grid's records in grid order, as stored, for the report
  std::map<std::string, RawRecord> by_key;
  for (auto& r : ReadJsonl(s.jsonl_path).records) by_key[r.key] = std::move(r);
  for (auto& p : e.points) {
    auto it = by_key.find(p.Key());
    if (it == by_key.end()) Fail("{}: point {} is missing after the sweep", s.jsonl_path, p.Name());
    run.records.push_back(it->second);
  }
  SetNumThreads(o.default_threads);
  json context = MachineContext();
  context["experiment"] = e.name;
  context["experiment_file"] = e.file;
  context["experiment_sha256"] = experiment_sha;
  std::map<std::string, std::string> files;
  for (auto& p : e.points) {
    for (auto& [f, h] : cache.FileHashes(p.model)) files[f] = h;
    if (!p.draft.model.empty())
      for (auto& [f, h] : cache.FileHashes(p.draft.model)) files[f] = h;
  }
  json model_files = json::array();
  for (auto& [f, h] : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    model_files.push_back(json{{"path", f}, {"bytes", ec ? 0 : size}, {"sha256", h}});
  }
  context["model_files"] = model_files;
  context.update(o.context);
  run.context = std::move(context);
  return run;
}

}  // namespace specsweep
