// bench-forward's inner pieces shared by its two files: bench_forward.cpp measures (the
// variants, their timings and the machine's readings), forward_report.cpp prints and
// writes them (the T(n) table, the phases, the cost ratios, the JSON).
#pragma once
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench/bench_forward.h"
#include "harness/bench/memory_phase.h"
#include "harness/report/statistics.h"
#include "models/forward.h"
#include "models/kv_cache.h"
#include "models/loader.h"
#include "quant/qmatrix.h"
#include "quant/runtime.h"

namespace specsweep::forward_bench {

// One weight format of the model under test, with its own cache and timings.
struct Variant {
  std::string label;   // "f32", "q4_0", ...; "q4_0/kv:f16" when KV cache types are compared
  std::string format;  // weight format
  std::shared_ptr<const Model> model;
  std::unique_ptr<KVCache> cache;
  TeamPolicy team = TeamPolicy::kAuto;
  Runtime rt;                             // the process's, with `team`
  std::vector<int> team_size;             // [ns] threads Forward uses under `team`
  std::vector<std::vector<double>> secs;  // [ns][reps] seconds per Forward call
  double StreamedBytes() const {
    // The embedding table is only gathered from (one row per token): a token streams
    // every other weight byte once.
    return static_cast<double>(model->WeightBytes() - model->tok_embeddings.bytes());
  }
  // Float multiply-adds per token in the float-typed streamed matrices (the integer dot
  // products of quantized ones have no single-instruction ceiling and are not counted).
  double FloatMacs() const {
    double macs = 0;
    ForEachMatrix(*model, [&](const std::string& name, const QMatrix& W) {
      if (name != "tok_embeddings" && !IsQuantized(W.type)) macs += double(W.rows) * W.cols;
    });
    return macs;
  }
  // Keys and values a token attending `positions` positions reads (not in the floor).
  double KvBytes(int positions) const { return static_cast<double>(cache->bytes_per_position()) * positions; }
  // Roofline time of an n-token call: every streamed byte read once at full bandwidth,
  // or every float multiply-add at the FMA peak, whichever takes longer (perfect overlap).
  struct Floor {
    double secs;
    const char* bound;  // "memory" or "compute"
  };
  Floor FloorAt(int n, double bw_gbs, double fma_gmacs) const {
    const double mem = StreamedBytes() / (bw_gbs * 1e9), fma = n * FloatMacs() / (fma_gmacs * 1e9);
    return fma > mem ? Floor{fma, "compute"} : Floor{mem, "memory"};
  }
};

// The machine's read bandwidth and multiply-add peak around and during the timings.
struct MachineReadings {
  double bw_before = 0, bw_after = 0, fma_before = 0, fma_after = 0;
  std::vector<double> readings;        // [reps + 1] GB/s: after the warm-up, then after each repetition
  Spread bw;                           // of `readings`
  double bw_gbs = 0;                   // the roofline's
  double fma_gmacs = 0;                // the roofline's
  PhaseSplit phases;                   // of `readings`
  std::vector<MemoryPhase> rep_phase;  // [reps] repetition r between readings[r] and readings[r + 1]
  // The roofline's bandwidth in phase p: the fastest credible reading of that phase (the
  // median of its readings during, or a full probe before or after that falls into it).
  double PhaseBandwidth(MemoryPhase p) const {
    std::vector<double> mine;
    for (double g : readings)
      if (PhaseOf(phases, g) == p) mine.push_back(g);
    double bw = mine.empty() ? 0.0 : Median(mine);
    for (double g : {bw_before, bw_after})
      if (PhaseOf(phases, g) == p) bw = std::max(bw, g);
    return bw;
  }
  int Repetitions(MemoryPhase p) const { return static_cast<int>(std::count(rep_phase.begin(), rep_phase.end(), p)); }
};

const char* TeamPolicyName(TeamPolicy t);

// The run's setting and the machine's readings, above the table.
void PrintPreamble(const Runtime& rt, const BenchForwardArgs& a, const LoadedModel& lm, double load_s,
                   const std::vector<int>& ns, const MachineReadings& m);
// The table of T(n) per variant and n (ns[j1] == 1), one record per row, then T(n) per phase.
void PrintTimings(const BenchForwardArgs& a, const std::vector<Variant>& vs, const std::vector<int>& ns, size_t j1,
                  int lw, const MachineReadings& m, nlohmann::json& recs);
// T_row(1) / T_col(1) for every pair of variants.
void PrintCostRatios(const std::vector<Variant>& vs, size_t j1, int lw, nlohmann::json& recs);
// --json: the records with the context block.
void WriteJson(const Runtime& rt, const BenchForwardArgs& a, const LoadedModel& lm, double load_s,
               const MachineReadings& m, const nlohmann::json& recs);

}  // namespace specsweep::forward_bench
