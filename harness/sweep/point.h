// One measured configuration of an experiment's grid: what it runs, its stable key
// (resume, check, baselines), its name, and its flat parameter fields.
#pragma once
#include <optional>
#include <string>
#include <string_view>

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
  // What the decoder runs (decoders/settings.h describes each field); aliases resolved
  // into the draft; a trace acceptance source is named here and loaded by the measuring
  // stage. Fixed token counts make runs comparable: an early EOS would shorten some points.
  DecoderOptions options = Defaults();
  int input_length = 0;  // prompt length in tokens cut from passages; 0: prompt file
  int threads = 0;       // 0: the --threads global / all cores
  // What the prompts ask of the model (the experiment's prompts.category): "free"
  // continuation, or "grounded" in text the prompt contains (where lookup drafts gain).
  std::string prompt_category = "free";
  // The part of a question set it measures ("translation/1", sweep/questions.h
  // QuestionPart); "" for prompt files, passages and records from before parts.
  std::string part;

  // A point's options before the grid sets them: k 0 (autoregressive), no stop at EOS.
  static DecoderOptions Defaults() {
    DecoderOptions o;
    o.k = 0;
    o.stop_at_eos = false;
    return o;
  }
  bool speculative() const { return options.kind != DecoderKind::Autoregressive; }
  // Stable identity of the point over all its parameters (resume, check, baselines).
  std::string Key() const;
  // Short human-readable name for progress output and benchmark names.
  std::string Name() const;
  // The autoregressive point this one is compared against.
  Point Baseline() const;
  // The options to build its decoder with (an autoregressive point's k is 1).
  DecoderOptions Options() const;
  // Flat parameter fields (model, decoder, k, draft, draft_quant, ...).
  nlohmann::json ParamsJson() const;
};
// Inverse of ParamsJson; throws Error("<what>: field: ...").
Point PointFromParams(const nlohmann::json& params, std::string_view what);

}  // namespace specsweep
