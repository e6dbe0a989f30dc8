// Measurement of a sweep's groups: loads each model once, prepares the prompts, and
// times a group's points in interleaved rounds together with the verify-cost model
// (T_target(n) and the draft's call times, measured in the same process).
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "harness/measure/draft_store.h"
#include "harness/measure/progress.h"
#include "harness/sweep/experiment.h"
#include "harness/store/results.h"
#include "harness/sweep/schedule.h"
#include "models/loader.h"

namespace specsweep {

// Loaded targets, prompt sets and model file hashes, shared by the points of a sweep.
class ModelCache {
 public:
  explicit ModelCache(const Experiment& e) : e_(e), drafts_(e.models_dir) {}
  const LoadedModel& Target(const std::string& name, const std::optional<QType>& quant);
  const LoadedModel& Base(const std::string& name);
  const std::vector<std::vector<int>>& Prompts(const std::string& model, int input_length);
  // The selected questions of a question set (empty for a prompt file), in prompt order.
  const std::vector<Question>& Questions();
  // The experiment's chat template over the model's tokenizer.
  const ChatEncoder& Chat(const std::string& model);
  // What the records say about the prompts of an input_length: each prompt's report group
  // ({} for a prompt file or passages) and the set's provenance (file, sha256, template,
  // turns, selection, question ids; {} for a plain prompt file without a template).
  std::vector<std::string> PromptCategories(int input_length);
  nlohmann::json PromptSetJson(int input_length);
  // The decoder options of `p`, a replayed trace read from its results file (relative
  // to the experiment file; read once per reference).
  DecoderOptions Options(const Point& p);
  // sha256 of each file the model was read from (hashed once).
  const std::map<std::string, std::string>& FileHashes(const std::string& name);
  // The point's identity of its models: (role, file name, sha256) of target and draft.
  ModelFiles ModelFilesOf(const Point& p);
  // The draft models of the run's decoders, shared among them.
  const DraftModels& Drafts() const { return drafts_; }

 private:
  const Experiment& e_;
  SharedDraftModels drafts_;
  std::map<std::string, LoadedModel> base_, targets_;
  std::map<std::pair<std::string, int>, std::vector<std::vector<int>>> prompts_;
  std::map<std::string, std::map<std::string, std::string>> hashes_;
  std::map<std::string, std::shared_ptr<const std::vector<AcceptanceTrace>>> traces_;
  std::vector<std::string> passages_;
  std::optional<std::vector<Question>> questions_;
  std::map<std::string, std::unique_ptr<ChatEncoder>> chat_;
};

// sha256 of the canonical parsed experiment: every point's key, repetitions, warmup
// and the prompt and passage files' contents (comments and key order do not count).
std::string ExperimentSha256(const Experiment& e);

// The records the experiment asks for in `g` (key, parameters, identity, prompt
// lengths), without measurements: what a resumed record must equal.
std::vector<RawRecord> DescribeGroup(const Experiment& e, const std::string& experiment_sha, const Group& g,
                                     ModelCache& cache);

// Everything that can be wrong with a group short of running it: context length,
// decoder options, draft model. Error names the experiment file and the point.
void Preflight(const Experiment& e, const Group& g, ModelCache& cache);

// Measures a group: builds its decoders, runs the warm-up, then repetitions x prompts
// rounds, each running every point once in rotated order (a round of the first
// repetition starts with the cost model's calls on its prompt). `records` (from
// DescribeGroup) get their runs, costs and host load.
// `progress` (may be null) hears where the loop is; `stop` (may be null) is checked
// between generations: once set, MeasureGroup throws Interrupted, keeping nothing of
// the group (its records are stored whole or not at all).
struct Interrupted : Error {
  Interrupted(int rounds_done, int rounds)
      : Error("interrupted"), rounds_done(rounds_done), rounds(rounds) {}
  int rounds_done, rounds;
};
void MeasureGroup(const Experiment& e, const Group& g, ModelCache& cache, int default_threads,
                  std::vector<RawRecord>& records, Progress* progress = nullptr,
                  const std::atomic<bool>* stop = nullptr, ProgressState where = {});

}  // namespace specsweep
