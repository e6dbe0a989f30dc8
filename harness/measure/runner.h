// The measuring stage of the pipeline (harness/pipeline.h runs the whole of it):
//   experiment (parsed grid) -> schedule (groups, rounds) -> measure (interleaved
//   rounds + cost model; each group's records appended to DIR/<name>.jsonl, fsynced,
//   as soon as the group is done) -> the records in grid order and the context block,
//   handed on to the report.
// Resuming reuses a group only when its records describe exactly what the experiment
// asks for now (RawRecord::Difference).
#pragma once
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "harness/store/results.h"
#include "harness/sweep/experiment.h"

namespace specsweep {

enum class ResumeMode {
  None,     // an existing .jsonl is an error (unless overwrite)
  Same,     // reuse matching groups; any difference is an error naming it
  Changed,  // reuse matching groups; set the others' records aside and re-measure them
};
ResumeMode ParseResumeMode(const std::string& s);  // "", "same", "changed"

struct RunOptions {
  std::string out_dir;  // "": the default folder (harness/pipeline.h DefaultOutDir)
  ResumeMode resume = ResumeMode::None;
  bool overwrite = false;        // discard an existing .jsonl
  int default_threads = 0;       // used by points with threads = 0 (the --threads global)
  std::FILE* progress = stderr;  // progress bar / lines (nullptr: silent)
  std::string out_stem;          // output file names without extension ("": the experiment name)
  // Identity of the whole experiment when `e` is a part of it (a shard); "": of `e`.
  std::string experiment_sha256;
  nlohmann::json context = nlohmann::json::object();  // extra fields for the context block
  // The progress line's text for a measured point against its baseline (null for a
  // baseline); unset: no summary. The report stage provides it (the pipeline sets it).
  std::function<std::string(const RawRecord&, const RawRecord* baseline)> summarize;
};

struct RunSummary {
  int total = 0;      // points in the grid
  int resumed = 0;    // reused from the .jsonl
  int measured = 0;   // measured by this run
  int set_aside = 0;  // records moved to .jsonl.replaced / .jsonl.corrupt
  std::string jsonl_path, json_path;
};

// What the measuring stage hands on: the summary, every point's record in grid order
// (resumed and measured), and the context block (machine, experiment, model files).
struct MeasuredRun {
  RunSummary summary;
  std::vector<RawRecord> records;
  nlohmann::json context;
};
MeasuredRun MeasureExperiment(const Experiment& e, const RunOptions& o);

}  // namespace specsweep
