// Experiment files (YAML or JSON) and their expansion into a grid of measured points.
//
// An experiment names target models, a prompt set, decoders and sweep axes; each
// decoder gets the cartesian product of the axes (global `sweep`, overridden per
// decoder entry). Every speculative point also gets its autoregressive baseline (same
// target, target quant, prompts and generation settings), added once per group.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/sweep/point.h"
#include "harness/sweep/questions.h"
#include "harness/sweep/yaml.h"
#include "models/chat_template.h"

namespace specsweep {

struct PromptSet {
  std::string file;                 // natural prompts, one per line, or a .jsonl question set (input_length == 0)
  std::string passages;             // long text, passages separated by blank lines (input_length cuts)
  int count = 0;                    // prompts taken from the file / passages used per input length
  std::string category = "free";    // free | grounded (Point::prompt_category)
  bool questions = false;           // `file` is a question set (harness/sweep/questions.h)
  bool all_turns = false;           // turns: all (each question a conversation) | first
  QuestionSelection selection;      // which questions, and their report groups
  std::vector<QuestionPart> parts;  // the selection in parts, each a group of the schedule ({}: not a question set)
};

struct Experiment {
  std::string name;
  std::string file;  // the experiment file itself
  std::string models_dir;
  std::vector<std::string> models;
  PromptSet prompts;
  ChatTemplate chat_template{"none", ""};  // `template`: wraps each turn before tokenization
  int repetitions = 1;                     // measured runs of every prompt
  int warmup = 0;                          // unmeasured generations before each point
  // Expanded grid: each baseline right before the speculative points comparing to it.
  std::vector<Point> points;
};

// Loads a .yaml/.yml or .json experiment; the files it names are found by one rule
// (experiment_files.h) and must exist; its models are looked for once the plan is known
// (measure/model_store.h MissingModels). Throws Error("FILE: key.path: what").
Experiment LoadExperiment(const std::string& path, const std::string& models_dir = "");
// Same, from an already parsed document (`file` only names it in errors and resolves paths).
Experiment ParseExperiment(const nlohmann::json& doc, const std::string& file, const std::string& models_dir = "");

}  // namespace specsweep
