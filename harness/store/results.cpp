#include "harness/store/results.h"

#include "harness/store/batch_stats.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <limits>
#include <map>

#include "base/error.h"
#include "base/text_input.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {

// ---------------------------------------------------------------------------------
// Results of earlier versions

namespace {

// The draft length ipex-llm's adaptive policy ran to before k bounded it.
constexpr int kOldAdaptiveMaxK = 8;

// `text` split at `sep`, `f` applied to each part, joined again.
template <typename F>
std::string MapParts(const std::string& text, char sep, F f) {
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    f(part);
    out += part;
    if (end == std::string::npos) return out;
    out += sep;
    start = end + 1;
  }
}

bool IsOldDecoderName(const std::string& d) { return d == "assisted" || d == "self-spec"; }

// A Point::Key() of an old record in today's terms.
std::string UpgradeKey(const std::string& key, bool adaptive) {
  return MapParts(key, ';', [&](std::string& part) {
    if (part == "dec=assisted" || part == "dec=self-spec") part = "dec=speculative";
    if (adaptive && part.starts_with("k=")) part = fmt::format("k={}", kOldAdaptiveMaxK);
  });
}

// A Point::Name() (model/decoder/draft/k=K/...) of an old record in today's terms.
std::string UpgradeName(const std::string& name, const std::string& decoder, bool adaptive) {
  bool after_decoder = false;
  return MapParts(name, '/', [&](std::string& part) {
    if (!after_decoder && part == decoder)
      part = "speculative", after_decoder = true;
    else if (after_decoder && adaptive && part.starts_with("k="))
      part = fmt::format("k={}", kOldAdaptiveMaxK);
  });
}

}  // namespace

bool UpgradeRecord(json& rec) {
  json* params = rec.contains("params") && rec["params"].is_object() ? &rec["params"] : &rec;
  if (!params->contains("decoder") || !(*params)["decoder"].is_string()) return false;
  const std::string decoder = (*params)["decoder"].get<std::string>();
  if (!IsOldDecoderName(decoder)) return false;
  const bool adaptive = params->value("k_policy", json("")) == json("adaptive");
  (*params)["decoder"] = "speculative";
  if (adaptive) (*params)["k"] = kOldAdaptiveMaxK;
  for (const char* f : {"key", "baseline_key"})
    if (rec.contains(f) && rec[f].is_string()) rec[f] = UpgradeKey(rec[f].get<std::string>(), adaptive);
  for (const char* f : {"name", "run_name"})
    if (rec.contains(f) && rec[f].is_string()) rec[f] = UpgradeName(rec[f].get<std::string>(), decoder, adaptive);
  if (rec.contains("identity") && rec["identity"].is_object() && rec["identity"].contains("group") &&
      rec["identity"]["group"].is_array())
    for (json& k : rec["identity"]["group"])
      if (k.is_string() && k.get<std::string>().find(";dec=") != std::string::npos) {
        const std::string key = k.get<std::string>();
        // Only the group's adaptive points drafted to 8; the others keep their k.
        k = UpgradeKey(key, key.find(";kp=adaptive") != std::string::npos);
      }
  return true;
}

// ---------------------------------------------------------------------------------
// JSON conversions

json StatsToJson(const GenerationStats& s) {
  json out{{"prompt_tokens", s.prompt_tokens},
           {"generated_tokens", s.generated_tokens},
           {"target_calls", s.target_calls},
           {"draft_calls", s.draft_calls},
           {"drafted", s.drafted},
           {"accepted", s.accepted},
           {"drafted_at_pos", s.drafted_at_pos},
           {"accepted_at_pos", s.accepted_at_pos},
           {"k_per_step", s.k_per_step},
           {"accepted_per_step", s.accepted_per_step},
           {"prefill_s", s.prefill_s},
           {"draft_s", s.draft_s},
           {"verify_s", s.verify_s},
           {"other_s", s.other_s},
           {"retokenize_s", s.retokenize_s},
           {"total_s", s.total_s},
           {"first_token_latency_s", s.first_token_latency_s},
           {"mean_next_token_latency_s", s.mean_next_token_latency_s},
           {"tokens_per_s", s.tokens_per_s}};
  // Token trees of a draft model only (older records and other drafts: absent).
  if (!s.draft_calls_by_size.empty()) out["draft_calls_by_size"] = s.draft_calls_by_size;
  if (!s.draft_tree_calls_by_size.empty()) out["draft_tree_calls_by_size"] = s.draft_tree_calls_by_size;
  if (!s.tree_per_step.empty()) {  // each step's tree, for trace replay (acceptance_source.h)
    json& steps = out["tree_per_step"] = json::array();
    for (const TreeStep& t : s.tree_per_step)
      steps.push_back({{"parents", t.parents}, {"ranks", t.ranks}, {"expanded", t.expanded}, {"path", t.path}});
  }
  BatchStatsToJson(s, {}, out);  // batch > 1 only
  return out;
}

