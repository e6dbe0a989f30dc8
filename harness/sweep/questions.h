// Question sets: a JSONL file of task-tagged questions in Spec-Bench's (and MT-bench's)
// format, one {"question_id", "category", "turns"} object a line, their selection per
// report group, and the map from raw categories to the groups a report shows.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace specsweep {

struct Question {
  int id = 0;
  std::string category;            // as in the file ("writing", "translation", ...)
  std::string group;               // report group (QuestionSelection::groups)
  std::vector<std::string> turns;  // user turns, the first one always present
};

// What an experiment takes from a question file (the prompts: keys).
struct QuestionSelection {
  std::vector<std::string> categories;        // groups or raw categories to keep ({}: all)
  int per_category = 0;                       // questions per group (0: all of them)
  std::string select = "first";               // first (file order) | shortest (fewest characters)
  int max_chars = 0;                          // longer turns keep their head and tail (0: never cut)
  std::map<std::string, std::string> groups;  // raw category -> group (SpecBenchGroups() by default)
  int chunk = 20;                             // questions per part (QuestionPart); see kDefaultQuestionChunk
};

// A run measures a question set in parts: each report group's selected questions cut
// into chunks of QuestionSelection::chunk (the last may be shorter), named "GROUP/I"
// (I from 1). A part is one group of the schedule (its AR baseline and the speculative
// points over its questions), so a shard takes, and Ctrl-C loses, a part at a time.
// The default of 20 cuts Spec-Bench's 6 x 80 questions into 24 parts.
inline constexpr int kDefaultQuestionChunk = 20;
struct QuestionPart {
  std::string name;      // "translation/1": Point::part, the `part` field of records
  std::vector<int> ids;  // its questions, in prompt order
  int turns = 0;         // the turns asked over its questions (all turns, or one each)
  double chars = 0;      // characters of those turns (the shard cost's prompt length)
};

// Spec-Bench's six report groups, in its table's order, and its map: the MT-bench
// categories form "multi-turn conversation", the others name their own group.
const std::vector<std::string>& SpecBenchGroupOrder();
const std::map<std::string, std::string>& SpecBenchGroups();

// Reads every question; Error("FILE:LINE: what") on a malformed line.
std::vector<Question> ReadQuestions(const std::string& path);
// The selected questions, grouped in the order of first appearance of their group,
// each group's questions in file order (select first) or by length then file order
// (select shortest). Deterministic: same file and selection, same questions. Error
// (naming `what`) when a group has fewer questions than asked or a category is unknown.
std::vector<Question> SelectQuestions(std::vector<Question> all, const QuestionSelection& s, const std::string& what);
// The parts of the selected questions (SelectQuestions' order): each group's questions in
// chunks of `chunk`, groups in order; `all_turns` counts every turn of a question.
std::vector<QuestionPart> SplitIntoParts(const std::vector<Question>& selected, int chunk, bool all_turns);
// A turn cut to at most max_chars characters: its first and last halves around " ... "
// (Spec-Bench's instructions open summarization prompts and close RAG ones). UTF-8 safe.
std::string CutTurn(const std::string& turn, int max_chars);

}  // namespace specsweep
