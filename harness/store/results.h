// Results of a sweep: raw per-run records (the .jsonl written while measuring) and
// their JSON form, and loading of results files (final .json or .jsonl) for the
// report commands. Aggregation lives in harness/report/aggregate.h.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoders/decoder.h"

namespace specsweep {

// 4: speedup and latency_speedup (and per_prompt_speedup) are geometric means of per-round
//    ratios with log-space intervals (3 and older: arithmetic means; still read as written).
// 3: one speculative decoder (2 named it assisted/self-spec; still read, UpgradeRecord).
inline constexpr int kResultsSchemaVersion = 4, kOldestResultsSchemaVersion = 2;
// The first version whose speedups are geometric means (docs/metrics.md).
inline constexpr int kGeometricSpeedupSchemaVersion = 4;
// The schema version of a final .json's context (0 when absent or not a whole number).
int SchemaVersionOf(const nlohmann::json& context);

// What the machine did while a group was measured, besides this process
// (measure/context.h samples it).
struct HostLoad {
  double load_before = 0, load_after = 0;  // 1-minute load average
  double other_cpu = 0;                    // fraction of all cores' time used by other processes
  double steal = 0;                        // fraction of all cores' time taken by the hypervisor
  bool busy = false;                       // other_cpu > kBusyOtherCpu or steal > kBusySteal
  nlohmann::json ToJson() const;
};
inline constexpr double kBusyOtherCpu = 0.10, kBusySteal = 0.05;

// One generation of one prompt, or at batch B > 1 one batch of B sequences: prompt and
// the next B - 1 of the point's prompts, cyclic (measure/measure_group.cpp); `stats` are
// then the batch's aggregate with its per_sequence list.
struct RawRun {
  int prompt = 0;  // index into the point's prompt list (a batch's first sequence's)
  int rep = 0;     // repetition index
  int round = 0;   // round of the group: rep * n_prompts + prompt
  int slot = 0;    // position of this point in the round's rotated order
  GenerationStats stats;
  // sha256 prefix of the generated ids (lossless checks); of a batch: of its sequences'
  // ids in order, each preceded by its count.
  std::string output_hash;
  // A batch's per-sequence output hashes ([batch], each as output_hash of one sequence;
  // written as per_sequence[i].output); empty at batch 1.
  std::vector<std::string> sequence_hashes = {};  // (an initializer: brace-built runs need not give it)
};

// One file a record's model was read from. Its identity is the content (sha256) and
// the file name, never the directory: the same weights give the same record at any path
// (another checkout, a CI runner, a symlinked models folder).
struct ModelFile {
  std::string role;  // "target" or "draft"; "" in results written before roles
  std::string file;  // file name without its directory
  std::string sha256;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>.
  auto operator<=>(const ModelFile&) const = default;
};
using ModelFiles = std::vector<ModelFile>;  // sorted

// `model_files` ([{role, file, sha256}]) of a record or identity object, or the older
// `model_sha256` ({path: sha256}, read as file names without a role); {} when neither.
ModelFiles ModelFilesFromJson(const nlohmann::json& j);
nlohmann::json ModelFilesToJson(const ModelFiles& m);
// "" when `now` names the same files (role, name, sha256) as `was`, else the first
// difference naming both hashes. Roles are compared only when both sides have them.
std::string ModelFilesDifference(const ModelFiles& was, const ModelFiles& now);

// What makes a record what it is. A resumed sweep reuses a record only when the
// experiment asks for exactly this again (RawRecord::Difference).
struct Identity {
  std::string experiment_sha256;   // canonical parsed experiment (provenance; merge)
  std::string prompt_sha256;       // the point's prompt token ids
  ModelFiles model_files;          // target's and draft's files
  std::vector<std::string> group;  // keys of the points measured with it, interleaved
};

// One measured point as appended to the .jsonl.
struct RawRecord {
  std::string key;           // Point::Key()
  std::string baseline_key;  // key of the AR baseline ("" for AR points)
  std::string name;          // Point::Name()
  nlohmann::json params;     // Point::ParamsJson()
  int repetitions = 0, warmup = 0;
  int threads_used = 0;    // the Runtime::threads it was measured with
  std::string kernel_isa;  // kernel family of the activations and of most formats
  // The family each format the target and draft multiply with ran on (format -> family,
  // per-format calibration); empty in records before it (their formats ran on kernel_isa).
  std::map<std::string, std::string> kernels;
  Identity identity;
  CallCosts costs;  // verify-cost model inputs, measured with the runs
  HostLoad host;    // the machine while the point's group was measured
  // What the target's and the draft's multiplied matrices were stored as while measured
  // (type name -> count; the asked quant type listed even at 0). Empty before #30.
  std::map<std::string, int> target_types, draft_types;
  // A speculative point's draft: "shared" (it reads the target's token ids) or "bridged"
  // (a separate model with another tokenizer, through text); "" for an autoregressive
  // point, and in records from before the field (unknown).
  std::string draft_tokenizer;
  std::vector<int> prompt_tokens;  // [n_prompts] prompt lengths in tokens (first turns)
  // [n_prompts] each prompt's report group (a question set's category, mapped), or {}.
  std::vector<std::string> prompt_categories;
  nlohmann::json prompt_set = nlohmann::json::object();  // file, sha256, template, selection ({}: plain)
  std::vector<RawRun> runs;                              // [n_prompts * repetitions]

