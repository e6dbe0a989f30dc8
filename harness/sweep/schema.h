// The experiment file's schema: typed reads with "FILE: key.path: what" errors, the sweep
// axes and their parsing, and path resolution. Shared by the file parser and the grid.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/suggest.h"
#include "decoders/decoder.h"
#include "decoders/settings.h"
#include "quant/qtype.h"

namespace specsweep::schema {

// "a map", "an integer", ... for error messages.
const char* TypeName(const nlohmann::json& v);

// The keys of an experiment file's top level.
const std::set<std::string>& TopLevelKeys();
// Where `key`, unknown in the map at `path`, is a key of the experiment files: a
// sampling setting in the sampling map of the sweep or decoder entry `path` is in (else
// the sweep's), an axis in that sweep or decoder entry ("sweep.sampling.temperature",
// "sweep.k"), a top-level key ("top-level repetitions"); "" if none.
std::string MisplacedKeyPath(const std::string& key, const std::string& path);

// Context for error messages: "FILE: key.path: what".
struct Ctx {
  std::string file;
  [[noreturn]] void Bad(const std::string& path, const std::string& what) const {
    throw Error(fmt::format("{}: {}: {}", file, path, what));
  }
  void CheckKeys(const nlohmann::json& obj, const std::string& path, const std::set<std::string>& allowed) const {
    for (auto& [k, v] : obj.items())
      if (!allowed.count(k)) {
        if (const std::string there = MisplacedKeyPath(k, path); !there.empty())
          Bad(path.empty() ? k : path + "." + k, "misplaced key (did you mean " + there + "?)");
        std::string list;
        for (auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        Bad(path.empty() ? k : path + "." + k,
            "unknown key" + DidYouMean(k, {allowed.begin(), allowed.end()}) + " (expected one of: " + list + ")");
      }
  }
  const nlohmann::json& Map(const nlohmann::json& v, const std::string& path) const {
    if (!v.is_object()) Bad(path, fmt::format("expected a map, got {}", TypeName(v)));
    return v;
  }
  std::string Str(const nlohmann::json& v, const std::string& path) const {
    if (!v.is_string()) Bad(path, fmt::format("expected a string, got {}", TypeName(v)));
    if (v.get<std::string>().empty()) Bad(path, "empty string");
    return v.get<std::string>();
  }
  int64_t Int(const nlohmann::json& v, const std::string& path, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) Bad(path, fmt::format("expected an integer, got {}", TypeName(v)));
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi))  // above int64's range too
      Bad(path, fmt::format("{} is out of range [{}, {}]", v.get<uint64_t>(), lo, hi));
    int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) Bad(path, fmt::format("{} is out of range [{}, {}]", i, lo, hi));
    return i;
  }
  double Num(const nlohmann::json& v, const std::string& path, double lo, double hi, bool lo_open = false) const {
    if (!v.is_number()) Bad(path, fmt::format("expected a number, got {}", TypeName(v)));
    double d = v.get<double>();
    if (d < lo || d > hi || (lo_open && d == lo))
      Bad(path, fmt::format("{} is out of range {}{}, {}]", d, lo_open ? "(" : "[", lo, hi));
    return d;
  }
  // An axis is a scalar or a non-empty list of scalars.
  std::vector<std::pair<nlohmann::json, std::string>> Axis(const nlohmann::json& v, const std::string& path) const {
    std::vector<std::pair<nlohmann::json, std::string>> out;
    if (v.is_array()) {
      if (v.empty()) Bad(path, "empty axis (give at least one value)");
      for (size_t i = 0; i < v.size(); ++i) out.emplace_back(v[i], fmt::format("{}[{}]", path, i));
    } else if (v.is_null()) {
      Bad(path, "empty axis (give at least one value)");
    } else {
      out.emplace_back(v, path);
    }
    return out;
  }
};

// Parsed axis values (each list non-empty).
struct Axes {
  std::vector<std::optional<QType>> target_quant{std::nullopt};
  std::vector<int> k{0};  // 0: not given, each draft's DefaultK (decoders/decoder.h)
  std::vector<KPolicy> k_policy{KPolicy::Constant};
  std::vector<float> draft_p_min{0.8f};
  std::vector<DraftSpec> draft{DraftSpec{}};
  std::vector<std::optional<QType>> draft_quant;  // empty: axis not given (draft decides)
  std::vector<int> input_length{0};
  std::vector<int> max_new_tokens{64};
  std::vector<float> temperature{0.0f};
  std::vector<int> top_k{0};
  std::vector<float> top_p{1.0f};
  std::vector<uint64_t> seed{0};
  std::vector<int> threads{0};
  std::vector<KvType> kv_type{KvType::F32};
  std::vector<int> max_ngram, min_ngram;  // lookup drafts; empty: axis not given (draft decides)
  // Token trees (docs/trees.md), each value applied to every draft: tree_budget 0 and
  // branching "chain" leave the draft a chain; empty: axis not given (draft decides).
  std::vector<int> tree_budget;
  std::vector<std::vector<int>> branching;
  std::vector<AcceptanceSource> acceptance_source{AcceptanceSource{}};
  // The table-form settings given (decoders/settings.h), as their texts by name; a
  // setting not given keeps its default.
  std::map<std::string, std::vector<std::string>> table;
};

// The sweep's own settings (the decoders' are decoders/settings.h): target_quant,
// input_length, threads, with their ranges.
const std::vector<DecoderSetting>& SweepSettings();
// The entry of `name` among the decoder and the sweep settings.
const DecoderSetting& AnySetting(std::string_view name);
// Axis keys of a sweep or decoder map ("sampling" groups four of them), and those only a
// speculative decoder reads.
const std::set<std::string>& AxisKeys();
const std::set<std::string>& SpecAxes();

// Hugging Face generate() names accepted as aliases in a sweep or decoder map (the
// map is rewritten to the names above; giving both spellings is an error):
//   num_assistant_tokens: K          -> k: K
//   assistant_model: M               -> draft: model=M
//   prompt_lookup_num_tokens: K      -> draft: lookup, k: K
//   max_matching_ngram_size: N       -> max_ngram: N
inline const std::set<std::string> kHfAliases = {"num_assistant_tokens", "assistant_model", "prompt_lookup_num_tokens",
                                                 "max_matching_ngram_size"};
nlohmann::json ResolveHfAliases(const Ctx& c, const nlohmann::json& m, const std::string& path);

std::optional<QType> ParseQuantOrNone(const Ctx& c, const nlohmann::json& v, const std::string& path);
// Applies the axis keys present in `m` (a map) on top of `a`.
void ParseAxes(const Ctx& c, const nlohmann::json& m, const std::string& path, Axes& a, const std::string& models_dir);

}  // namespace specsweep::schema
