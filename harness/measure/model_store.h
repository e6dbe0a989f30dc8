// The models of a sweep: each base model loaded once, its quantized targets, the drafts
// its decoders share (draft_store.h), and the hashes of the files they came from.
#pragma once
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/measure/draft_store.h"
#include "harness/store/results.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/point.h"
#include "models/loader.h"

namespace specsweep {

class ModelStore {
 public:
  explicit ModelStore(std::string models_dir) : models_dir_(std::move(models_dir)), drafts_(models_dir_) {}
  // The model `name` quantized to `quant` (none: as loaded), made once.
  const LoadedModel& Target(const std::string& name, const std::optional<QType>& quant);
  // The model `name` as loaded, loaded once.
  const LoadedModel& Base(const std::string& name);
  // sha256 of each file the model was read from (hashed once).
  const std::map<std::string, std::string>& FileHashes(const std::string& name);
  // The point's identity of its models: (role, file name, sha256) of target and draft.
  ModelFiles ModelFilesOf(const Point& p);
  // The draft models of the run's decoders, shared among them.
  const DraftModels& Drafts() const { return drafts_; }

 private:
  std::string models_dir_;
  SharedDraftModels drafts_;
  std::map<std::string, LoadedModel> base_, targets_;
  std::map<std::string, std::map<std::string, std::string>> hashes_;
};

// The plan's models are looked for before any loads, once the plan is known (a shard
// needs only its own): a model that is neither a path nor in the models directory.
struct MissingModel {
  std::string name;
  size_t points = 0;  // the plan's points naming it as target or draft model
};
std::vector<MissingModel> MissingModels(const Experiment& e);
// "model 'NAME' is not in DIR (make it: specsweep synth --shape S --type T -o DIR/NAME)"
// for a name synth-<shape>-<type>.gguf, else "(put the checkpoint there or pass --models DIR)".
std::string MissingModelText(const std::string& name, const std::string& models_dir);
// Error "EXP: model ... ; --skip-missing-models leaves its N points out" for the first
// missing model of e's points.
void CheckModelsPresent(const Experiment& e);
// Leaves out the points of every missing model, one "skipped: ..." line per model on
// `out`; returns what was left out. Error when the plan had points and none is left.
std::vector<MissingModel> SkipMissingModels(Experiment& e, std::FILE* out);

}  // namespace specsweep
