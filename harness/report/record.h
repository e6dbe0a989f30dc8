// The aggregated record of a point (a "benchmark" of the final .json) as typed parts:
// what was measured (identity), its statistics, acceptance per draft position, the
// verify-cost model and the comparison with its baseline. report/aggregate.h builds
// each part from raw records; each part is written to and read from the flat JSON
// object in record.cpp, in one place. A record read from a file keeps that object as it was
// (`flat`): tables pivot on fields the user names, and merge writes it back unchanged.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoders/draft_spec.h"
#include "harness/report/fit.h"
#include "harness/report/statistics.h"
#include "harness/store/results.h"

namespace specsweep {

// What the point is: its parameters, how and where it was measured.
struct RecordIdentity {
  nlohmann::json params = nlohmann::json::object();  // Point::ParamsJson (quant labels as stored)
  std::string name, run_name, key, baseline_key;
  int repetitions = 0, warmup = 0, threads_used = 0, prompts = 0, iterations = 0;
  std::string kernel_isa;
  std::map<std::string, std::string> kernels;  // RawRecord::kernels (empty in older records)
  nlohmann::json host;                         // HostLoad::ToJson, or null when absent
  bool host_busy = false;
  std::string prompt_sha256, experiment_sha256;
  // How a separate draft's tokens reach the target: "shared" (one vocabulary), "bridged"
  // (another tokenizer: through text, decoded and re-encoded), "" (not recorded).
  std::string draft_tokenizer;
  ModelFiles model_files;
  std::map<std::string, int> target_types, draft_types;
  // Typed reading of params, once: AR or speculative, and the draft when its label
  // parses (a draft of another version, or a label with a partial-quant note, does not).
  bool speculative = false;
  std::string draft_label;  // "draft", or for records without it its base and quant
  std::optional<DraftSpec> draft;
  void ReadParams();  // sets speculative, draft_label and draft from params
  void ToJson(nlohmann::json& out) const;
  static RecordIdentity FromJson(const nlohmann::json& j);
};

// Names of the statistics every record reports (prompt_tokens, ..., mean_k), in order.
const std::vector<std::string>& StatisticNames();

// Every GenerationStats statistic over the repetitions, and per-prompt means.
struct RecordStatistics {
  struct Summary {
    double mean = NAN, median = NAN, std = NAN;
  };
  std::vector<std::pair<std::string, Summary>> metrics;  // in the order of StatisticNames
  std::vector<int> per_prompt_prompt_tokens;
  std::vector<std::string> per_prompt_category;  // {} without categories
  nlohmann::json prompt_set;                     // null or {} when plain
  std::vector<double> per_prompt_tokens_per_s, per_prompt_mean_next_token_latency_s, per_prompt_acceptance_rate,
      per_prompt_mean_accepted_length, per_prompt_generated_tokens;
  double Mean(const std::string& metric) const;  // NaN when absent
  void ToJson(nlohmann::json& out) const;
  static RecordStatistics FromJson(const nlohmann::json& j);
};

// Acceptance per draft position (pooled over every run).
struct PositionAcceptance {
  std::vector<int64_t> drafted_at_pos, accepted_at_pos;
  std::vector<double> acceptance_at_pos, acceptance_at_pos_conditional;
  std::vector<int64_t> accepted_length_distribution;  // steps whose accepted path had length 0, 1, ...
  double draft_time_per_call_s = NAN;
  void ToJson(nlohmann::json& out) const;
  static PositionAcceptance FromJson(const nlohmann::json& j);
};

// Verify-cost model: measured call costs, and for a speculative point its bound and
// predicted speedups.
struct CostModel {
  double target_time_s = NAN, draft_time_s = NAN, draft_catch_up_time_s = NAN;
  std::vector<double> target_time_by_n_s;
  std::optional<CostFit> verify_cost_fit;                         // T(n) ~ intercept + slope max(n, knee)
  std::vector<double> draft_time_by_n_s, draft_tree_time_by_n_s;  // a model's token tree only
  struct Speculative {
    double verify_time_s = NAN, speedup_bound = NAN, cost_ratio = NAN, predicted_speedup = NAN,
           predicted_speedup_leviathan = NAN;
  };
  std::optional<Speculative> speculative;  // absent for an AR point
  void ToJson(nlohmann::json& out) const;
  static CostModel FromJson(const nlohmann::json& j);
};

// A speculative point against its baseline measured in the same rounds.
struct BaselineComparison {
  double baseline_tokens_per_s = NAN;
  Interval speedup{NAN, NAN, NAN, 0}, latency_speedup{NAN, NAN, NAN, 0};  // with _ci_low/_ci_high/_n
  double speedup_median = NAN, speedup_std = NAN;
  std::vector<double> per_prompt_speedup;
  double spec_bench_speedup = NAN;  // SpecBenchSpeedup over every prompt (report/aggregate.h)
  double predicted_over_measured = NAN;
  bool suspect = false, wide_ci = false, busy = false;
  double outputs_match_baseline = NAN;
  void ToJson(nlohmann::json& out) const;
  static BaselineComparison FromJson(const nlohmann::json& j);
};

// A batched point's figures (docs/batching.md): its batch size, and from the runs'
// per-sequence statistics how the sequences of one batch fared. Per-sequence fields are
// NaN for batch 1 (and for records from before batching).
struct BatchFigures {
  int batch = 1;                                       // sequences decoded together (params "batch", 1 absent)
  double batch_target_calls = NAN;                     // target Forward calls per batched run (mean over runs)
  double per_sequence_next_token_latency_s = NAN;      // mean over every run's sequences
  double per_sequence_next_token_latency_min_s = NAN;  // the spread across sequences: fastest ...
  double per_sequence_next_token_latency_max_s = NAN;  // ... and slowest sequence
  double per_sequence_acceptance_min = NAN, per_sequence_acceptance_max = NAN;  // accepted / drafted
  // Live sequences per target call over the batch: sum of the sequences' calls / (batch
  // calls x batch); below 1 when sequences left the batch before its last call.
  double batch_occupancy = NAN;
  void ToJson(nlohmann::json& out) const;
  static BatchFigures FromJson(const nlohmann::json& j);
};

struct AggregateRecord {
  RecordIdentity identity;
  RecordStatistics statistics;
  PositionAcceptance positions;
  CostModel cost;
  std::optional<BaselineComparison> comparison;  // absent: AR, or no comparable baseline
  BatchFigures batch;
  nlohmann::json flat;  // the record as written (ToJson of the parts, or as read)

