// Where a speculative step's number of accepted draft tokens comes from, under one name
// everywhere: --acceptance-source on the command line, `acceptance_source:` in
// experiment files, the acceptance_source field of results, DecoderOptions here.
//
//   measured           compare the draft's tokens with the target's (the real rule)
//   alpha=A            replayed: each draft position accepted at rate A given the one
//                      before was (Leviathan et al.'s model)
//   positions=[p1,..]  replayed: position i accepted at rate p_i given i-1 was (the
//                      per-position conditional rates EAGLE/Medusa papers publish;
//                      positions past the list use its last rate)
//   ...+iid            alpha and positions draw each position independently (Bernoulli);
//                      without it the draws are stratified: over any N steps that reached
//                      position i, the number accepted there is within 1 of N * rate, so
//                      a handful of steps realises the declared rate (docs/reproducing.md)
//   trace=FILE[:POINT] replayed: the (K, accepted) sequence of each step of an earlier
//                      real run, from the raw records of FILE (a .jsonl, or the .jsonl
//                      beside a .json); the recorded K's are replayed too. A trace of a
//                      model-drafted token tree also replays each step's tree (TreeStep)
//
// Token trees (docs/trees.md): a trace of a tree run replays each step's recorded tree
// and accepted path; alpha and positions apply along a static tree's first-child path
// (the draft's best tokens), whose shape the draft spec fixes.
//
// Replay changes the verification rule only: the loop still drafts with the real draft,
// runs one target call over K+1 positions and rolls both caches back, and emits the
// accepted draft tokens plus the target's token at the next position. So its costs are
// real and its acceptance is declared: its tokens are not the target's output.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "decoders/rng.h"

namespace specsweep {

// One step's token tree of a draft model as a real run grew it (the raw records'
// tree_per_step) and as a trace replays it: the tree the target verified, how the
// drafter reached it, and the path the target accepted. A replay rebuilds this tree
// from its own draft model (node i: the ranks[i]-th candidate child of node parents[i])
// with the same draft calls, so the work is that of the real step.
struct TreeStep {
  std::vector<int> parents;   // [n] verified nodes: parent node (-1: the sequence's last token)
  std::vector<int> ranks;     // [n] each node's rank among its parent's candidate children (0: the draft's best)
  std::vector<int> expanded;  // [calls] nodes run by each tree call of the draft (one call per depth)
  std::vector<int> path;      // [accepted] the accepted path's nodes, root's child first
};

struct TraceStep {
  int k = 0;         // draft tokens proposed in the step (a tree: its nodes)
  int accepted = 0;  // of them accepted (a tree: the accepted path's length)
  TreeStep tree;     // a model-drafted tree's step; empty for a chain
};
using AcceptanceTrace = std::vector<TraceStep>;  // [steps] of one generation

struct AcceptanceSource {
  enum class Kind { Measured, Alpha, Positions, Trace };
  Kind kind = Kind::Measured;
  double alpha = 0.0;             // Alpha
  std::vector<double> positions;  // Positions: [n] conditional rates
  bool iid = false;               // Alpha, Positions: independent draws instead of stratified
  std::string trace;              // Trace: "FILE[:POINT]" as written
  // Trace: the recorded generations, in record order (filled by the harness, which reads
  // results files; LoadAcceptanceTraces in harness/store/results.h).
  std::shared_ptr<const std::vector<AcceptanceTrace>> traces;

  bool replayed() const { return kind != Kind::Measured; }
  // Canonical text, also the accepted input: "measured", "alpha=0.8", "alpha=0.8+iid",
  // "positions=[0.9,0.8,0.7]", "trace=results/x.jsonl:POINT".
  std::string Label() const;
  // For captions, cells and legends: "measured", "replayed α=0.8", "replayed α=0.8 i.i.d.",
  // "replayed trace FILE:POINT".
  std::string Caption() const;
};

// Parses the text form above (positions also as "p1,p2,..."); throws Error("<what>: ...").
// A trace source is returned without its traces.
AcceptanceSource ParseAcceptanceSource(std::string_view text, std::string_view what);

// Expected tokens per step of K drafted, τ = 1 + p1 + p1·p2 + ... + p1···pK, for conditional
// rates p_i (positions past the list use its last rate; an empty list accepts nothing).
double TauOfRates(const std::vector<double>& rates, int k);
// The τ a source promises at K: alpha Leviathan's (1 - α^(K+1)) / (1 - α), positions the
// product sum above; NaN for measured and trace sources (they declare no rates).
double ExpectedTau(const AcceptanceSource& s, int k);

// Draws a step's accepted count under a replayed source. One per decoder: its random
// stream (alpha, positions) and its place in the traces run on across generations, so
// many short generations sample the declared rates as one long one would.
class AcceptanceReplay {
 public:
  AcceptanceReplay(const AcceptanceSource& s, uint64_t seed);
  // Called at the start of each generation: generation g replays trace g (cyclically).
  void BeginGeneration();
  // Trace only: the K of the coming step (the recorded one), else -1 (the policy decides).
  int NextK() const;
  // Trace only: the recorded tree of the coming step (null for a chain's step).
  const TreeStep* NextTree() const;
  // Accepted count of a step that drafted `drafted` tokens (<= drafted).
  int Accepted(int drafted);

 private:
  double Rate(int position) const;           // conditional acceptance rate of draft position i (0-based)
  bool AcceptAt(int drafted, int position);  // one draw at a position a step of `drafted` reached
  const TraceStep& Step() const;             // the current trace step (past a trace's end: the next trace's)

  // A stratified position's schedule: its n-th visit accepts iff floor(n * rate + offset)
  // grows, so after n visits floor(n * rate + offset) were accepted (|error| < 3/4).
  struct Stratum {
    double offset = 0;  // in [1/4, 3/4), drawn from the seed at the first visit
    int64_t visits = 0, accepted = 0;
  };

  AcceptanceSource src_;
  Rng rng_;
  std::vector<std::vector<Stratum>> strata_;  // [drafted][positions reached so far]
  size_t generation_ = 0, trace_ = 0, step_ = 0;
};

}  // namespace specsweep
