// Results of a sweep: raw per-run records (the .jsonl written while measuring), flat
// aggregated records (the "benchmarks" of the final .json, Google Benchmark style) and
// the "context" block describing the machine and build.
#pragma once
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoders/decoder.h"

namespace specsweep {

inline constexpr int kResultsSchemaVersion = 1;

// One generation of one prompt.
struct RawRun {
  int prompt = 0;            // index into the point's prompt list
  int rep = 0;               // repetition index
  GenerationStats stats;
  std::string output_hash;   // sha256 prefix of the generated ids (lossless checks)
};

// One measured point as appended to the .jsonl.
struct RawRecord {
  std::string key;           // Point::Key()
  std::string baseline_key;  // key of the AR baseline ("" for AR points)
  std::string name;          // Point::Name()
  nlohmann::json params;     // Point::ParamsJson()
  int repetitions = 0, warmup = 0;
  int threads_used = 0;      // NumThreads() while measuring
  std::vector<int> prompt_tokens;  // [n_prompts] prompt lengths in tokens
  std::vector<RawRun> runs;        // [n_prompts * repetitions]
};

nlohmann::json StatsToJson(const GenerationStats& s);
GenerationStats StatsFromJson(const nlohmann::json& j, const std::string& what);
nlohmann::json RawToJson(const RawRecord& r);
RawRecord RawFromJson(const nlohmann::json& j, const std::string& what);

// Sample statistics (std uses n-1; 0 for fewer than two values).
double Mean(std::span<const double> v);
double Median(std::span<const double> v);
double StdDev(std::span<const double> v);

// Leviathan et al. (2023) expected speedup for per-token acceptance alpha, draft length
// K and cost ratio c: (1 - alpha^(K+1)) / ((1 - alpha)(cK + 1)); alpha -> 1 is the limit.
double PredictedSpeedup(double alpha, double k, double c);
// Per-token acceptance probability under the i.i.d. model of Leviathan et al.:
// accepted / evaluated draft tokens, a token being evaluated only when every earlier one
// in its step was accepted. Exact for constant K; an upper bound on evaluated tokens (so
// a lower bound on alpha) when K varies per step.
double EstimateAlpha(const GenerationStats& s);

// Flat aggregated record of a point: its parameters, every GenerationStats statistic
// as mean over repetitions (plus _median/_std), per-prompt arrays, per-position
// acceptance, and versus `baseline` (may be null): speedup, cost ratio c, predicted
// speedup, output agreement.
nlohmann::json Aggregate(const RawRecord& r, const RawRecord* baseline);
// Aggregates a list of raw records (baselines looked up among them by key).
std::vector<nlohmann::json> AggregateAll(const std::vector<RawRecord>& raws);

// Process settings that change timings, added to `context`: libgomp's wait settings
// and glibc's malloc tunables (main() sets GOMP_SPINCOUNT and the huge-page tunable
// unless given), and the kernel's transparent huge page mode.
void AddRuntimeSettings(nlohmann::json& context);

// Machine/build description for the "context" block. `model_files` are hashed.
nlohmann::json ContextBlock(const std::string& experiment_name, const std::string& experiment_file,
                            const std::vector<std::string>& model_files);
// Lowercase hex sha256 of a byte string / of a file (Error if unreadable).
// j as JSON text (indent < 0: one line). Strings that are not valid UTF-8 (a model's
// text cut inside a character, raw byte tokens) get U+FFFD for the bad bytes instead
// of throwing, so no measured result is lost to its text.
std::string DumpJson(const nlohmann::json& j, int indent = -1);

std::string Sha256Hex(std::string_view bytes);
std::string Sha256File(const std::string& path);

// Reads the .jsonl of a sweep: complete, parseable lines only (a line cut by a crash is
// dropped), first record per key kept. `valid_bytes` gets the length of the prefix made
// of good lines.
std::vector<RawRecord> ReadJsonl(const std::string& path, size_t* valid_bytes = nullptr);

// Loaded results: flat records and the context, from a final .json or a .jsonl.
struct Results {
  std::string path;
  nlohmann::json context;                // {} for a .jsonl
  std::vector<nlohmann::json> records;   // flat benchmark records
};
Results LoadResults(const std::string& path);

// A record field as text for grouping/pivoting ("" when absent).
std::string FieldText(const nlohmann::json& rec, const std::string& field);
// A numeric record field (NaN when absent or not a number).
double FieldNumber(const nlohmann::json& rec, const std::string& field);

// Parameter fields of a record, in a fixed order (for pivots, series and labels).
const std::vector<std::string>& ParamFields();

}  // namespace specsweep
