#include "harness/sweep/schema.h"

#include <filesystem>

#include "base/build_info.h"
#include "decoders/draft_spec.h"
#include "harness/sweep/experiment_files.h"
#include "models/loader.h"

namespace fs = std::filesystem;

namespace specsweep::schema {

using nlohmann::json;

const char* TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    case json::value_t::array: return "a list";
    case json::value_t::object: return "a map";
    default: return "an unsupported value";
  }
}

std::optional<QType> ParseQuantOrNone(const Ctx& c, const json& v, const std::string& path) {
  std::string s = c.Str(v, path);
  if (s == "none") return std::nullopt;
  QType t;
  try {
    t = ParseQType(s);
  } catch (const Error& e) {
    c.Bad(path, fmt::format("unknown quantization type '{}' (expected none, f32, f16, bf16, q8_0, q4_0, "
                            "q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q4_g64, q4_g128, q4_k, q5_k, q6_k)",
                            s));
  }
  if (!CanQuantizeTo(t)) c.Bad(path, LoadOnlyReason(t));
  return t;
}

json ResolveHfAliases(const Ctx& c, const json& m, const std::string& path) {
  if (!m.is_object()) return m;
  auto p = [&](const std::string& k) { return path.empty() ? k : path + "." + k; };
  json out = m;
  auto set = [&](const std::string& alias, const std::string& key, const json& v) {
    if (out.contains(key))
      c.Bad(p(alias), fmt::format("Hugging Face name for {}, which is given too; use one of them", key));
    out[key] = v;
  };
  if (m.contains("num_assistant_tokens")) set("num_assistant_tokens", "k", m["num_assistant_tokens"]);
  if (m.contains("max_matching_ngram_size")) set("max_matching_ngram_size", "max_ngram", m["max_matching_ngram_size"]);
  if (m.contains("assistant_model")) {
    json drafts = json::array();
    for (auto& [x, xp] : c.Axis(m["assistant_model"], p("assistant_model"))) drafts.push_back("model=" + c.Str(x, xp));
    set("assistant_model", "draft", drafts);
  }
  if (m.contains("prompt_lookup_num_tokens")) {
    if (m.contains("assistant_model"))
      c.Bad(p("prompt_lookup_num_tokens"), "a lookup draft and assistant_model exclude each other");
    set("prompt_lookup_num_tokens", "k", m["prompt_lookup_num_tokens"]);
    set("prompt_lookup_num_tokens", "draft", "lookup");
  }
  for (const auto& alias : kHfAliases) out.erase(alias);
  return out;
}

const std::vector<DecoderSetting>& SweepSettings() {
  static const std::vector<DecoderSetting> table = {
      SettingDef("target_quant"),
      SettingDef("input_length").Int(1, 1 << 20),
      SettingDef("threads").Int(0, 4096),
  };
  return table;
}

const DecoderSetting& AnySetting(std::string_view name) {
  for (const DecoderSetting& s : SweepSettings())
    if (s.name == name) return s;
  return Setting(name);
}

const std::set<std::string>& AxisKeys() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> k;
    for (const DecoderSetting& s : DecoderSettings()) k.insert(std::string(s.group.empty() ? s.name : s.group));
    for (const DecoderSetting& s : SweepSettings()) k.insert(std::string(s.name));
    return k;
  }();
  return keys;
}

const std::set<std::string>& SpecAxes() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> k;
    for (const DecoderSetting& s : DecoderSettings())
      if (s.speculative_only) k.insert(std::string(s.name));
    return k;
  }();
  return keys;
}

const std::set<std::string>& TopLevelKeys() {
  static const std::set<std::string> keys = {"name",  "description", "models", "prompts",  "decoders",
                                             "sweep", "repetitions", "warmup", "template", "max_points"};
  return keys;
}

std::string MisplacedKeyPath(const std::string& key, const std::string& path) {
  const std::string head = path.substr(0, path.find('.'));  // "sweep.sampling" -> "sweep"
  const std::string axes = head == "sweep" || head.starts_with("decoders") ? head : "sweep";
  for (const DecoderSetting& s : DecoderSettings())
    if (s.name == key && !s.group.empty()) return fmt::format("{}.{}.{}", axes, s.group, key);
  if (AxisKeys().count(key)) return axes + "." + key;
  return !path.empty() && TopLevelKeys().count(key) ? "top-level " + key : "";
}

