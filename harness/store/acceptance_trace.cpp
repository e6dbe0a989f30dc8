#include "harness/store/acceptance_trace.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/text_input.h"
#include "decoders/draft_spec.h"
#include "harness/store/sha256.h"

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

// The next line of `in` without its '\n' into `line`; false at the end. `terminated`:
// the line ended with '\n' (a last line without one was cut). Error past `max` bytes.
bool ReadLine(std::istream& in, std::string& line, bool& terminated, size_t max, const std::string& where) {
  line.clear();
  terminated = false;
  std::streambuf* sb = in.rdbuf();
  for (int c = sb->sbumpc(); c != std::char_traits<char>::eof(); c = sb->sbumpc()) {
    if (c == '\n') return terminated = true;
    if (line.size() == max) Fail("{}: a line of more than {} bytes: not a record of a sweep", where, max);
    line.push_back(static_cast<char>(c));
  }
  return !line.empty();
}

// A recorded list of step counts: integers that fit an int (4.7 is no count).
std::vector<int> Ints(const json& a, const char* field) {
  if (!a.is_array()) Fail("{}: expected a list", field);
  std::vector<int> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const json& v = a[i];
    if (!v.is_number_integer() || v.get<int64_t>() < std::numeric_limits<int>::min() ||
        (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(std::numeric_limits<int>::max())
                                : v.get<int64_t>() > std::numeric_limits<int>::max()))
      Fail("{}[{}]: {} is not an integer count", field, i, v.dump());
    out.push_back(v.get<int>());
  }
  return out;
}

// One run's steps as read from its record.
struct RunSteps {
  std::vector<int> k, accepted;
  bool has_k = false, has_accepted = false;
  std::vector<TreeStep> tree;
};

// One line of the file as a record whose runs' steps were taken out of the JSON while it
// was parsed (a tree step's JSON costs ~10x its ints): `rec` keeps the rest.
struct ParsedLine {
  json rec;
  std::vector<RunSteps> runs;
  std::string error;  // the first bad step field ("run 0: k_per_step[3]: ..."); raised if chosen
};

ParsedLine ParseLine(const std::string& line) {
  ParsedLine out;
  std::vector<std::string> keys(8);  // the last key read at each depth
  auto take = [&](const char* field, auto&& f) {
    if (!out.error.empty()) return;
    try {
      f();
    } catch (const Error& e) {
      out.error = fmt::format("run {}: {}", out.runs.size() - 1, e.what());
    } catch (const json::exception& e) {
      out.error = fmt::format("run {}: {}: {}", out.runs.size() - 1, field, e.what());
    }
  };
  // Depths (nlohmann's callback): the record 0, its keys 1, a run 2, a run's keys 3,
  // stats' keys 4, a tree step 5.
  auto cb = [&](int depth, json::parse_event_t ev, json& v) -> bool {
    using E = json::parse_event_t;
    if (ev == E::key) {
      if (depth >= int(keys.size())) keys.resize(depth + 1);
      const std::string& key = keys[depth] = v.get<std::string>();
      // A run keeps only its stats, and those only the steps: nothing else is read.
      if (depth == 3 && keys[1] == "runs") return key == "stats";
      if (depth == 4 && keys[1] == "runs" && keys[3] == "stats")
        return key == "k_per_step" || key == "accepted_per_step" || key == "tree_per_step";
      return true;
    }
    if (depth < 2 || keys[1] != "runs") return true;
    if (ev == E::object_start && depth == 2) out.runs.emplace_back();
    if (depth < 4 || keys[3] != "stats" || out.runs.empty()) return true;
    RunSteps& r = out.runs.back();
    const std::string& field = keys[4];
    if (ev == E::array_end && depth == 4 && field == "k_per_step") {
      take("k_per_step", [&] { r.k = Ints(v, "k_per_step"), r.has_k = true; });
      return false;
    }
    if (ev == E::array_end && depth == 4 && field == "accepted_per_step") {
      take("accepted_per_step", [&] { r.accepted = Ints(v, "accepted_per_step"), r.has_accepted = true; });
      return false;
    }
    if (ev == E::object_end && depth == 5 && field == "tree_per_step") {
      take("tree_per_step", [&] {
        const std::string at = fmt::format("tree_per_step[{}].", r.tree.size());
        r.tree.push_back({Ints(v.at("parents"), (at + "parents").c_str()), Ints(v.at("ranks"), (at + "ranks").c_str()),
                          Ints(v.at("expanded"), (at + "expanded").c_str()),
                          Ints(v.at("path"), (at + "path").c_str())});
      });
      return false;
    }
    return true;
  };
  out.rec = json::parse(line, cb, /*allow_exceptions=*/false);
  return out;
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

std::string Describe(const json& rec) {
  const json& n = rec.contains("name") ? rec["name"] : rec.value("key", json("?"));
  return n.is_string() ? n.get<std::string>() : n.dump();
}

// The chosen record's runs as traces; `where` is "<what>: trace: FILE:LINE: point P".
std::vector<AcceptanceTrace> TracesOf(ParsedLine& p, const std::string& where) {
  if (!p.error.empty()) Fail("{}: {}", where, p.error);
  if (!p.rec.contains("runs") || !p.rec["runs"].is_array() || p.rec["runs"].size() != p.runs.size())
    Fail("{}: runs: missing or not a list of runs", where);
  std::vector<AcceptanceTrace> traces;
  for (size_t r = 0; r < p.runs.size(); ++r) {
    RunSteps& run = p.runs[r];
    if (!run.has_accepted)
      Fail("{}: recorded before acceptance traces (no accepted_per_step); measure it again", where);
    if (!run.has_k) Fail("{}: run {}: k_per_step: missing", where, r);
    const auto &k = run.k, &a = run.accepted;
    if (k.size() != a.size())
      Fail("{}: run {}: k_per_step has {} steps, accepted_per_step {}", where, r, k.size(), a.size());
    if (!run.tree.empty() && run.tree.size() != k.size())
      Fail("{}: run {}: tree_per_step has {} steps, k_per_step {}", where, r, run.tree.size(), k.size());
    AcceptanceTrace t;
    for (size_t i = 0; i < k.size(); ++i) {
      if (k[i] < 0 || a[i] < 0 || a[i] > k[i]) Fail("{}: step {} accepts {} of {} tokens", where, i, a[i], k[i]);
      t.push_back({k[i], a[i], run.tree.empty() ? TreeStep{} : std::move(run.tree[i])});
      if (!run.tree.empty()) CheckTreeStep(t.back(), fmt::format("{}: step {}", where, i));
    }
    traces.push_back(std::move(t));
  }
  if (traces.empty()) Fail("{}: the point has no runs", where);
  return traces;
}

// The sha256 of what a replay runs: every step's K, accepted count and tree (not the
// line's bytes, which a rewrite of the folder may lay out anew).
std::string StepsSha(const std::vector<AcceptanceTrace>& runs) {
  fmt::memory_buffer text;
  for (const AcceptanceTrace& run : runs) {
    for (const TraceStep& s : run)
      fmt::format_to(std::back_inserter(text), "{} {} {} {} {} {};", s.k, s.accepted, s.tree.parents, s.tree.ranks,
                     s.tree.expanded, s.tree.path);
    text.push_back('\n');
  }
  return Sha256Hex(std::string_view(text.data(), text.size()));
}

}  // namespace

