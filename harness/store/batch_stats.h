// The batch fields of a generation's statistics in the records (GenerationStats' batch,
// batch_target_calls, batch_draft_calls, per_sequence), written only at batch > 1 so that
// batch-1 records keep their bytes.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoders/decoder.h"

namespace specsweep {

// Adds the batch fields of `s` to `out` (a StatsToJson object) when s.batch > 1; each
// per_sequence entry gets "output" from `sequence_hashes` when it has one per sequence.
void BatchStatsToJson(const GenerationStats& s, const std::vector<std::string>& sequence_hashes, nlohmann::json& out);
// Reads them back into `s` (absent: batch 1) and the per-sequence output hashes into
// `sequence_hashes` (empty when none); throws Error("<what>: stats: ...") on a list whose
// length is not the batch.
void BatchStatsFromJson(const nlohmann::json& j, const std::string& what, GenerationStats& s,
                        std::vector<std::string>& sequence_hashes);

}  // namespace specsweep
