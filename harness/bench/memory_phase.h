// The memory phase of a benchmark's repetitions. Some hosts' memory alternates minute to
// minute between two bandwidths (docs/measurements.md, "Memory phases"): a time or a ratio
// taken across both is a mix of two machines. The bandwidth probe readings of a run are
// split into a slow and a fast phase when they form two groups with a clear gap, and each
// repetition takes the phase its readings agree on; bench-forward reports per phase and
// bench-forward --compare pairs repetitions of the same phase only.
#pragma once
#include <map>
#include <span>
#include <string>
#include <vector>

namespace specsweep {

enum class MemoryPhase {
  kOne,    // the readings form one group: there is no second phase
  kSlow,   // the lower group of two
  kFast,   // the upper group of two
  kMixed,  // a repetition whose readings before and after fall into different phases
};
const char* MemoryPhaseName(MemoryPhase p);  // "one", "slow", "fast", "mixed"
// The inverse; throws Error naming `what` on any other name.
MemoryPhase ParseMemoryPhase(const std::string& name, const std::string& what);

// Two groups need the slowest fast reading this many times the fastest slow one.
constexpr double kPhaseGapRatio = 1.25;

struct PhaseGroup {
  int readings = 0;
  double min_gbs = 0, median_gbs = 0, max_gbs = 0;
};
struct PhaseSplit {
  bool two_phases = false;
  double split_gbs = 0;   // two phases: a reading at or above it is fast
  PhaseGroup slow, fast;  // one phase: `slow` holds all readings, `fast` none
};

// The 1-D two-means split of the readings (GB/s): the cut of the sorted readings with the
// least within-group sum of squares. Two phases when the fast group's lower decile is at
// least kPhaseGapRatio times the slow group's upper decile AND that gap is wider than the
// wider group's spread between its deciles (evenly spread readings are one phase);
// otherwise, and for fewer than two readings, one phase. Deciles by nearest rank, rounded
// outward: in a group of up to 10 readings they are its lowest and highest, and up to a
// tenth of a larger group may sit in the gap.
PhaseSplit SplitPhases(std::span<const double> readings_gbs);
// The phase of one reading under `s`: kOne when `s` has one phase.
MemoryPhase PhaseOf(const PhaseSplit& s, double reading_gbs);
// The phase of a repetition read before and after: kMixed when the two readings disagree.
MemoryPhase RepetitionPhase(const PhaseSplit& s, double before_gbs, double after_gbs);

// Pairs of repetitions of the same phase in one round of two variants: the k-th
// repetition of phase P of `num` with the k-th of phase P of `den`. kMixed repetitions
// and a phase's surplus on either side stay unpaired.
struct PhasePairs {
  std::map<MemoryPhase, std::vector<double>> ratios;  // phase -> num ms / den ms, one per pair
  int unpaired_num = 0, unpaired_den = 0;             // repetitions of each side left out
  int mixed_num = 0, mixed_den = 0;                   // of those, the ones across a phase switch
};
void PairByPhase(std::span<const double> num_ms, std::span<const MemoryPhase> num_phase, std::span<const double> den_ms,
                 std::span<const MemoryPhase> den_phase, PhasePairs& out);

}  // namespace specsweep