  // "" when `other` (the record the experiment asks for now) describes the same
  // measurement; else the first difference, e.g. "repetitions: 1 in the results, 2 now".
  std::string Difference(const RawRecord& expected) const;
};

// Reads a record of schema 2 (a flat record, or a raw one with `params`) in today's
// terms: the decoders "assisted" and "self-spec" are "speculative" (the draft label
// already says which draft), and an adaptive point, which drafted up to 8 whatever k
// said, gets k = 8; its key and name follow. Returns whether anything changed.
bool UpgradeRecord(nlohmann::json& rec);

nlohmann::json StatsToJson(const GenerationStats& s);
GenerationStats StatsFromJson(const nlohmann::json& j, const std::string& what);
nlohmann::json RawToJson(const RawRecord& r);
RawRecord RawFromJson(const nlohmann::json& j, const std::string& what);

// j as JSON text (indent < 0: one line). Strings that are not valid UTF-8 (a model's
// text cut inside a character, raw byte tokens) get U+FFFD for the bad bytes instead
// of throwing, so no measured result is lost to its text.
std::string DumpJson(const nlohmann::json& j, int indent = -1);

// The lines of a sweep's .jsonl. A last line without its newline was cut by a crash
// (the point in flight): it is not a record, `complete_bytes` ends before it and
// `torn_line` numbers it (a resume sets it aside; the report commands name it). A complete line that
// does not parse is corrupt: it is reported with its line number and the records after
// it are still read. The first record of a key is kept; later ones are `duplicates`.
struct JsonlDuplicate {
  int line = 0;
  std::string key, name, text;
  bool same = false;  // the line is identical to the kept record's: nothing is lost without it
};
struct JsonlContents {
  std::vector<RawRecord> records;
  std::vector<std::pair<int, std::string>> corrupt;  // (line number, text)
  std::vector<JsonlDuplicate> duplicates;
  size_t complete_bytes = 0;  // bytes up to the last newline
  int torn_line = 0;          // line number of a last line without its newline (0: none)
};
// A results file (.jsonl or .json) is a regular file of at most 4 GiB (docs/robustness.md).
inline constexpr uint64_t kMaxResultsBytes = uint64_t{4} << 30;
JsonlContents ReadJsonl(const std::string& path);

// Loaded results: flat records and the context from a final .json, or the raw records
// of a .jsonl (report/load.h's LoadResults aggregates them into `records`).
struct Results {
  std::string path;
  nlohmann::json context;               // {} for a .jsonl
  std::vector<nlohmann::json> records;  // flat benchmark records
  std::vector<RawRecord> raw;           // a .jsonl's records, not yet aggregated
  std::vector<std::string> warnings;    // a .jsonl's corrupt or cut lines ("FILE:LINE: corrupt line ...")
};
Results ReadResults(const std::string& path);

// A record field as text for grouping/pivoting ("" when absent).
std::string FieldText(const nlohmann::json& rec, const std::string& field);
// The kernel families a record ran on, in the form of the context's kernels: "avx512", or
// "avx512 (q4_0: avx2)" where a format of the point ran on another family than
// kernel_isa (records without the per-format field: kernel_isa alone).
std::string KernelsLabel(const nlohmann::json& rec);
// A numeric record field (NaN when absent or not a number).
double FieldNumber(const nlohmann::json& rec, const std::string& field);
// What K meant for a speculative record (KLabel: "k=4", "k<=4 adaptive", ...); "" for
// an autoregressive one.
std::string KLabelOf(const nlohmann::json& rec);

// How a speculative record's acceptance was obtained, for captions, cells and legends:
// "measured", "replayed α=0.8", ...; "" for an autoregressive record (and "measured"
// for records from before acceptance replay).
std::string AcceptanceCaptionOf(const nlohmann::json& rec);
// The same from an acceptance_source field value ("alpha=0.8" -> "replayed α=0.8"; "-",
// an autoregressive point's, stays "-").
std::string AcceptanceCaption(const std::string& label);
bool IsReplayed(const nlohmann::json& rec);

// Parameter fields of a record, in a fixed order (for pivots, series and labels).
const std::vector<std::string>& ParamFields();

}  // namespace specsweep
