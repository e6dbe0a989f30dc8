// Sharding an experiment's grid for runs on several machines (`run --shard I/N`,
// `slurm`): a deterministic subset of the points per shard. A baseline group (an AR
// point and the speculative points compared to it, Point::Baseline()) is never split,
// because a point's speedup is measured against the baseline run next to it; groups are
// spread over the shards by estimated cost so shards take similar wall time.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/sweep/experiment.h"

namespace specsweep {

struct ShardSpec {
  int index = 0;  // 0-based, < count
  int count = 1;
};
// "I/N" with 0 <= I < N; throws Error("<what>: ...").
ShardSpec ParseShard(std::string_view text, std::string_view what);
// Output file stem of a shard: "<name>.shard-I-of-N".
std::string ShardStem(const std::string& name, const ShardSpec& s);

// Indices into `points` grouped by baseline (Point::Baseline().Key(); an AR point is its
// own group's baseline), groups in order of first appearance, indices ascending.
std::vector<std::vector<size_t>> BaselineGroups(const std::vector<Point>& points);

// Which shard each group goes to: largest cost first (ties: earlier group), each to the
// least loaded shard (ties: lower index). Deterministic for equal inputs.
std::vector<int> AssignGroups(const std::vector<double>& group_costs, int shard_count);

// Estimated cost of measuring a point: bytes of weights streamed per token (target
// files, plus a separate draft model's) x tokens processed (prompts x repetitions x
// (input tokens + max_new_tokens)). `prompt_tokens` estimates a prompt-file prompt
// (input_length 0); cut passages have exactly input_length tokens.
double PointCost(const Point& p, double model_bytes, int prompt_count, int repetitions, double prompt_tokens);
// Of a point of a question part (Point::part): its questions' turns, each its characters
// / 4 tokens plus max_new_tokens (every turn of a conversation is answered in full), x
// repetitions, so a part of MT-bench's two-turn questions costs about twice a one-turn part.
double PartCost(const Point& p, double model_bytes, const QuestionPart& part, int repetitions);

// The points of shard `s`, in grid order. `cost` gives each point's estimated cost.
std::vector<Point> ShardPoints(const std::vector<Point>& points, const ShardSpec& s,
                               const std::function<double(const Point&)>& cost);

// Model bytes from the files (a path, or a folder in `models_dir`: all files in it, as
// LoadModel resolves names; 0 when not found, LoadModel reports that), and the prompt
// length estimated from the prompt file (bytes / 4 + 1 for BOS, a typical BPE rate); a
// question part's point costs PartCost.
std::function<double(const Point&)> FileCostModel(const Experiment& e);
std::vector<Point> ShardPoints(const Experiment& e, const ShardSpec& s);
// The estimated cost of each of `count` shards (FileCostModel over their groups).
std::vector<double> ShardCosts(const Experiment& e, int count);

// Context fields of a shard's results: {"shard": {"index", "count", "points",
// "experiment_points"}}; `points` are the shard's, `experiment_points` the grid's.
nlohmann::json ShardContext(const ShardSpec& s, size_t shard_points, size_t experiment_points);

}  // namespace specsweep
