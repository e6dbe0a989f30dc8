// Acceptance traces read back from a sweep's raw records (decoders/acceptance_source.h):
// every speculative run records K and the accepted count of each step (k_per_step,
// accepted_per_step), so any real run can be replayed on another shape or machine.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoders/acceptance_source.h"
#include "decoders/decoder.h"
#include "harness/store/results.h"

namespace specsweep {

// A trace file is read line by line, keeping only the chosen point's steps (as ints, not
// JSON): memory is about its longest line plus that point's steps. A line may hold at
// most kMaxTextInputBytes, the file kMaxTraceBytes (docs/robustness.md).
inline constexpr uint64_t kMaxTraceBytes = uint64_t{4} << 30;

// One recorded point's runs, read back to be replayed, and what identifies them.
struct RecordedTraces {
  std::vector<AcceptanceTrace> runs;  // in record order (repetition-major, then prompt)
  std::string point;                  // the record's name
  nlohmann::json params;              // the record's params: its K, K policy and draft
  // Role "trace", the .jsonl's file name and the sha256 of the point's steps (K, accepted,
  // tree): a replaying record names its trace by content, as it names its models.
  ModelFile file;
};

// `ref` is "FILE[:POINT]": FILE a sweep's .jsonl, or its .json (the .jsonl beside it is
// read); POINT a record's name or key, optional when FILE holds one speculative point.
// A relative FILE is looked up from the working directory, then beside `relative_to`.
// Throws Error("<what>: ...") naming the file (FILE:LINE for a cut or corrupt line),
// the point or the field.
RecordedTraces LoadAcceptanceTraces(const std::string& ref, const std::string& relative_to, const std::string& what);

// Throws Error("<what>: ...") naming both when `replaying` drafts another K, K policy or
// tree shape than the trace was recorded with: a replay runs the recorded steps, so its
// label would name a shape that never ran.
void CheckTraceShape(const RecordedTraces& t, const DecoderOptions& replaying, const std::string& what);

}  // namespace specsweep
