// The prompts of a sweep: prompt lines, passages cut to input lengths, question sets and
// the chat template, each tokenized once per model.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/measure/model_store.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/questions.h"
#include "models/chat_template.h"

namespace specsweep {

class PromptStore {
 public:
  // `models` gives each model's tokenizer.
  PromptStore(const Experiment& e, ModelStore& models) : e_(e), models_(models) {}
  // The prompts of `model` at `input_length` (0: the prompt file or question set; of a
  // question set, the questions of `part`, all of them for "").
  const std::vector<std::vector<int>>& Prompts(const std::string& model, int input_length,
                                               const std::string& part = "");
  // The selected questions of a question set (empty for a prompt file) in prompt order:
  // those of `part` (Point::part), or all of them for "".
  const std::vector<Question>& Questions(const std::string& part = "");
  // The experiment's chat template over the model's tokenizer.
  const ChatEncoder& Chat(const std::string& model);
  // What the records say about the prompts of an input_length: each prompt's report group
  // ({} for a prompt file or passages) and the set's provenance (file, sha256, template,
  // turns, selection, question ids; {} for a plain prompt file without a template).
  std::vector<std::string> PromptCategories(int input_length, const std::string& part = "");
  nlohmann::json PromptSetJson(int input_length, const std::string& part = "");

 private:
  const Experiment& e_;
  ModelStore& models_;
  std::map<std::tuple<std::string, int, std::string>, std::vector<std::vector<int>>> prompts_;
  std::vector<std::string> passages_;
  std::optional<std::vector<Question>> questions_;
  std::map<std::string, std::vector<Question>> part_questions_;
  std::map<std::string, std::unique_ptr<ChatEncoder>> chat_;
};

}  // namespace specsweep
