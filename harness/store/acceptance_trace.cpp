#include "harness/store/acceptance_trace.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"

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
      AcceptanceTrace t;
      for (size_t i = 0; i < k.size(); ++i) {
        if (k[i] < 0 || a[i] < 0 || a[i] > k[i])
          Fail("{}: trace: {}: point {}: step {} accepts {} of {} tokens", what, path.string(), Describe(rec), i,
               a[i], k[i]);
        t.push_back({k[i], a[i]});
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
