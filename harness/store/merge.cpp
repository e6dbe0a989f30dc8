#include "harness/store/merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "base/error.h"
#include "decoders/draft_spec.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {

namespace {

const json& ShardField(const Results& r, const char* field) {
  if (!r.context.contains("shard") || !r.context["shard"].is_object())
    Fail("{}: context.shard: missing (not the output of `run --shard I/N`)", r.path);
  const json& s = r.context["shard"];
  if (!s.contains(field) || !s[field].is_number_integer())
    Fail("{}: context.shard.{}: missing or not an integer", r.path, field);
  return s[field];
}

std::string ExperimentHash(const Results& r) {
  if (!r.context.contains("experiment_sha256") || !r.context["experiment_sha256"].is_string())
    Fail("{}: context.experiment_sha256: missing (results written before shards were hashed?)", r.path);
  return r.context["experiment_sha256"].get<std::string>();
}

// Fields equal in every shard's context (machine, build, experiment), for the top level.
json CommonContext(const std::vector<Results>& shards) {
  json common = json::object();
  for (auto& item : shards[0].context.items()) {
    const std::string& field = item.key();  // not a structured binding: clang 14 cannot capture one
    if (field == "shard") continue;
    bool same = std::all_of(shards.begin(), shards.end(), [&](const Results& r) {
      return r.context.contains(field) && r.context[field] == item.value();
    });
    if (same) common[field] = item.value();
  }
  return common;
}

// The model a record's file of `role` belongs to, as the experiment names it (target:
// the record's model; draft: the draft's model=NAME); "" when the record does not say.
std::string ModelOf(const json& rec, const std::string& role) {
  if (role == "target") return FieldText(rec, "model");
  if (role != "draft") return "";
  try {
    const std::string label = FieldText(rec, "draft");  // "model=x+q4_0 (5 of 36 f16)": types shown after it
    return ParseDraftSpec(label.substr(0, label.find(" (")), "draft").model();
  } catch (const Error&) {
    return "";  // an older label: the file is still checked by (role, name)
  }
}

// Shards measured with other weights or other prompts are not one experiment, although
// their experiment files hash alike (the files hash the model *names*): every file
// (role, name) must have one sha256, and so must every model's file in any role (a
// model the target of one shard and the draft of another), and every (model, input
// length) one prompt set.
void CheckSameInputs(const std::vector<Results>& shards) {
  struct Seen {
    std::string sha, point, path;
  };
  std::map<std::string, Seen> files, prompts;
  auto agree = [](std::map<std::string, Seen>& seen, const std::string& what, const std::string& sha,
                  const std::string& point, const std::string& path) {
    auto [it, fresh] = seen.try_emplace(what, Seen{sha, point, path});
    if (!fresh && it->second.sha != sha)
      Fail("merge: {}: point {}: {} has sha256 {}, but point {} in {} was measured with sha256 {}", path, point, what,
           sha, it->second.point, it->second.path, it->second.sha);
  };
  for (auto& r : shards)
    for (auto& rec : r.records) {
      const std::string point = FieldText(rec, "name");
      for (auto& f : ModelFilesFromJson(rec)) {
        agree(files, fmt::format("model file {}{}", f.role.empty() ? "" : f.role + " ", f.file), f.sha256, point,
              r.path);
        if (const std::string model = ModelOf(rec, f.role); !model.empty())
          agree(files, fmt::format("model {}'s file {}", model, f.file), f.sha256,
                fmt::format("{} ({})", point, f.role), r.path);
      }
      if (rec.contains("prompt_sha256"))
        agree(prompts,
              fmt::format("the prompt set of {} (input_length {})", FieldText(rec, "model"),
                          FieldText(rec, "input_length")),
              FieldText(rec, "prompt_sha256"), point, r.path);
    }
}

// The merged file's schema version: today's, but the last arithmetic-speedup version
// when the shards hold such speedups (records are merged as written, never recomputed);
// shards of both estimators are refused, as one table would mix them.
int MergedSchemaVersion(const std::vector<Results>& shards) {
  const Results* geometric = nullptr;
  const Results* arithmetic = nullptr;
  for (auto& r : shards) (SchemaVersionOf(r.context) >= kGeometricSpeedupSchemaVersion ? geometric : arithmetic) = &r;
  if (geometric && arithmetic)
    Fail(
        "{}: context.schema_version: {} (speedups as arithmetic means of per-round ratios) but {} has {} "
        "(geometric means): shards of one experiment are measured by one version",
        arithmetic->path, SchemaVersionOf(arithmetic->context), geometric->path, SchemaVersionOf(geometric->context));
  return arithmetic ? kGeometricSpeedupSchemaVersion - 1 : kResultsSchemaVersion;
}

}  // namespace

