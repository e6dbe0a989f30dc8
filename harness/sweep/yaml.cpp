#include "harness/sweep/yaml.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "base/error.h"
#include "base/text_input.h"
#include "models/limits.h"

using nlohmann::json;

namespace specsweep {

// `budget` counts the nodes produced: aliases share nodes, so a few lines of anchors
// can stand for 10^9 of them ("billion laughs"); the conversion stops at kMaxYamlNodes.
// `depth` bounds the recursion: an anchor used inside its own definition ("a: &a [*a]")
// makes a cyclic graph, which would recurse until the stack overflows (a fuzz finding).
static json YamlToJson(const YAML::Node& n, int64_t& budget, const std::string& path, int depth = 0) {
  if (--budget < 0)
    Fail("{}: yaml: the document expands to more than {} nodes (aliases nested too deeply?)", path, kMaxYamlNodes);
  if (depth > kMaxNesting)
    Fail("{}: yaml: nesting deeper than {} levels (an alias used inside its own anchor?)", path, kMaxNesting);
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(YamlToJson(e, budget, path, depth + 1));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      std::map<std::string, int> lines;  // key -> its line: a repeated key would silently win
      for (const auto& kv : n) {
        const std::string key = kv.first.as<std::string>();
        const int line = kv.first.Mark().line + 1;
        if (auto [it, fresh] = lines.try_emplace(key, line); !fresh)
          Fail("{}:{}: yaml: key '{}' given twice, on lines {} and {}", path, line, key, it->second, line);
        o[key] = YamlToJson(kv.second, budget, path, depth + 1);
      }
      return o;
    }
    case YAML::NodeType::Scalar: break;
  }
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always a string
  if (s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  // Plain scalars that parse completely as numbers are numbers; integers as JSON reads
  // them (int64, then uint64, then a number), so a seed has one range in both formats.
  {
    const size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    const char *first = s.data() + (s[0] == '+' ? 1 : 0), *last = s.data() + s.size();
    bool digits = i < s.size();
    for (size_t j = i; j < s.size(); ++j) digits = digits && std::isdigit(static_cast<unsigned char>(s[j]));
    int64_t v = 0;
    uint64_t u = 0;
    if (digits && std::from_chars(first, last, v).ec == std::errc()) return v;
    if (digits && s[0] != '-' && std::from_chars(first, last, u).ec == std::errc()) return u;
  }
  {
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && s.find_first_of("0123456789") != s.npos) return d;
  }
  return s;
}

namespace {

// Notes where each document starts and ignores the rest: walking the documents one at a
// time, at most two, tells whether a second one follows. (YAML::LoadAll loops without end
// on some malformed input, growing memory: a fuzz finding.)
class DocumentStarts : public YAML::EventHandler {
 public:
  int line = 0;  // 1-based line of the last document started
  void OnDocumentStart(const YAML::Mark& m) override { line = m.line + 1; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

json ReadYamlAsJson(const std::string& path) {
  std::stringstream text;
  text << ReadTextInput(path, "experiment file");
  try {
    const YAML::Node root = YAML::Load(text.str());  // the first document
    std::istringstream again(text.str());
    YAML::Parser parser(again);
    DocumentStarts starts;
    if (parser.HandleNextDocument(starts) && parser.HandleNextDocument(starts))
      Fail("{}:{}: yaml: a second document (after '---'): an experiment file holds one", path, starts.line);
    int64_t budget = kMaxYamlNodes;
    return YamlToJson(root, budget, path);
  } catch (const YAML::Exception& e) {
    Fail("{}:{}:{}: yaml: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
}

namespace {

// Line of the n-th (0-based) `"key":` in JSON text (0 if not found).
int LineOfKey(const std::string& text, const std::string& key, int n) {
  const std::string quoted = json(key).dump();
  for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
    const size_t next = text.find_first_not_of(" \t\r\n", at + quoted.size());
    if (next == std::string::npos || text[next] != ':' || n-- > 0) continue;
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
  }
  return 0;
}

}  // namespace

json ReadJsonStrict(const std::string& path) {
  const std::string text = ReadTextInput(path, "experiment file");
  std::vector<std::map<std::string, int>> objects;  // per open object: key -> its occurrence number
  std::map<std::string, int> occurrences;           // per key name, over the file
  auto check = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) objects.emplace_back();
    if (ev == json::parse_event_t::object_end && !objects.empty()) objects.pop_back();
    if (ev == json::parse_event_t::key && !objects.empty()) {
      const std::string key = parsed.get<std::string>();
      const int occ = occurrences[key]++;
      if (auto [it, fresh] = objects.back().try_emplace(key, occ); !fresh) {
        const int first = LineOfKey(text, key, it->second), second = LineOfKey(text, key, occ);
        Fail("{}:{}: json: key '{}' given twice, on lines {} and {}", path, second, key, first, second);
      }
    }
    return true;
  };
  try {
    return json::parse(text, check);
  } catch (const json::exception& e) {
    Fail("{}: json: {}", path, e.what());
  }
}

}  // namespace specsweep
