#include "harness/sweep/questions.h"

#include <algorithm>
#include <climits>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/text_input.h"

namespace specsweep {

namespace {

// The report's rule (report/category.h CheckCategoryName), said where the name is written:
// a report group has a name, and "overall" names the figures over every question.
void CheckGroupName(const std::string& name, const std::string& where) {
  if (name.empty()) Fail("{}: empty: every question needs a category naming its report group", where);
  if (name == "overall") Fail("{}: '{}' is reserved for the figures over every question: rename it", where, name);
}

}  // namespace

const std::vector<std::string>& SpecBenchGroupOrder() {
  static const std::vector<std::string> g = {"multi-turn conversation", "translation",    "summarization",
                                             "question answering",      "math reasoning", "RAG"};
  return g;
}

const std::map<std::string, std::string>& SpecBenchGroups() {
  static const std::map<std::string, std::string> m = {{"writing", "multi-turn conversation"},
                                                       {"roleplay", "multi-turn conversation"},
                                                       {"reasoning", "multi-turn conversation"},
                                                       {"math", "multi-turn conversation"},
                                                       {"coding", "multi-turn conversation"},
                                                       {"extraction", "multi-turn conversation"},
                                                       {"stem", "multi-turn conversation"},
                                                       {"humanities", "multi-turn conversation"},
                                                       {"translation", "translation"},
                                                       {"summarization", "summarization"},
                                                       {"qa", "question answering"},
                                                       {"math_reasoning", "math reasoning"},
                                                       {"rag", "RAG"}};
  return m;
}

namespace {

// A question id as written: an integer of the id's range (81.7 or 2^32 + 81 read as an
// int would silently be 81).
int QuestionId(const nlohmann::json& v, const std::string& path, int n) {
  const std::string text = v.dump();
  if (!v.is_number_integer()) Fail("{}:{}: question_id: {} is not an integer", path, n, text);
  if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(INT_MAX)
                             : v.get<int64_t>() < INT_MIN || v.get<int64_t>() > INT_MAX)
    Fail("{}:{}: question_id: {} is out of range [{}, {}]", path, n, text, INT_MIN, INT_MAX);
  return v.get<int>();
}

}  // namespace

std::vector<Question> ReadQuestions(const std::string& path) {
  std::ifstream f = OpenTextInput(path, "question file");
  std::vector<Question> out;
  std::map<int, int> lines;  // id -> the line that gave it: ids name questions in records
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      Question q;
      q.id = QuestionId(j.at("question_id"), path, n);
      if (auto [it, fresh] = lines.try_emplace(q.id, n); !fresh)
        Fail("{}:{}: question_id {} given twice (first on line {})", path, n, q.id, it->second);
      q.category = j.at("category").get<std::string>();
      CheckGroupName(q.category, fmt::format("{}:{}: category", path, n));
      q.turns = j.at("turns").get<std::vector<std::string>>();
      if (q.turns.empty()) Fail("{}:{}: turns: empty list", path, n);
      out.push_back(std::move(q));
    } catch (const nlohmann::json::exception& e) {
      Fail("{}:{}: not a question ({{question_id, category, turns}}): {}", path, n, e.what());
    }
  }
  if (out.empty()) Fail("{}: no questions", path);
  return out;
}

std::vector<Question> SelectQuestions(std::vector<Question> all, const QuestionSelection& s, const std::string& what) {
  const auto& groups = s.groups.empty() ? SpecBenchGroups() : s.groups;
  std::vector<std::string> order;  // groups by first appearance
  std::map<std::string, std::vector<Question>> by_group;
  std::set<std::string> known;
  for (Question& q : all) {
    auto it = groups.find(q.category);
    q.group = it == groups.end() ? q.category : it->second;  // unmapped: its own group
    if (it != groups.end()) CheckGroupName(q.group, what + ": prompts.groups." + q.category);
    known.insert(q.category);
    known.insert(q.group);
    if (!s.categories.empty() &&
        std::find(s.categories.begin(), s.categories.end(), q.category) == s.categories.end() &&
        std::find(s.categories.begin(), s.categories.end(), q.group) == s.categories.end())
      continue;
    if (!by_group.count(q.group)) order.push_back(q.group);
    by_group[q.group].push_back(std::move(q));
  }
  for (auto& c : s.categories)
    if (!known.count(c)) Fail("{}: prompts.categories: '{}' is neither a category nor a group of the file", what, c);
  std::vector<Question> out;
  for (auto& g : order) {
    std::vector<Question>& qs = by_group[g];
    if (s.select == "shortest")
      std::stable_sort(qs.begin(), qs.end(), [](const Question& a, const Question& b) {
        auto len = [](const Question& q) {
          size_t n = 0;
          for (auto& t : q.turns) n += t.size();
          return n;
        };
        return len(a) < len(b);
      });
    if (s.per_category > int(qs.size()))
      Fail("{}: prompts.per_category: {} asked, group '{}' has {} questions", what, s.per_category, g, qs.size());
    const size_t n = s.per_category > 0 ? size_t(s.per_category) : qs.size();
    for (size_t i = 0; i < n; ++i) {
      for (auto& t : qs[i].turns) t = CutTurn(t, s.max_chars);
      out.push_back(std::move(qs[i]));
    }
  }
  return out;
}

std::vector<QuestionPart> SplitIntoParts(const std::vector<Question>& selected, int chunk, bool all_turns) {
  std::vector<QuestionPart> parts;
  std::map<std::string, int> in_group;  // questions of each group seen so far
  for (const Question& q : selected) {
    const int n = in_group[q.group]++;
    if (n % std::max(chunk, 1) == 0)
      parts.push_back({fmt::format("{}/{}", q.group, n / std::max(chunk, 1) + 1), {}, 0, 0});
    QuestionPart& p = parts.back();  // SelectQuestions keeps a group's questions together
    p.ids.push_back(q.id);
    for (size_t t = 0; t < (all_turns ? q.turns.size() : 1); ++t) p.turns += 1, p.chars += double(q.turns[t].size());
  }
  return parts;
}

std::string CutTurn(const std::string& turn, int max_chars) {
  if (max_chars <= 0 || int(turn.size()) <= max_chars) return turn;
  auto back_to_char_start = [&](size_t i) {
    while (i > 0 && i < turn.size() && (static_cast<unsigned char>(turn[i]) & 0xC0) == 0x80) --i;
    return i;
  };
  const size_t head = back_to_char_start(size_t(max_chars) / 2);
  const size_t tail = back_to_char_start(turn.size() - size_t(max_chars) / 2);
  return turn.substr(0, head) + " ... " + turn.substr(tail);
}

}  // namespace specsweep
