// Runs an experiment's grid: loads each target once, prepares the prompts, measures
// every point and appends its raw record to DIR/<name>.jsonl as soon as it is done
// (flushed and fsynced, so a killed sweep loses at most the point in flight), then
// writes the aggregated DIR/<name>.json.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "harness/experiment.h"
#include "models/tokenizer.h"

namespace specsweep {

struct RunOptions {
  std::string out_dir = "results";
  bool resume = false;       // keep the points already in the .jsonl, measure the rest
  bool overwrite = false;    // discard an existing .jsonl (else it is an error without resume)
  int default_threads = 0;   // used by points with threads = 0 (the --threads global)
  std::FILE* progress = stderr;  // progress bar / lines (nullptr: silent)
  std::string out_stem;      // output file names without extension ("": the experiment name)
  nlohmann::json context = nlohmann::json::object();  // extra fields for the context block
};

struct RunSummary {
  int total = 0;      // points in the grid
  int resumed = 0;    // already in the .jsonl
  int measured = 0;   // measured by this run
  std::string jsonl_path, json_path;
};

RunSummary RunExperiment(const Experiment& e, const RunOptions& o);

// The first `count` non-empty lines of a prompt file (Error if there are fewer).
std::vector<std::string> ReadPromptLines(const std::string& path, int count);
// Splits text into passages at blank lines (each trimmed, none empty).
std::vector<std::string> SplitPassages(const std::string& text);
// `count` prompts of exactly `n_tokens` tokens (BOS included): prompt i is passage i
// followed by the next passages as needed, encoded, cut to n_tokens. Never pads: Error
// when the passages (`what` names them) run out of text.
std::vector<std::vector<int>> CutPassages(const std::vector<std::string>& passages, const Tokenizer& tok,
                                          int n_tokens, int count, const std::string& what);

}  // namespace specsweep
