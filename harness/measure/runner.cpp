#include "harness/measure/runner.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <fmt/ranges.h>

#include "harness/measure/context.h"
#include "harness/measure/measure.h"
#include "harness/measure/process_runtime.h"
#include "harness/measure/progress.h"
#include "harness/store/results.h"
#include "harness/store/results_dir.h"
#include "harness/store/sha256.h"
#include "harness/sweep/draft_tokenizer.h"
#include "harness/sweep/prompts.h"
#include "harness/sweep/schedule.h"
#include "base/error.h"
#include "base/progress_log.h"
#include "base/status_line.h"
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
                      const std::vector<std::vector<RawRecord>>& expected, ResumeMode mode,
                      const std::function<void(const std::string&)>& note) {
  ResumePlan plan;
  JsonlContents c = ReadJsonl(dir.jsonl_path());
  const std::string& path = dir.jsonl_path();
  for (auto& [line, text] : c.corrupt) {
    note(fmt::format("{}:{}: corrupt line moved to {}.corrupt", path, line, path));
    plan.corrupt_lines.push_back(text);
  }
  for (auto& d : c.duplicates) {
    if (d.same) {
      note(
          fmt::format("{}:{}: second, identical record of point {} dropped (the first is kept)", path, d.line, d.name));
      continue;
    }
    note(
        fmt::format("warning: {}:{}: second, differing record of point {} moved to {}.duplicate (the "
                    "first is kept)",
                    path, d.line, d.name, path));
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
        Fail("{}: --resume: point {}: {}; use --resume=changed to re-measure what changed, or --overwrite", path,
             want.name, diff);
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
      Fail(
          "{}: --resume: holds point {}, which {} does not ask for (another experiment with the same name, or "
          "an earlier version of this one); use --resume=changed to set such records aside, --overwrite, or "
          "another -o",
          path, r.name, e.file);
    plan.replaced_lines.push_back(DumpJson(RawToJson(r)));
    plan.rewrite = true;
  }
  return plan;
}

// SIGINT or SIGTERM sets this; the measuring loop checks it between generations.
std::atomic<bool> g_interrupted{false};
extern "C" void OnInterrupt(int) { g_interrupted = true; }

