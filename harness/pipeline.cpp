#include "harness/pipeline.h"

#include "harness/report/document.h"
#include "harness/store/results_dir.h"

namespace specsweep {

RunSummary RunExperiment(const Experiment& e, RunOptions o) {
  if (!o.summarize) o.summarize = PointSummary;
  MeasuredRun run = MeasureExperiment(e, o);
  ResultsDir::WriteAtomic(run.summary.json_path, DumpJson(ResultsDocument(run.context, run.records), 2) + "\n");
  return run.summary;
}

}  // namespace specsweep
