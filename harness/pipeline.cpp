#include "harness/pipeline.h"

#include <ctime>

#include <fmt/format.h>

#include "harness/measure/model_store.h"
#include "harness/report/document.h"
#include "harness/store/results_dir.h"

namespace specsweep {

std::string DefaultOutDir(const Experiment& e, const RunOptions& o, std::FILE* note) {
  const std::string base = ResultsBase(), stem = o.out_stem.empty() ? e.name : o.out_stem;
  std::string dir, why;
  if (o.resume != ResumeMode::None) {
    dir = NewestResultsFolder(base, e.name, stem + ".jsonl");
    why = dir.empty() ? fmt::format(" (--resume: no {}-* folder in {} holds {}.jsonl; a new one)", e.name, base, stem)
                      : fmt::format(" (--resume: the newest {}-* folder in {})", e.name, base);
  }
  if (dir.empty()) dir = NewResultsFolder(base, e.name, std::time(nullptr));
  if (note) fmt::print(note, "results: {}{}\n", dir, why), std::fflush(note);
  return dir;
}

RunSummary RunExperiment(const Experiment& e, RunOptions o) {
  if (!o.summarize) o.summarize = PointSummary;
  CheckModelsPresent(e);  // before a folder is made or a model loads
  if (o.out_dir.empty()) o.out_dir = DefaultOutDir(e, o, o.progress);
  MeasuredRun run = MeasureExperiment(e, o);
  ResultsDir::WriteAtomic(run.summary.json_path, DumpJson(ResultsDocument(run.context, run.records), 2) + "\n");
  return run.summary;
}

}  // namespace specsweep