namespace {
json CostsToJson(const CallCosts& c) {
  json out{{"target_s", c.target_s}, {"draft_s", c.draft_s}};
  if (!c.draft_tree_s.empty()) out["draft_tree_s"] = c.draft_tree_s;  // token trees of a model
  return out;
}
}  // namespace

GenerationStats StatsFromJson(const json& j, const std::string& what) {
  GenerationStats s;
  try {
    s.prompt_tokens = j.at("prompt_tokens").get<int>();
    s.generated_tokens = j.at("generated_tokens").get<int>();
    s.target_calls = j.at("target_calls").get<int>();
    s.draft_calls = j.at("draft_calls").get<int>();
    s.drafted = j.at("drafted").get<int64_t>();
    s.accepted = j.at("accepted").get<int64_t>();
    s.drafted_at_pos = j.at("drafted_at_pos").get<std::vector<int64_t>>();
    s.accepted_at_pos = j.at("accepted_at_pos").get<std::vector<int64_t>>();
    s.k_per_step = j.at("k_per_step").get<std::vector<int>>();
    // Absent in records before acceptance traces: such runs cannot be replayed.
    s.accepted_per_step = j.value("accepted_per_step", std::vector<int>{});
    s.prefill_s = j.at("prefill_s").get<double>();
    s.draft_s = j.at("draft_s").get<double>();
    s.verify_s = j.at("verify_s").get<double>();
    s.other_s = j.at("other_s").get<double>();
    s.retokenize_s = j.at("retokenize_s").get<double>();
    s.total_s = j.at("total_s").get<double>();
    s.first_token_latency_s = j.at("first_token_latency_s").get<double>();
    s.mean_next_token_latency_s = j.at("mean_next_token_latency_s").get<double>();
    s.tokens_per_s = j.at("tokens_per_s").get<double>();
    s.draft_calls_by_size = j.value("draft_calls_by_size", std::vector<int64_t>{});
    s.draft_tree_calls_by_size = j.value("draft_tree_calls_by_size", std::vector<int64_t>{});
    for (const json& t : j.value("tree_per_step", json::array()))
      s.tree_per_step.push_back({t.at("parents").get<std::vector<int>>(), t.at("ranks").get<std::vector<int>>(),
                                 t.at("expanded").get<std::vector<int>>(), t.at("path").get<std::vector<int>>()});
    std::vector<std::string> hashes;  // a RawRun's, read by RawFromJson
    BatchStatsFromJson(j, what, s, hashes);
  } catch (const json::exception& e) {
    Fail("{}: stats: {}", what, e.what());
  }
  return s;
}

json RawToJson(const RawRecord& r) {
  json runs = json::array();
  for (auto& run : r.runs) {
    json stats = StatsToJson(run.stats);
    BatchStatsToJson(run.stats, run.sequence_hashes, stats);  // the batch's per-sequence hashes
    runs.push_back(json{{"prompt", run.prompt},
                        {"rep", run.rep},
                        {"round", run.round},
                        {"slot", run.slot},
                        {"output", run.output_hash},
                        {"stats", std::move(stats)}});
  }
  json out{{"key", r.key},
           {"baseline_key", r.baseline_key},
           {"name", r.name},
           {"params", r.params},
           {"repetitions", r.repetitions},
           {"warmup", r.warmup},
           {"threads_used", r.threads_used},
           {"kernel_isa", r.kernel_isa},
           {"identity", json{{"experiment_sha256", r.identity.experiment_sha256},
                             {"prompt_sha256", r.identity.prompt_sha256},
                             {"model_files", ModelFilesToJson(r.identity.model_files)},
                             {"group", r.identity.group}}},
           {"costs", CostsToJson(r.costs)},
           {"host", r.host.ToJson()},
           {"prompt_tokens", r.prompt_tokens},
           {"runs", runs}};
  if (!r.prompt_categories.empty()) out["prompt_categories"] = r.prompt_categories;
  if (!r.prompt_set.empty()) out["prompt_set"] = r.prompt_set;
  if (!r.target_types.empty()) out["target_types"] = r.target_types;
  if (!r.draft_types.empty()) out["draft_types"] = r.draft_types;
  if (!r.draft_tokenizer.empty()) out["draft_tokenizer"] = r.draft_tokenizer;
  if (!r.kernels.empty()) out["kernels"] = r.kernels;
  return out;
}

