// Experiment files (YAML or JSON) and their expansion into a grid of measured points.
//
// An experiment names target models, a prompt set, decoders and sweep axes; each
// decoder gets the cartesian product of the axes (global `sweep`, overridden per
// decoder entry). Every speculative point also gets its autoregressive baseline (same
// target, target quant, prompts and generation settings), added once per group.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoders/decoder.h"
#include "quant/qtype.h"

namespace specsweep {

// One measured configuration. Fields a decoder does not use are normalised (AR points
// have k = 0 and no draft; greedy points have top_k 0, top_p 1, seed 0) so that equal
// experiments give equal keys.
struct Point {
  std::string model;                  // target name or path, as written in the file
  std::optional<QType> target_quant;  // target weights quantized in memory (none: as loaded)
  DecoderKind decoder = DecoderKind::Autoregressive;  // aliases resolved into `draft`
  int k = 0;
  KPolicy k_policy = KPolicy::Constant;
  float draft_p_min = 0.8f;           // only meaningful for the threshold policy
  DraftSpec draft;                    // decoders/draft_spec.h
  AcceptanceSource acceptance_source; // decoders/acceptance_source.h (trace: loaded)
  int input_length = 0;               // prompt length in tokens cut from passages; 0: prompt file
  int max_new_tokens = 64;
  SamplingParams sampling;
  int threads = 0;                    // 0: the --threads global / all cores
  KvType kv_type = KvType::F32;       // attention cache of target and draft
  // What the prompts ask of the model (the experiment's prompts.category): "free"
  // continuation, or "grounded" in text the prompt contains (where lookup drafts gain).
  std::string prompt_category = "free";

  bool speculative() const { return decoder != DecoderKind::Autoregressive; }
  // Stable identity of the point over all its parameters (resume, check, baselines).
  std::string Key() const;
  // Short human-readable name for progress output and benchmark names.
  std::string Name() const;
  // The autoregressive point this one is compared against.
  Point Baseline() const;
  DecoderOptions Options() const;
  // Flat parameter fields (model, decoder, k, draft, draft_quant, ...).
  nlohmann::json ParamsJson() const;
};
// Inverse of ParamsJson; throws Error("<what>: field: ...").
Point PointFromParams(const nlohmann::json& params, std::string_view what);

struct PromptSet {
  std::string file;      // natural prompts, one per line (used when input_length == 0)
  std::string passages;  // long text, passages separated by blank lines (input_length cuts)
  int count = 0;         // prompts taken from the file / passages used per input length
  std::string category = "free";  // free | grounded (Point::prompt_category)
};

struct Experiment {
  std::string name;
  std::string file;      // the experiment file itself
  std::string models_dir;
  std::vector<std::string> models;
  PromptSet prompts;
  int repetitions = 1;   // measured runs of every prompt
  int warmup = 0;        // unmeasured generations before each point
  // Expanded grid: each baseline right before the speculative points comparing to it.
  std::vector<Point> points;
};

// Loads a .yaml/.yml or .json experiment; relative paths resolve against the file's
// directory, then the source tree. Throws Error("FILE: key.path: what").
Experiment LoadExperiment(const std::string& path, const std::string& models_dir = "");
// Same, from an already parsed document (`file` only names it in errors and resolves paths).
Experiment ParseExperiment(const nlohmann::json& doc, const std::string& file,
                           const std::string& models_dir = "");
// Reads YAML into JSON (plain scalars typed as bool/int/float/null, quoted ones as
// strings); a syntax error becomes Error("FILE:LINE:COL: yaml: what").
nlohmann::json ReadYamlAsJson(const std::string& path);

}  // namespace specsweep
