#include "harness/sweep/yaml.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "base/error.h"
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
      for (const auto& kv : n) o[kv.first.as<std::string>()] = YamlToJson(kv.second, budget, path, depth + 1);
      return o;
    }
    case YAML::NodeType::Scalar: break;
  }
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always a string
  if (s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  // Plain scalars that parse completely as numbers are numbers.
  {
    size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    bool digits = i < s.size();
    for (size_t j = i; j < s.size(); ++j) digits = digits && std::isdigit(static_cast<unsigned char>(s[j]));
    if (digits && s.size() < 19) return std::stoll(s);
  }
  {
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && s.find_first_of("0123456789") != s.npos) return d;
  }
  return s;
}

json ReadYamlAsJson(const std::string& path) {
  std::ifstream f(path);
  if (!f) Fail("{}: cannot open", path);
  try {
    YAML::Node root = YAML::Load(f);
    int64_t budget = kMaxYamlNodes;
    return YamlToJson(root, budget, path);
  } catch (const YAML::Exception& e) {
    Fail("{}:{}:{}: yaml: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
}

}  // namespace specsweep
