// The names a reader of Spec-Bench (Xia et al., 2024) knows for a speculative point's
// method: "SpS" for a separate draft model, "PLD" for prompt lookup, "Lookahead", "REST",
// "Recycling", "Self-spec (Q4_0)" for the target quantized as its own draft, trees as
// "... tree". One mapping for every output that names methods (docs/spec-bench.md).
#pragma once
#include <string>
#include <vector>

#include "harness/report/record.h"

namespace specsweep {

// The method of a speculative point ("AR" for an autoregressive one); a draft whose label
// does not parse keeps its label.
std::string MethodName(const AggregateRecord& r);
// MethodName of each point, made distinct: points sharing a name get what tells them
// apart appended ("PLD (k=2)", "Self-spec (Q4_0, k=4)"), or "#2", "#3" when nothing does.
std::vector<std::string> MethodNames(const std::vector<AggregateRecord>& points);
// The point's full spec: "draft q4_0, k=4" ("draft q4_0, k<=8 adaptive"), the
// acceptance source of a replayed point and a bridged draft's mark included.
std::string MethodSpec(const AggregateRecord& r);

}  // namespace specsweep
