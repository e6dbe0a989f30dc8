// Merging the results of a sharded run (`run --shard I/N`) into one results file that
// `table`, `plot` and `check` read as any other. Shards must come from the same
// experiment file (context.experiment_sha256); each record keeps the shard it was
// measured in (`shard`) and each shard's machine context is kept (context.shards[]), so
// results from different node types stay visible as such.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/store/results.h"

namespace specsweep {

struct MergeReport {
  int shard_count = 0;                  // N of the shards
  size_t experiment_points = 0;         // points of the whole grid (from the shards' contexts)
  std::vector<int> missing_shards;      // indices in 0..N-1 no input was
  std::vector<std::string> missing;     // keys of `expected_keys` no shard has
  std::vector<std::string> duplicated;  // keys measured more than once (first kept)
  std::vector<std::string> unexpected;  // keys not in `expected_keys`
  size_t merged_points = 0;
  bool complete() const {
    return missing_shards.empty() && missing.empty() && duplicated.empty() && unexpected.empty() &&
           merged_points == experiment_points;
  }
};

struct MergedResults {
  nlohmann::json doc;  // {"context": ..., "benchmarks": [...]}
  MergeReport report;
};

// Merges loaded shard results (Results::path names them in errors). `expected_keys`:
// the experiment's point keys in grid order, or empty when the experiment file is not
// at hand (records then follow shard order and only counts reveal missing points).
// Throws Error("FILE: context.FIELD: ...") for a file that is no shard or a shard of
// another experiment or shard count.
MergedResults MergeShards(const std::vector<Results>& shards, const std::vector<std::string>& expected_keys);

// The shard result files among `inputs`: a file is taken as is; a directory gives its
// <name>.shard-I-of-N.json files (sorted). Error when a directory has none.
std::vector<std::string> FindShardFiles(const std::vector<std::string>& inputs);

}  // namespace specsweep
