#include "harness/measure/prompt_store.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/text_input.h"
#include "harness/store/sha256.h"
#include "harness/sweep/prompts.h"

using nlohmann::json;

namespace specsweep {

const std::vector<std::vector<int>>& PromptStore::Prompts(const std::string& model, int input_length,
                                                          const std::string& part) {
  auto key = std::make_tuple(model, input_length, input_length == 0 ? part : "");
  auto it = prompts_.find(key);
  if (it != prompts_.end()) return it->second;
  const LoadedModel& m = models_.Base(model);
  std::vector<std::vector<int>> ids;
  if (input_length == 0 && e_.prompts.questions) {
    for (auto& q : Questions(part)) ids.push_back(Chat(model).EncodeTurns({q.turns[0]}, {}));
  } else if (input_length == 0) {
    for (auto& line : ReadPromptLines(e_.prompts.file, e_.prompts.count))
      ids.push_back(e_.chat_template.name == "none" ? m.tokenizer->Encode(line, m.tokenizer->add_bos_default())
                                                    : Chat(model).EncodeTurns({line}, {}));
  } else {
    if (passages_.empty()) {
      passages_ = SplitPassages(ReadTextInput(e_.prompts.passages, "passages file"));
    }
    ids = CutPassages(passages_, *m.tokenizer, input_length, e_.prompts.count, e_.prompts.passages);
  }
  return prompts_[key] = ids;
}

const std::vector<Question>& PromptStore::Questions(const std::string& part) {
  if (!questions_)
    questions_ = e_.prompts.questions ? SelectQuestions(ReadQuestions(e_.prompts.file), e_.prompts.selection, e_.file)
                                      : std::vector<Question>{};
  if (part.empty()) return *questions_;
  auto it = part_questions_.find(part);
  if (it != part_questions_.end()) return it->second;
  const auto p = std::find_if(e_.prompts.parts.begin(), e_.prompts.parts.end(),
                              [&](const QuestionPart& q) { return q.name == part; });
  if (p == e_.prompts.parts.end()) Fail("{}: no part '{}' in the question set", e_.file, part);
  std::vector<Question>& out = part_questions_[part];
  for (int id : p->ids)
    for (const Question& q : *questions_)
      if (q.id == id) out.push_back(q);
  return out;
}

const ChatEncoder& PromptStore::Chat(const std::string& model) {
  auto& c = chat_[model];
  if (!c) c = std::make_unique<ChatEncoder>(*models_.Base(model).tokenizer, e_.chat_template, e_.file + ": template");
  return *c;
}

std::vector<std::string> PromptStore::PromptCategories(int input_length, const std::string& part) {
  std::vector<std::string> out;
  if (input_length == 0)
    for (auto& q : Questions(part)) out.push_back(q.group);
  return out;
}

json PromptStore::PromptSetJson(int input_length, const std::string& part) {
  if (input_length > 0 || (!e_.prompts.questions && e_.chat_template.name == "none")) return json::object();
  json j{{"file", e_.prompts.file},
         {"sha256", Sha256File(e_.prompts.file)},
         {"template", ChatTemplateLabel(e_.chat_template)}};
  if (!e_.prompts.questions) return j;
  const QuestionSelection& s = e_.prompts.selection;
  json ids = json::array(), raw = json::array();
  for (auto& q : Questions(part)) ids.push_back(q.id), raw.push_back(q.category);
  j["turns"] = e_.prompts.all_turns ? "all" : "first";
  j["select"] = s.select;
  j["per_category"] = s.per_category;
  j["max_chars"] = s.max_chars;
  j["question_ids"] = ids;
  j["categories"] = raw;
  if (!part.empty()) j["part"] = part;
  return j;
}

}  // namespace specsweep