RecordedTraces LoadAcceptanceTraces(const std::string& ref, const std::string& relative_to, const std::string& what) {
  const size_t colon = ref.find(':');
  const std::string file = ref.substr(0, colon), point = colon == std::string::npos ? "" : ref.substr(colon + 1);
  const fs::path path = FindFile(file, relative_to, what);
  std::ifstream in;
  try {
    in = OpenTextInput(path.string(), "acceptance trace", kMaxTraceBytes);
  } catch (const Error& e) {
    Fail("{}: trace: {}", what, e.what());
  }

  // The records that may hold the trace: speculative (a baseline key), matching POINT.
  ParsedLine chosen;
  int chosen_line = 0, found = 0;
  std::vector<std::string> names;
  std::string line;
  bool terminated = false;
  for (int n = 1; ReadLine(in, line, terminated, kMaxTextInputBytes, fmt::format("{}:{}", path.string(), n)); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ParsedLine p = ParseLine(line);
    // A cut line may be any point's, the one asked for too: nothing can be chosen past it.
    if (p.rec.is_discarded() || !p.rec.is_object())
      Fail("{}: trace: {}:{}: {}; set it aside (a `run --resume` on its folder does) or name another file", what,
           path.string(), n,
           terminated ? "not a record (corrupt line)" : "the last line is cut off (no newline at its end)");
    UpgradeRecord(p.rec);
    const json& base = p.rec.contains("baseline_key") ? p.rec["baseline_key"] : json();
    if (!base.is_string() || base.get<std::string>().empty()) continue;
    names.push_back(Describe(p.rec));
    if (!point.empty() && p.rec.value("name", json()) != json(point) && p.rec.value("key", json()) != json(point))
      continue;
    if (found++ == 0) chosen = std::move(p), chosen_line = n;
  }
  if (found != 1) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < 8; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 8) list += ", ...";
    Fail("{}: trace: {}: {} (speculative points: {}); name one as FILE:POINT", what, path.string(),
         found == 0 ? (point.empty() ? "no speculative point" : "no point named '" + point + "'")
                    : "several speculative points",
         list.empty() ? "none" : list);
  }
  std::string().swap(line);  // the last line's buffer, before the steps are laid out
  RecordedTraces out;
  out.point = Describe(chosen.rec);
  out.runs = TracesOf(chosen, fmt::format("{}: trace: {}:{}: point {}", what, path.string(), chosen_line, out.point));
  out.params = chosen.rec.value("params", json::object());
  out.file = {"trace", path.filename().string(), StepsSha(out.runs)};
  return out;
}

namespace {

// What a replay runs of the recorded steps: K, its policy and the tree shape.
std::string Shape(int k, const std::string& k_policy, const DraftSpec& d) {
  std::string tree = "a chain";
  if (!d.branching().empty())
    tree = fmt::format("branching={}", fmt::join(d.branching(), ","));
  else if (d.tree_budget() > 0)
    tree = fmt::format("tree_budget={}", d.tree_budget());
  else if (d.IsTree())
    tree = "the tree of " + d.BaseLabel();
  return fmt::format("k={} ({}), {}", k, k_policy, tree);
}

}  // namespace

void CheckTraceShape(const RecordedTraces& t, const DecoderOptions& replaying, const std::string& what) {
  std::string recorded;
  try {
    const json& p = t.params;
    recorded = Shape(p.at("k").get<int>(), p.at("k_policy").get<std::string>(),
                     ParseDraftSpec(p.at("draft").get<std::string>(), "draft"));
  } catch (const std::exception& e) {
    Fail("{}: trace: {}: point {}: params: {}: its K and draft are not known", what, t.file.file, t.point, e.what());
  }
  const std::string now = Shape(replaying.k, std::string(KPolicyName(replaying.k_policy)), replaying.draft);
  if (recorded != now)
    Fail("{}: trace: {}: point {} was recorded with {}, the replaying point drafts {}: replay it with the same", what,
         t.file.file, t.point, recorded, now);
}

}  // namespace specsweep