// Installs OnInterrupt for the scope (the previous handlers back afterwards).
struct InterruptScope {
  struct sigaction old_int {};
  struct sigaction old_term {};
  InterruptScope() {
    g_interrupted = false;
    struct sigaction sa {};
    sa.sa_handler = OnInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
  }
  ~InterruptScope() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

// Non-empty lines of a prompt file, passages of a passages file: what `count` takes from.
int PromptsAvailable(const std::string& path, bool passages) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  if (passages) return int(SplitPassages(ss.str()).size());
  int n = 0;
  std::string line;
  while (std::getline(ss, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) ++n;
  return n;
}

// The prompt sources the grid uses: path, sha256, how many are used of how many (of a
// question set: the questions selected, `questions`).
json PromptsJson(const Experiment& e, size_t questions) {
  bool file = false, passages = false;
  std::set<int> lengths;
  for (auto& p : e.points) {
    (p.input_length > 0 ? passages : file) = true;
    if (p.input_length > 0) lengths.insert(p.input_length);
  }
  json j{{"count", e.prompts.questions && !passages ? int(questions) : e.prompts.count},
         {"category", e.prompts.category}};
  if (file)
    j["file"] = {{"path", fs::absolute(e.prompts.file).lexically_normal().string()},
                 {"sha256", Sha256File(e.prompts.file)},
                 {"available", PromptsAvailable(e.prompts.file, false)}};
  if (file && e.prompts.questions) j["file"]["used"] = questions;
  if (passages)
    j["passages"] = {{"path", fs::absolute(e.prompts.passages).lexically_normal().string()},
                     {"sha256", Sha256File(e.prompts.passages)},
                     {"available", PromptsAvailable(e.prompts.passages, true)},
                     {"input_lengths", lengths}};
  return j;
}

// "plan: ..." lines, printed before anything is loaded: what a group runs (the prompt
// file's or question set's rounds, and the cut passages'), and where each prompt comes from.
std::string PlanText(const Experiment& e, size_t groups, const json& prompts) {
  const bool file = prompts.contains("file"), passages = prompts.contains("passages");
  std::vector<std::string> rounds;
  if (file) {
    // A question set runs in parts (sweep/questions.h): a group's rounds are its part's.
    int n = e.prompts.questions ? 0 : e.prompts.count;
    for (const QuestionPart& p : e.prompts.parts) n = std::max(n, int(p.ids.size()));
    const bool uneven = std::any_of(e.prompts.parts.begin(), e.prompts.parts.end(),
                                    [&](const QuestionPart& p) { return int(p.ids.size()) != n; });
    const char* up_to = uneven ? "up to " : "";
    rounds.push_back(
        fmt::format("{} repetition(s) x {}{} {} = {}{} rounds per group{}", e.repetitions, up_to, n,
                    e.prompts.questions ? "question(s)" : "prompt(s)", up_to, e.repetitions * n,
                    passages ? (e.prompts.questions ? " of the question set" : " of the prompt file") : ""));
  }
  if (passages)
    rounds.push_back(fmt::format("{} repetition(s) x {} prompt(s) = {} rounds per group{}", e.repetitions,
                                 e.prompts.count, e.repetitions * e.prompts.count, file ? " of cut passages" : ""));
  if (rounds.empty()) rounds.push_back("no rounds");  // no point left (a model never drafts for itself)
  std::string t = fmt::format(
      "plan: {} points in {} group(s) (a baseline and the points compared with it); {}, every point once per round; "
      "warm-up {} generation(s) per point",
      e.points.size(), groups, fmt::join(rounds, "; "), e.warmup);
  if (file && e.prompts.questions)
    t += fmt::format(
        "\nplan: questions {} of {} from {} (turns: {}), in {} part(s) of up to {} questions (prompts.chunk)",
        prompts["file"]["used"].get<int>(), prompts["file"]["available"].get<int>(),
        prompts["file"]["path"].get<std::string>(), e.prompts.all_turns ? "all, each question a conversation" : "first",
        e.prompts.parts.size(), e.prompts.selection.chunk);
  else if (file)
    t += fmt::format("\nplan: prompts {} of {} from {}", e.prompts.count, prompts["file"]["available"].get<int>(),
                     prompts["file"]["path"].get<std::string>());
  if (passages)
    t += fmt::format("\nplan: prompts {} cut from {} passages of {} (input lengths {})", e.prompts.count,
                     prompts["passages"]["available"].get<int>(), prompts["passages"]["path"].get<std::string>(),
                     fmt::join(prompts["passages"]["input_lengths"].get<std::vector<int>>(), ", "));
  return t;
}

// Records already in the .jsonl: none (a new run), none kept (--overwrite), or those of
// the groups that still match (--resume; the others' set aside). Notes what it did.
ResumePlan ResumeFromStore(ResultsDir& dir, const Experiment& e, const std::vector<Group>& groups,
                           const std::vector<std::vector<RawRecord>>& expected, const RunOptions& o,
                           const std::function<void(const std::string&)>& note, RunSummary& s) {
  ResumePlan plan;
  if (fs::exists(s.jsonl_path)) {
    if (o.overwrite) {
      dir.RewriteJsonl({});
    } else if (o.resume == ResumeMode::None) {
      Fail("{}: already exists (use --resume to continue that sweep or --overwrite to start over)", s.jsonl_path);
    } else {
      plan = PlanResume(dir, e, groups, expected, o.resume, note);
      dir.SetAside(".corrupt", plan.corrupt_lines);
      dir.SetAside(".replaced", plan.replaced_lines);
      dir.SetAside(".duplicate", plan.duplicate_lines);
      if (!plan.replaced_lines.empty())
        note(fmt::format("{}: {} record(s) of changed or foreign points moved to {}.replaced", s.jsonl_path,
                         plan.replaced_lines.size(), s.jsonl_path));
      if (plan.rewrite) dir.RewriteJsonl(plan.keep_lines);
      s.set_aside = int(plan.replaced_lines.size() + plan.corrupt_lines.size() + plan.duplicate_lines.size());
    }
  }
  for (size_t gi : plan.reused_groups) s.resumed += int(groups[gi].points.size());
  if (s.resumed > 0)
    note(fmt::format("resume: {} of {} points ({} of {} groups) reused from {}", s.resumed, s.total,
                     plan.reused_groups.size(), groups.size(), s.jsonl_path));
  return plan;
}

// Preflights every group to measure (Error before anything is timed); the generations
// they will run.
long PreflightGroups(const Experiment& e, const std::vector<Group>& groups, const ResumePlan& plan, SweepInputs& in) {
  long generations = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    if (!plan.reused_groups.count(gi)) {
      Preflight(e, groups[gi], in);
      const Point& b = groups[gi].baseline();
      const long n_prompts = long(in.prompts.Prompts(b.model, b.input_length, b.part).size());
      const long batch = b.options.batch;  // a round at batch B decodes B prompts in one generation
      generations += long(groups[gi].points.size()) * e.repetitions * ((n_prompts + batch - 1) / batch);
    }
  return generations;
}

// Where the group loop stands: `measuring` of `to_measure` groups.
struct GroupLoop {
  const Experiment& e;
  const RunOptions& o;
  SweepInputs& in;
  ResultsDir& dir;
  RunSummary& s;
  Progress& progress;
  int measuring = 0, to_measure = 0;

