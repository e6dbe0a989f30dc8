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
#include "harness/measure/model_store.h"
#include "harness/measure/prompt_store.h"
#include "harness/measure/progress.h"
#include "harness/sweep/experiment.h"
#include "harness/store/acceptance_trace.h"
#include "harness/store/results.h"
#include "harness/sweep/schedule.h"
#include "models/loader.h"

namespace specsweep {

// What the points of a sweep share: its models, its prompts, and the acceptance traces
// its points replay.
class SweepInputs {
 public:
  explicit SweepInputs(const Experiment& e) : models(e.models_dir), prompts(e, models), e_(e) {}
  ModelStore models;
  PromptStore prompts;
  // The decoder options of `p`, a replayed trace read from its results file (relative
  // to the experiment file; read once per reference) and checked against p's K and tree.
  DecoderOptions Options(const Point& p);
  // The files `p` reads besides its models, by role, file name and content: a REST
  // corpus ("corpus"), a replayed trace ("trace", its point's record). Part of the
  // record's identity, as its models are, so an edited file is another measurement.
  ModelFiles InputFilesOf(const Point& p);

 private:
  const Experiment& e_;
  std::map<std::string, std::shared_ptr<const RecordedTraces>> traces_;
  std::map<std::string, std::string> corpus_sha_;  // corpus path -> sha256
};

// sha256 of the canonical parsed experiment: every point's key, repetitions, warmup
// and the prompt and passage files' contents (comments and key order do not count).
std::string ExperimentSha256(const Experiment& e);

// The records the experiment asks for in `g` (key, parameters, identity, prompt
// lengths), without measurements: what a resumed record must equal.
std::vector<RawRecord> DescribeGroup(const Experiment& e, const std::string& experiment_sha, const Group& g,
                                     SweepInputs& in);

// Everything that can be wrong with a group short of running it: context length,
// decoder options, draft model. Error names the experiment file and the point.
void Preflight(const Experiment& e, const Group& g, SweepInputs& in);

// Measures a group: builds its decoders, runs the warm-up, then repetitions x prompts
// rounds, each running every point once in rotated order (a round of the first
// repetition starts with the cost model's calls on its prompt). `records` (from
// DescribeGroup) get their runs, costs and host load. At the group's batch B > 1 (its
// points share it: it is in the baseline's key) each generation, warm-up included, is one
// GenerateBatch of B prompts: a repetition has ceil(prompts / B) rounds, round r decoding
// prompts rB .. rB + B - 1 (cyclic), so every batch decodes every prompt once per
// repetition; the cost model's calls run B sequences each (measure_group.cpp).
// `progress` (may be null) hears where the loop is; `stop` (may be null) is checked
// between generations: once set, MeasureGroup throws Interrupted, keeping nothing of
// the group (its records are stored whole or not at all).
struct Interrupted : Error {
  Interrupted(int rounds_done, int rounds) : Error("interrupted"), rounds_done(rounds_done), rounds(rounds) {}
  int rounds_done, rounds;
};
void MeasureGroup(const Experiment& e, const Group& g, SweepInputs& in, int default_threads,
                  std::vector<RawRecord>& records, Progress* progress = nullptr,
                  const std::atomic<bool>* stop = nullptr, ProgressState where = {});

}  // namespace specsweep
