#include "harness/store/acceptance_trace.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "harness/store/results.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {
namespace {

fs::path FindFile(const std::string& file, const std::string& relative_to, const std::string& what) {
  fs::path p = file;
  if (!p.is_absolute() && !fs::exists(p) && !relative_to.empty()) {
    const fs::path beside = fs::path(relative_to).parent_path() / p;
    if (fs::exists(beside)) p = beside;
  }
  if (p.extension() == ".json") p.replace_extension(".jsonl");  // the raw records keep the runs
  if (!fs::exists(p)) Fail("{}: trace: {}: no such results file", what, p.string());
  return p;
}

// A recorded tree must be one a replay can grow: parents before children, a rank per
// node, a path of k's nodes down from the root, accepted long.
void CheckTreeStep(const TraceStep& s, const std::string& where) {
  const TreeStep& t = s.tree;
  const int n = static_cast<int>(t.parents.size());
  if (n != s.k || t.ranks.size() != t.parents.size() || static_cast<int>(t.path.size()) != s.accepted)
    Fail("{}: the tree has {} nodes, {} ranks and a path of {}, for {} accepted of {}", where, n, t.ranks.size(),
         t.path.size(), s.accepted, s.k);
  for (int i = 0; i < n; ++i)
    if (t.parents[i] < -1 || t.parents[i] >= i || t.ranks[i] < 0)
      Fail("{}: node {} has parent {} and rank {}", where, i, t.parents[i], t.ranks[i]);
  for (size_t j = 0; j < t.path.size(); ++j)
    if (t.path[j] < 0 || t.path[j] >= n || t.parents[t.path[j]] != (j == 0 ? -1 : t.path[j - 1]))
      Fail("{}: the accepted path is not a path down the tree", where);
  for (int e : t.expanded)
    if (e <= 0) Fail("{}: a draft call of {} nodes", where, e);
}

std::string Describe(const json& rec) { return rec.value("name", rec.value("key", std::string("?"))); }

}  // namespace

std::vector<AcceptanceTrace> LoadAcceptanceTraces(const std::string& ref, const std::string& relative_to,
                                                  const std::string& what) {
  const size_t colon = ref.find(':');
  const std::string file = ref.substr(0, colon), point = colon == std::string::npos ? "" : ref.substr(colon + 1);
  const fs::path path = FindFile(file, relative_to, what);
  std::ifstream in(path);
  if (!in) Fail("{}: trace: {}: cannot open", what, path.string());

  // The records that may hold the trace: speculative (a baseline key), matching POINT.
  std::vector<json> found;
  std::vector<std::string> names;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    json rec = json::parse(line, nullptr, false);
    if (rec.is_discarded() || !rec.is_object()) continue;  // a cut or corrupt line: `run --resume` reports it
    if (rec.value("baseline_key", std::string()).empty()) continue;
    names.push_back(Describe(rec));
    if (point.empty() || rec.value("name", "") == point || rec.value("key", "") == point) found.push_back(rec);
  }
  if (found.size() != 1) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < 8; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 8) list += ", ...";
    Fail("{}: trace: {}: {} (speculative points: {}); name one as FILE:POINT", what, path.string(),
         found.empty() ? (point.empty() ? "no speculative point" : "no point named '" + point + "'")
                       : "several speculative points",
         list.empty() ? "none" : list);
  }
  const json& rec = found[0];
  std::vector<AcceptanceTrace> traces;
  try {
    for (const json& run : rec.at("runs")) {
      const json& st = run.at("stats");
      if (!st.contains("accepted_per_step"))
        Fail("{}: trace: {}: point {}: recorded before acceptance traces (no accepted_per_step); measure it again",
             what, path.string(), Describe(rec));
      const auto k = st.at("k_per_step").get<std::vector<int>>();
      const auto a = st.at("accepted_per_step").get<std::vector<int>>();
      if (k.size() != a.size())
        Fail("{}: trace: {}: point {}: k_per_step has {} steps, accepted_per_step {}", what, path.string(),
             Describe(rec), k.size(), a.size());
      // A model-drafted tree's steps carry their trees (StatsFromJson's reading).
      const GenerationStats trees = StatsFromJson(st, what);
      const std::vector<TreeStep>& tree = trees.tree_per_step;
      if (!tree.empty() && tree.size() != k.size())
        Fail("{}: trace: {}: point {}: tree_per_step has {} steps, k_per_step {}", what, path.string(), Describe(rec),
             tree.size(), k.size());
      AcceptanceTrace t;
      for (size_t i = 0; i < k.size(); ++i) {
        if (k[i] < 0 || a[i] < 0 || a[i] > k[i])
          Fail("{}: trace: {}: point {}: step {} accepts {} of {} tokens", what, path.string(), Describe(rec), i, a[i],
               k[i]);
        t.push_back({k[i], a[i], tree.empty() ? TreeStep{} : tree[i]});
        if (!tree.empty())
          CheckTreeStep(t.back(),
                        fmt::format("{}: trace: {}: point {}: step {}", what, path.string(), Describe(rec), i));
      }
      traces.push_back(std::move(t));
    }
  } catch (const json::exception& e) {
    Fail("{}: trace: {}: point {}: {}", what, path.string(), Describe(rec), e.what());
  }
  if (traces.empty()) Fail("{}: trace: {}: point {} has no runs", what, path.string(), Describe(rec));
  return traces;
}

}  // namespace specsweep