  // The flat JSON of the parts (keys and values of the final .json's benchmarks).
  nlohmann::json ToJson() const;
  // Parts from a flat record (fields absent in older records stay empty); keeps `j` as flat.
  static AggregateRecord FromJson(const nlohmann::json& j);

  bool Speculative() const { return identity.speculative; }
  bool Suspect() const { return comparison && comparison->suspect; }
  bool WideCi() const { return comparison && comparison->wide_ci; }
  // The host was busy while the point (or its baseline) was measured.
  bool Busy() const { return comparison ? comparison->busy : identity.host_busy; }
  const nlohmann::json& operator[](const char* field) const;  // flat[field], null when absent
};

// A record field of the flat form (results.h's FieldText/FieldNumber/KLabelOf/...).
std::string FieldText(const AggregateRecord& r, const std::string& field);
double FieldNumber(const AggregateRecord& r, const std::string& field);
std::string KLabelOf(const AggregateRecord& r);
std::string AcceptanceCaptionOf(const AggregateRecord& r);
bool IsReplayed(const AggregateRecord& r);

std::vector<AggregateRecord> RecordsFromJson(const std::vector<nlohmann::json>& flat);
std::vector<nlohmann::json> RecordsToJson(const std::vector<AggregateRecord>& records);

}  // namespace specsweep