namespace {

using AxisValues = std::vector<std::pair<json, std::string>>;

// An integer or number axis in the range of its setting.
template <class T>
void IntAxis(const Ctx& c, const AxisValues& axis, const DecoderSetting& s, std::vector<T>& out) {
  out.clear();
  for (auto& [x, xp] : axis) out.push_back(T(c.Int(x, xp, s.range.IntLo(), s.range.IntHi())));
}
void NumberAxis(const Ctx& c, const AxisValues& axis, const DecoderSetting& s, std::vector<float>& out) {
  out.clear();
  for (auto& [x, xp] : axis) out.push_back(float(c.Num(x, xp, s.range.lo, s.range.hi, s.range.lo_open)));
}

void ParseSamplingAxes(const Ctx& c, const json& v, const std::string& kp, Axes& a) {
  c.Map(v, kp);
  c.CheckKeys(v, kp, {"temperature", "top_k", "top_p", "seed"});
  for (auto& [sk, sv] : v.items()) {
    const AxisValues axis = c.Axis(sv, kp + "." + sk);
    if (sk == "temperature")
      NumberAxis(c, axis, Setting(sk), a.temperature);
    else if (sk == "top_k")
      IntAxis(c, axis, Setting(sk), a.top_k);
    else if (sk == "top_p")
      NumberAxis(c, axis, Setting(sk), a.top_p);
    else if (sk == "seed")
      IntAxis(c, axis, Setting(sk), a.seed);
  }
}

// The integer and number axes; false for another key.
bool ParseNumberAxis(const Ctx& c, const std::string& key, const AxisValues& axis, Axes& a) {
  const std::map<std::string, std::vector<int>*> ints = {{"k", &a.k},
                                                         {"max_ngram", &a.max_ngram},
                                                         {"min_ngram", &a.min_ngram},
                                                         {"tree_budget", &a.tree_budget},
                                                         {"input_length", &a.input_length},
                                                         {"max_new_tokens", &a.max_new_tokens},
                                                         {"threads", &a.threads}};
  if (auto it = ints.find(key); it != ints.end()) {
    IntAxis(c, axis, AnySetting(key), *it->second);
    return true;
  }
  if (key != "draft_p_min") return false;
  NumberAxis(c, axis, Setting(key), a.draft_p_min);
  return true;
}

// An enum axis read by `parse`; "unknown <noun> 'x' (expected <names>)" for another word.
template <class T, class Parse>
void EnumAxis(const Ctx& c, const AxisValues& axis, std::vector<T>& out, Parse parse, const char* noun,
              const char* names) {
  out.clear();
  for (auto& [x, xp] : axis) {
    std::string s = c.Str(x, xp);
    try {
      out.push_back(parse(s));
    } catch (const Error&) {
      c.Bad(xp, fmt::format("unknown {} '{}' (expected {})", noun, s, names));
    }
  }
}

// A draft given as a map of its parts.
DraftSpec DraftFromMap(const Ctx& c, const json& x, const std::string& xp) {
  c.CheckKeys(x, xp, {"model", "layers", "quant", "lookup", "max_ngram", "min_ngram"});
  DraftParts d;
  if (x.contains("model")) d.model = c.Str(x["model"], xp + ".model");
  if (x.contains("layers")) d.layers = int(c.Int(x["layers"], xp + ".layers", 1, 1024));
  if (x.contains("quant")) d.quant = ParseQuantOrNone(c, x["quant"], xp + ".quant");
  if (x.contains("lookup")) {
    if (!x["lookup"].is_boolean())
      c.Bad(xp + ".lookup", fmt::format("expected true or false, got {}", TypeName(x["lookup"])));
    d.lookup = x["lookup"].get<bool>();
  }
  const DecoderSetting& ngram = Setting("max_ngram");
  if (x.contains("max_ngram"))
    d.max_ngram = int(c.Int(x["max_ngram"], xp + ".max_ngram", ngram.range.IntLo(), ngram.range.IntHi()));
  if (x.contains("min_ngram"))
    d.min_ngram = int(c.Int(x["min_ngram"], xp + ".min_ngram", ngram.range.IntLo(), ngram.range.IntHi()));
  return DraftSpec::FromParts(d, c.file + ": " + xp, d.lookup ? "lookup" : "draft");
}

// One value of the draft axis: its text or a map of its parts; a draft model must exist.
DraftSpec ParseDraft(const Ctx& c, const json& x, const std::string& xp, const std::string& models_dir) {
  DraftSpec d;
  if (x.is_string()) {
    d = ParseDraftSpec(c.Str(x, xp), c.file + ": " + xp);
    if (const RestDraft* r = d.get<RestDraft>())
      d = DraftSpec::Make(RestDraft{ResolveExperimentFile(r->corpus, c.file, models_dir, xp)}, d.tree());
  } else if (x.is_object()) {
    d = DraftFromMap(c, x, xp);
  } else {
    c.Bad(xp,
          fmt::format("expected a string (self, q4_0, layers=N, model=NAME, lookup) or a map, got {}", TypeName(x)));
  }
  return d;  // a draft model is looked for once the plan is known (measure/model_store.h)
}

// The axes written as text; false for another key.
bool ParseTextAxis(const Ctx& c, const std::string& key, const AxisValues& axis, Axes& a,
                   const std::string& models_dir) {
  auto each = [&](auto& out, auto read) {
    out.clear();
    for (auto& [x, xp] : axis) out.push_back(read(x, xp));
  };
  if (key == "target_quant" || key == "draft_quant") {
    each(key == "target_quant" ? a.target_quant : a.draft_quant,
         [&](const json& x, const std::string& xp) { return ParseQuantOrNone(c, x, xp); });
  } else if (key == "k_policy") {
    EnumAxis(
        c, axis, a.k_policy, [](const std::string& s) { return ParseKPolicy(s); }, "k_policy",
        "constant, heuristic, threshold, adaptive");
  } else if (key == "kv_type") {
    EnumAxis(
        c, axis, a.kv_type, [](const std::string& s) { return ParseKvType(s); }, "KV cache type", "f32, f16");
  } else if (key == "draft") {
    each(a.draft, [&](const json& x, const std::string& xp) { return ParseDraft(c, x, xp, models_dir); });
  } else if (key == "branching") {
    each(a.branching, [&](const json& x, const std::string& xp) {
      const std::string s = c.Str(x, xp);
      return s == "chain" ? std::vector<int>{} : ParseDraftSpec("self+branching=" + s, c.file + ": " + xp).branching();
    });
  } else if (key == "acceptance_source") {  // a trace's records are read by the measuring stage
    each(a.acceptance_source, [&](const json& x, const std::string& xp) {
      AcceptanceSource s = ParseAcceptanceSource(c.Str(x, xp), c.file + ": " + xp);
      if (s.kind == AcceptanceSource::Kind::Trace) ResolveTraceRef(s.trace, c.file, models_dir, xp);  // it exists
      return s;
    });
  } else {
    return false;
  }
  return true;
}

// A table-form setting (decoders/settings.h): its texts, each checked by its parser. An
// integer setting (batch) is written as an integer in the files, in its range.
void ParseTableAxis(const Ctx& c, const DecoderSetting& s, const AxisValues& axis, Axes& a) {
  std::vector<std::string>& out = a.table[std::string(s.name)];
  out.clear();
  for (auto& [x, xp] : axis) {
    DecoderOptions scratch;
    out.push_back(s.kind == DecoderSetting::Kind::Int ? std::to_string(c.Int(x, xp, s.range.IntLo(), s.range.IntHi()))
                                                      : c.Str(x, xp));
    s.parse(scratch, out.back(), c.file + ": " + xp);
  }
}

}  // namespace

void ParseAxes(const Ctx& c, const json& m, const std::string& path, Axes& a, const std::string& models_dir) {
  auto p = [&](const std::string& k) { return path.empty() ? k : path + "." + k; };
  for (auto& [key, v] : m.items()) {
    const std::string kp = p(key);
    if (key == "sampling") {
      ParseSamplingAxes(c, v, kp, a);
      continue;
    }
    const AxisValues axis = c.Axis(v, kp);
    if (ParseNumberAxis(c, key, axis, a) || ParseTextAxis(c, key, axis, a, models_dir)) continue;
    for (const DecoderSetting& s : DecoderSettings())
      if (s.form == DecoderSetting::Form::Table && s.name == key) ParseTableAxis(c, s, axis, a);
  }
}

}  // namespace specsweep::schema