RawRecord RawFromJson(const json& in, const std::string& what) {
  RawRecord r;
  json upgraded;
  const json* jp = &in;
  if (in.is_object() && in.contains("params")) {
    upgraded = in;
    if (UpgradeRecord(upgraded)) jp = &upgraded;
  }
  const json& j = *jp;
  try {
    if (!j.is_object()) Fail("{}: expected a JSON object", what);
    r.key = j.at("key").get<std::string>();
    r.baseline_key = j.at("baseline_key").get<std::string>();
    r.name = j.at("name").get<std::string>();
    r.params = j.at("params");
    if (!r.params.is_object()) Fail("{}: params: expected an object", what);
    r.repetitions = j.at("repetitions").get<int>();
    r.warmup = j.at("warmup").get<int>();
    r.threads_used = j.at("threads_used").get<int>();
    r.kernel_isa = j.at("kernel_isa").get<std::string>();
    if (j.contains("kernels")) r.kernels = j.at("kernels").get<std::map<std::string, std::string>>();
    const json& id = j.at("identity");
    r.identity.experiment_sha256 = id.at("experiment_sha256").get<std::string>();
    r.identity.prompt_sha256 = id.at("prompt_sha256").get<std::string>();
    if (!id.contains("model_files") && !id.contains("model_sha256")) Fail("{}: identity.model_files: missing", what);
    r.identity.model_files = ModelFilesFromJson(id);
    r.identity.group = id.at("group").get<std::vector<std::string>>();
    r.costs.target_s = j.at("costs").at("target_s").get<std::vector<double>>();
    r.costs.draft_s = j.at("costs").at("draft_s").get<std::vector<double>>();
    // Absent before the tree cost model (and for every other draft).
    r.costs.draft_tree_s = j.at("costs").value("draft_tree_s", std::vector<double>{});
    const json& h = j.at("host");
    r.host.load_before = h.at("load_before").get<double>();
    r.host.load_after = h.at("load_after").get<double>();
    r.host.other_cpu = h.at("other_cpu").get<double>();
    r.host.steal = h.at("steal").get<double>();
    r.host.busy = h.at("busy").get<bool>();
    r.prompt_tokens = j.at("prompt_tokens").get<std::vector<int>>();
    if (j.contains("prompt_categories")) {
      r.prompt_categories = j.at("prompt_categories").get<std::vector<std::string>>();
      if (r.prompt_categories.size() != r.prompt_tokens.size())
        Fail("{}: prompt_categories: {} entries for {} prompts", what, r.prompt_categories.size(),
             r.prompt_tokens.size());
    }
    if (j.contains("prompt_set")) r.prompt_set = j.at("prompt_set");
    if (j.contains("target_types")) r.target_types = j.at("target_types").get<std::map<std::string, int>>();
    if (j.contains("draft_types")) r.draft_types = j.at("draft_types").get<std::map<std::string, int>>();
    if (j.contains("draft_tokenizer")) r.draft_tokenizer = j.at("draft_tokenizer").get<std::string>();
    for (auto& run : j.at("runs")) {
      RawRun x;
      x.prompt = run.at("prompt").get<int>();
      x.rep = run.at("rep").get<int>();
      x.round = run.at("round").get<int>();
      x.slot = run.at("slot").get<int>();
      x.output_hash = run.at("output").get<std::string>();
      x.stats = StatsFromJson(run.at("stats"), what);
      GenerationStats batch;  // the per-sequence output hashes beside the batch's stats
      BatchStatsFromJson(run.at("stats"), what, batch, x.sequence_hashes);
      if (x.prompt < 0 || x.prompt >= int(r.prompt_tokens.size()))
        Fail("{}: runs: prompt index {} out of range", what, x.prompt);
      r.runs.push_back(std::move(x));
    }
  } catch (const json::exception& e) {
    Fail("{}: {}", what, e.what());
  }
  return r;
}

