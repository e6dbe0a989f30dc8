// The builders of the parts of an aggregated record (record.h), one function per part,
// shared by aggregate.cpp, aggregate_cost.cpp and aggregate_baseline.cpp.
#pragma once
#include <vector>

#include "harness/report/record.h"
#include "harness/store/results.h"

namespace specsweep {

// Sums the counters and times of several runs (positions arrays element-wise).
GenerationStats Pool(const std::vector<const GenerationStats*>& runs);
// Mean drafted length per step (0 without steps).
double MeanK(const GenerationStats& s);
// Per-prompt means over repetitions of `f`.
std::vector<double> PerPrompt(const RawRecord& r, double (*f)(const GenerationStats&));
inline double Tps(const GenerationStats& s) { return s.tokens_per_s; }

RecordIdentity BuildIdentity(const RawRecord& r);
RecordStatistics BuildStatistics(const RawRecord& r);
// `chain`: the point drafts a chain (not a tree), so its step traces give exact counts.
PositionAcceptance BuildPositions(const GenerationStats& pooled, bool chain);
// `tree`: the record's draft is a token tree (DraftSpec::IsTree); `baseline` may be null.
CostModel BuildCostModel(const RawRecord& r, bool tree, const GenerationStats& pooled, const RawRecord* baseline);
// A batched point's figures from its runs' per-sequence statistics (batch 1: just the size).
BatchFigures BuildBatchFigures(const RawRecord& r);
// Versus the baseline measured in the same rounds; `cost` gives the bound and prediction.
BaselineComparison BuildComparison(const RawRecord& r, const RawRecord& baseline, const CostModel::Speculative& cost);

}  // namespace specsweep
