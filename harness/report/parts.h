// A question set is measured in parts (sweep/questions.h QuestionPart: a report group's
// questions in chunks, each part its own group of the schedule with its own baseline), so
// a method has one record per part, `part` in its params, key (";part=...") and name
// ("/part=..."). Every table reads a method as one record over all its questions: the
// records that differ only in their part are merged here, whichever files they came from.
#pragma once
#include <string>
#include <vector>

#include "harness/report/record.h"

namespace specsweep {

// Records of parts merged into one record per method (at its first part's place, in the
// order parts first appear among `records`); records without a part pass unchanged.
// The merged record holds every question of its parts: per-prompt arrays concatenated
// (`prompt_set` lists the question ids and `parts`), prompts and iterations summed,
// position counts summed, and:
// - speedup: the one estimator (statistics.h Speedup) over the per-question speedups, each
//   paired per round with its part's own baseline; its interval is over questions;
// - spec_bench_speedup: Spec-Bench's ratio of mean tokens/s over all questions against
//   the merged baseline (the same questions, each measured beside its part's baseline);
// - other numbers: the parts' means weighted by their questions (exact for the means
//   over prompts); medians and standard deviations over rounds are not kept (null);
// - suspect, busy: any part's, or the merged speedup above its bound; wide_ci recomputed.
std::vector<AggregateRecord> MergeQuestionParts(const std::vector<AggregateRecord>& records);

// `key` (";part=...") or `name` ("/part=...") without its part.
std::string KeyWithoutPart(const std::string& key);
std::string NameWithoutPart(const std::string& name);

}  // namespace specsweep