MergedResults MergeShards(const std::vector<Results>& shards, const std::vector<std::string>& expected_keys) {
  if (shards.empty()) Fail("merge: no shard results given");
  MergedResults m;
  MergeReport& rep = m.report;
  const std::string hash = ExperimentHash(shards[0]);
  rep.shard_count = ShardField(shards[0], "count").get<int>();
  rep.experiment_points = ShardField(shards[0], "experiment_points").get<size_t>();
  std::set<int> seen_shards;
  for (auto& r : shards) {
    if (ExperimentHash(r) != hash)
      Fail("{}: context.experiment_sha256: {} differs from {} in {}: a shard of a different experiment", r.path,
           ExperimentHash(r), hash, shards[0].path);
    int count = ShardField(r, "count").get<int>(), index = ShardField(r, "index").get<int>();
    if (count != rep.shard_count)
      Fail("{}: context.shard.count: {} differs from {} in {}", r.path, count, rep.shard_count, shards[0].path);
    if (index < 0 || index >= count) Fail("{}: context.shard.index: {} is not in 0..{}", r.path, index, count - 1);
    seen_shards.insert(index);
  }
  for (int i = 0; i < rep.shard_count; ++i)
    if (!seen_shards.count(i)) rep.missing_shards.push_back(i);
  CheckSameInputs(shards);
  const int schema_version = MergedSchemaVersion(shards);

  // First record per key wins; later copies are reported.
  std::map<std::string, json> by_key;
  std::vector<std::string> order;
  json contexts = json::array();
  for (auto& r : shards) {
    json c = r.context;
    c["file"] = r.path;
    contexts.push_back(c);
    const int index = ShardField(r, "index").get<int>();
    for (auto& rec : r.records) {
      std::string key = rec["key"].get<std::string>();
      if (by_key.count(key)) {
        rep.duplicated.push_back(key);
        continue;
      }
      json out = rec;
      out["shard"] = index;
      by_key[key] = out;
      order.push_back(key);
    }
  }
  if (!expected_keys.empty()) {
    std::set<std::string> expected(expected_keys.begin(), expected_keys.end());
    for (auto& k : order)
      if (!expected.count(k)) rep.unexpected.push_back(k);
    std::vector<std::string> grid_order;
    for (auto& k : expected_keys) {
      if (by_key.count(k))
        grid_order.push_back(k);
      else
        rep.missing.push_back(k);
    }
    for (auto& k : rep.unexpected) grid_order.push_back(k);
    order = grid_order;
  }
  json records = json::array();
  for (auto& k : order) records.push_back(by_key[k]);
  rep.merged_points = order.size();

  json context = CommonContext(shards);
  // LoadResults read the records in today's terms, except an older shard's speedups.
  context["schema_version"] = schema_version;
  context["merged"] = {{"shard_count", rep.shard_count},
                       {"shards_merged", seen_shards.size()},
                       {"points", rep.merged_points},
                       {"experiment_points", rep.experiment_points}};
  context["shards"] = contexts;
  m.doc = {{"context", context}, {"benchmarks", records}};
  return m;
}

std::vector<std::string> FindShardFiles(const std::vector<std::string>& inputs) {
  static const std::regex kShardFile(R"(.*\.shard-[0-9]+-of-[0-9]+\.json)");
  std::vector<std::string> out;
  for (auto& in : inputs) {
    if (!fs::is_directory(in)) {
      if (!fs::exists(in)) Fail("{}: cannot open: no such file or directory", in);
      out.push_back(in);
      continue;
    }
    std::vector<std::string> found;
    for (auto& f : fs::directory_iterator(in))
      if (f.is_regular_file() && std::regex_match(f.path().filename().string(), kShardFile))
        found.push_back(f.path().string());
    if (found.empty()) Fail("{}: no shard results (<name>.shard-I-of-N.json) in this directory", in);
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace specsweep
