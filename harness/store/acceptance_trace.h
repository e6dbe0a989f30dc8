// Acceptance traces read back from a sweep's raw records (decoders/acceptance_source.h):
// every speculative run records K and the accepted count of each step (k_per_step,
// accepted_per_step), so any real run can be replayed on another shape or machine.
#pragma once
#include <string>
#include <vector>

#include "decoders/acceptance_source.h"

namespace specsweep {

// `ref` is "FILE[:POINT]": FILE a sweep's .jsonl, or its .json (the .jsonl beside it is
// read); POINT a record's name or key, optional when FILE holds one speculative point.
// A relative FILE is looked up from the working directory, then beside `relative_to`.
// Returns the point's runs' traces in record order (repetition-major, then prompt).
// Throws Error("<what>: ...") naming the file, the point or the field.
std::vector<AcceptanceTrace> LoadAcceptanceTraces(const std::string& ref, const std::string& relative_to,
                                                  const std::string& what);

}  // namespace specsweep