  // Measures group g (Ctrl-C: an Error naming what is stored and lost) and appends its
  // records to the .jsonl.
  void MeasureAndStore(const Group& g, std::vector<RawRecord> records) {
    ++measuring;
    progress.Note(fmt::format("group {}/{}: {} and {} point(s) compared with it", measuring, to_measure,
                              g.baseline().Name(), g.points.size() - 1));
    try {
      MeasureGroup(
          e, g, in, o.default_threads, records, &progress, &g_interrupted,
          ProgressState{.group = measuring, .groups = to_measure, .round = 0, .rounds = 0, .stage = "", .point = ""});
    } catch (const Interrupted& i) {
      progress.Finish();
      FailInterrupted(
          "{}: interrupted: {} of {} point(s) stored ({} group(s) measured now{}); lost: group {}/{} ({}, {} "
          "point(s)), {} of its {} round(s) done and discarded (a group is stored whole); `--resume` continues "
          "from there",
          s.jsonl_path, s.resumed + s.measured, s.total, measuring - 1,
          s.resumed ? fmt::format(", {} resumed", s.resumed) : "", measuring, to_measure, g.baseline().Name(),
          g.points.size(), i.rounds_done, i.rounds);
    }
    std::vector<std::string> lines;
    for (auto& r : records) lines.push_back(DumpJson(RawToJson(r)));
    dir.Append(lines);
    s.measured += int(records.size());
    if (records[0].host.busy)
      progress.Note(
          fmt::format("warning: the machine was busy while measuring {} (other processes {:.0f}% of the "
                      "cores, steal {:.0f}%): its points are marked busy",
                      g.baseline().Name(), 100 * records[0].host.other_cpu, 100 * records[0].host.steal));
    for (auto& r : records)
      progress.Done(r.name, o.summarize ? o.summarize(r, r.baseline_key.empty() ? nullptr : &records[0]) : "");
  }
};

// The grid's records in grid order, as stored, for the report.
std::vector<RawRecord> StoredRecordsInGridOrder(const Experiment& e, const std::string& jsonl_path) {
  std::map<std::string, RawRecord> by_key;
  for (auto& r : ReadJsonl(jsonl_path).records) by_key[r.key] = std::move(r);
  std::vector<RawRecord> out;
  for (auto& p : e.points) {
    auto it = by_key.find(p.Key());
    if (it == by_key.end()) Fail("{}: point {} is missing after the sweep", jsonl_path, p.Name());
    out.push_back(it->second);
  }
  return out;
}

// The context block: the machine and the runtime of --threads, the experiment, its
// prompts and model files, and the caller's fields.
json RunContext(const Experiment& e, const RunOptions& o, const std::string& experiment_sha, const json& prompts_json,
                ModelStore& models) {
  json context = MachineContext(ProcessRuntime(o.default_threads));
  context["experiment"] = e.name;
  context["experiment_file"] = e.file;
  context["experiment_sha256"] = experiment_sha;
  context["prompts"] = prompts_json;
  std::map<std::string, std::string> files;
  for (auto& p : e.points) {
    for (auto& [f, h] : models.FileHashes(p.model)) files[f] = h;
    if (!p.options.draft.model().empty())
      for (auto& [f, h] : models.FileHashes(p.options.draft.model())) files[f] = h;
  }
  json model_files = json::array();
  for (auto& [f, h] : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    model_files.push_back(json{{"path", f}, {"bytes", ec ? 0 : size}, {"sha256", h}});
  }
  context["model_files"] = model_files;
  context.update(o.context);
  return context;
}

}  // namespace

MeasuredRun MeasureExperiment(const Experiment& e, const RunOptions& o) {
  MeasuredRun run;
  RunSummary& s = run.summary;
  s.total = int(e.points.size());
  ResultsDir dir(o.out_dir, o.out_stem.empty() ? e.name : o.out_stem);
  s.jsonl_path = dir.jsonl_path();
  s.json_path = dir.json_path();

  const ProgressLog log(o.progress);  // plan and resume lines, stamped in a log
  auto note = [&](const std::string& line) { log.Print(line); };
  // In a log, loading a large model gets its lines (on a terminal the sweep's status shows).
  StatusLine loading(o.progress, {.prefix = "", .log_min_mib = 256, .terminal = false, .log = {}});

  // experiment -> schedule
  SweepInputs in(e);
  const std::vector<Group> groups = MakeGroups(e.points);
  const json prompts_json = PromptsJson(e, in.prompts.Questions().size());
  note(PlanText(e, groups.size(), prompts_json));
  if (const std::string bridged = BridgedPlanText(e, FindBridgedDrafts(e)); !bridged.empty()) note(bridged);
  ProcessRuntime(o.default_threads);  // before any model is loaded: loaders pack weights for its kernels
  const std::string experiment_sha = o.experiment_sha256.empty() ? ExperimentSha256(e) : o.experiment_sha256;
  std::vector<std::vector<RawRecord>> expected;
  for (auto& g : groups) expected.push_back(DescribeGroup(e, experiment_sha, g, in));
  const ResumePlan plan = ResumeFromStore(dir, e, groups, expected, o, note, s);
  const long generations = PreflightGroups(e, groups, plan, in);

  // measure: one group at a time, its records on disk before the next starts
  Progress progress(o.progress, s.total, s.resumed, generations);
  InterruptScope interrupt_scope;
  GroupLoop loop{e, o, in, dir, s, progress};
  loop.to_measure = int(groups.size() - plan.reused_groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi)
    if (!plan.reused_groups.count(gi)) loop.MeasureAndStore(groups[gi], expected[gi]);
  progress.Finish();

  run.records = StoredRecordsInGridOrder(e, s.jsonl_path);
  run.context = RunContext(e, o, experiment_sha, prompts_json, in.models);
  return run;
}

}  // namespace specsweep
