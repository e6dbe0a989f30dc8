// The files an experiment names besides its models (prompts.file, prompts.passages, a
// REST draft's corpus=, a replayed acceptance_source's trace=): one rule finds them all,
// so a copied experiment file finds the same files from any folder, and a missing one is
// an error when the experiment is read, before any model loads.
#pragma once
#include <string>
#include <vector>

namespace specsweep {

struct ExperimentFile {
  std::string path;                // where it was found; "" when nowhere
  std::vector<std::string> tried;  // every place looked, in order
};

// An absolute path as it is; a relative one beside the experiment file, then in the
// source tree's experiments/ (prompts/, traces/), then in the shared data folder (the
// models directory's parent: prompts/spec-bench/question.jsonl).
ExperimentFile FindExperimentFile(const std::string& written, const std::string& exp_file,
                                  const std::string& models_dir);
// "EXP: KEY: 'written' not found (tried A, B, C)": the error of a file FindExperimentFile
// did not find.
std::string FileNotFound(const std::string& written, const ExperimentFile& f, const std::string& exp_file,
                         const std::string& key);
// The path found, else Error(FileNotFound(...)).
std::string ResolveExperimentFile(const std::string& written, const std::string& exp_file,
                                  const std::string& models_dir, const std::string& key);
// A trace reference "FILE[:POINT]" with FILE found by the same rule; a FILE.json names
// its raw records, FILE.jsonl (store/acceptance_trace.h). Error as above.
std::string ResolveTraceRef(const std::string& ref, const std::string& exp_file, const std::string& models_dir,
                            const std::string& key);

}  // namespace specsweep