std::string RawRecord::Difference(const RawRecord& x) const {
  auto differ = [](const std::string& field, const auto& was, const auto& now) {
    return fmt::format("{}: {} in the results, {} now", field, json(was).dump(), json(now).dump());
  };
  for (auto& [field, v] : x.params.items())
    if (!params.contains(field) || params[field] != v) return differ(field, params.value(field, json(nullptr)), v);
  if (repetitions != x.repetitions) return differ("repetitions", repetitions, x.repetitions);
  if (warmup != x.warmup) return differ("warmup", warmup, x.warmup);
  if (prompt_tokens != x.prompt_tokens || identity.prompt_sha256 != x.identity.prompt_sha256)
    return "prompts: the prompt token ids differ (prompt file, prompts.count or tokenizer changed)";
  if (prompt_categories != x.prompt_categories)
    return "prompts: the prompts' categories differ (prompts.groups changed)";
  if (std::string d = ModelFilesDifference(identity.model_files, x.identity.model_files); !d.empty()) return d;
  if (identity.group != x.identity.group) return "group: the points measured together (interleaved) differ";
  return "";
}

JsonlContents ReadJsonl(const std::string& path) {
  JsonlContents out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;  // nothing recorded yet
  // A device or FIFO at the path would be read (or waited on) forever.
  const std::string all = ReadTextInput(path, "results file", kMaxResultsBytes);
  std::map<std::string, std::string> seen;  // key -> the kept record's line
  size_t pos = 0;
  int line_no = 0;
  while (pos < all.size()) {
    const size_t nl = all.find('\n', pos);
    ++line_no;
    if (nl == std::string::npos) {  // unterminated: cut by a crash
      if (all.find_first_not_of(" \t\r", pos) != std::string::npos) out.torn_line = line_no;
      break;
    }
    std::string line = all.substr(pos, nl - pos);
    pos = nl + 1;
    out.complete_bytes = pos;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    RawRecord r;
    try {
      if (j.is_discarded()) Fail("not JSON");
      r = RawFromJson(j, fmt::format("{}:{}", path, line_no));
    } catch (const Error&) {
      out.corrupt.emplace_back(line_no, std::move(line));
      continue;
    }
    if (auto it = seen.find(r.key); it != seen.end()) {
      const bool same = it->second == line;
      out.duplicates.push_back({line_no, r.key, r.name, std::move(line), same});
      continue;
    }
    seen[r.key] = line;
    out.records.push_back(std::move(r));
  }
  return out;
}

Results ReadResults(const std::string& path) {
  Results res;
  res.path = path;
  if (!fs::exists(path)) Fail("{}: cannot open: no such file", path);
  std::string ext = fs::path(path).extension().string();
  if (ext == ".jsonl") {
    JsonlContents c = ReadJsonl(path);
    for (auto& [line, text] : c.corrupt)
      res.warnings.push_back(fmt::format("{}:{}: corrupt line (not a record)", path, line));
    if (c.torn_line)  // a baseline cut short would gate fewer points than it holds
      res.warnings.push_back(
          fmt::format("{}:{}: last line cut off (no newline at its end): not a record", path, c.torn_line));
    res.raw = std::move(c.records);
    return res;
  }
  if (ext != ".json") Fail("{}: unknown results file type '{}' (expected .json or .jsonl)", path, ext);
  std::ifstream f = OpenTextInput(path, "results file", kMaxResultsBytes);
  json doc;
  try {
    doc = json::parse(f);
  } catch (const json::parse_error& e) {
    Fail("{}: json: {}", path, e.what());
  }
  if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array())
    Fail("{}: benchmarks: missing or not a list", path);
  if (doc.contains("context")) {
    res.context = doc["context"];
    const int v = SchemaVersionOf(res.context);
    if (v < kOldestResultsSchemaVersion || v > kResultsSchemaVersion)
      Fail("{}: context.schema_version: {} is not a supported version ({} to {})", path,
           res.context.is_object() ? res.context.value("schema_version", json(nullptr)).dump() : "?",
           kOldestResultsSchemaVersion, kResultsSchemaVersion);
  }
  size_t i = 0;
  for (auto& b : doc["benchmarks"]) {
    if (!b.is_object() || !b.contains("key") || !b["key"].is_string()) Fail("{}: benchmarks[{}].key: missing", path, i);
    res.records.push_back(b);
    UpgradeRecord(res.records.back());
    ++i;
  }
  return res;
}

int SchemaVersionOf(const json& context) {
  if (!context.is_object() || !context.contains("schema_version")) return 0;
  const json& v = context["schema_version"];
  if (!v.is_number()) return 0;
  const double d = v.get<double>();
  return d == std::floor(d) && std::abs(d) < 1e6 ? int(d) : 0;  // 3 and 3.0 alike, 3.5 none
}

std::string DumpJson(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

json HostLoad::ToJson() const {
  return json{{"load_before", load_before},
              {"load_after", load_after},
              {"other_cpu", other_cpu},
              {"steal", steal},
              {"busy", busy}};
}

}  // namespace specsweep
