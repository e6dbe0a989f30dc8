// Results of a sweep: raw per-run records (the .jsonl written while measuring) and
// their JSON form, and loading of results files (final .json or .jsonl) for the
// report commands. Aggregation lives in harness/report/aggregate.h.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoders/decoder.h"
#include "harness/measure/context.h"

namespace specsweep {

// One generation of one prompt.
struct RawRun {
  int prompt = 0;            // index into the point's prompt list
  int rep = 0;               // repetition index
  int round = 0;             // round of the group: rep * n_prompts + prompt
  int slot = 0;              // position of this point in the round's rotated order
  GenerationStats stats;
  std::string output_hash;   // sha256 prefix of the generated ids (lossless checks)
};

// What makes a record what it is. A resumed sweep reuses a record only when the
// experiment asks for exactly this again (RawRecord::Difference).
struct Identity {
  std::string experiment_sha256;  // canonical parsed experiment (provenance; merge)
  std::string prompt_sha256;      // the point's prompt token ids
  std::map<std::string, std::string> model_sha256;  // file -> sha256, target and draft
  std::vector<std::string> group;  // keys of the points measured with it, interleaved
};

// One measured point as appended to the .jsonl.
struct RawRecord {
  std::string key;           // Point::Key()
  std::string baseline_key;  // key of the AR baseline ("" for AR points)
  std::string name;          // Point::Name()
  nlohmann::json params;     // Point::ParamsJson()
  int repetitions = 0, warmup = 0;
  int threads_used = 0;      // NumThreads() while measuring
  std::string kernel_isa;    // kernel family of the matrix products
  Identity identity;
  CallCosts costs;           // verify-cost model inputs, measured with the runs
  HostLoad host;             // the machine while the point's group was measured
  std::vector<int> prompt_tokens;  // [n_prompts] prompt lengths in tokens
  std::vector<RawRun> runs;        // [n_prompts * repetitions]

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
// (the point in flight): it is not a record and ends `valid_bytes`. A complete line that
// does not parse is corrupt: it is reported with its line number and the records after
// it are still read. The first record of a key is kept; later ones are `duplicates`.
struct JsonlContents {
  std::vector<RawRecord> records;
  std::vector<std::pair<int, std::string>> corrupt;  // (line number, text)
  std::vector<std::pair<int, std::string>> duplicates;  // (line number, key)
  size_t complete_bytes = 0;  // bytes up to the last newline
};
JsonlContents ReadJsonl(const std::string& path);

// Loaded results: flat records and the context, from a final .json or a .jsonl.
struct Results {
  std::string path;
  nlohmann::json context;                // {} for a .jsonl
  std::vector<nlohmann::json> records;   // flat benchmark records
  std::vector<std::string> warnings;     // corrupt lines skipped in a .jsonl
};
Results LoadResults(const std::string& path);

// A record field as text for grouping/pivoting ("" when absent).
std::string FieldText(const nlohmann::json& rec, const std::string& field);
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
