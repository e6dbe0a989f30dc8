#include "harness/sweep/experiment.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "base/build_info.h"
#include "base/error.h"
#include "harness/store/acceptance_trace.h"
#include "models/limits.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {

// ---------------------------------------------------------------------------------
// Point

static std::string QuantName(const std::optional<QType>& q) {
  return q ? std::string(QTypeName(*q)) : "none";
}

std::string Point::Key() const {
  std::string k = fmt::format("model={};tq={};dec={};in={};new={};temp={};topk={};topp={};seed={};thr={}",
                              model, QuantName(target_quant), DecoderKindName(decoder), input_length,
                              max_new_tokens, sampling.temperature, sampling.top_k, sampling.top_p,
                              sampling.seed, threads);
  if (kv_type != KvType::F32) k += fmt::format(";kv={}", KvTypeName(kv_type));  // keys of older files stay valid
  if (prompt_category != "free") k += ";cat=" + prompt_category;
  if (speculative()) {
    k += fmt::format(";k={};kp={};draft={}", this->k, KPolicyName(k_policy), draft.Label());
    if (k_policy == KPolicy::Threshold) k += fmt::format(";pmin={}", draft_p_min);
    if (acceptance_source.replayed()) k += ";acc=" + acceptance_source.Label();  // measured: keys as before
  }
  return k;
}

std::string Point::Name() const {
  std::string n = model;
  if (target_quant) n += fmt::format("@{}", QuantName(target_quant));
  n += fmt::format("/{}", DecoderKindName(decoder));
  if (speculative()) {
    n += fmt::format("/{}/k={}", draft.Label(), k);
    if (k_policy != KPolicy::Constant) n += fmt::format("/{}", KPolicyName(k_policy));
    if (k_policy == KPolicy::Threshold) n += fmt::format("/pmin={}", draft_p_min);
    if (acceptance_source.replayed()) n += "/acc=" + acceptance_source.Label();
  }
  if (input_length) n += fmt::format("/in={}", input_length);
  n += fmt::format("/new={}", max_new_tokens);
  if (!sampling.greedy())
    n += fmt::format("/t={}/topk={}/topp={}/seed={}", sampling.temperature, sampling.top_k,
                     sampling.top_p, sampling.seed);
  if (threads) n += fmt::format("/thr={}", threads);
  if (kv_type != KvType::F32) n += fmt::format("/kv={}", KvTypeName(kv_type));
  if (prompt_category != "free") n += "/" + prompt_category;
  return n;
}

Point Point::Baseline() const {
  Point b = *this;
  b.decoder = DecoderKind::Autoregressive;
  b.k = 0;
  b.k_policy = KPolicy::Constant;
  b.draft_p_min = 0.8f;
  b.draft = DraftSpec{};
  b.acceptance_source = AcceptanceSource{};
  return b;
}

DecoderOptions Point::Options() const {
  DecoderOptions o;
  o.kind = decoder;
  o.k = speculative() ? k : 1;
  o.k_policy = k_policy;
  o.draft_p_min = draft_p_min;
  o.draft = draft;
  o.acceptance_source = acceptance_source;
  o.max_new_tokens = max_new_tokens;
  // Fixed token counts make runs comparable: an early EOS would shorten some points.
  o.stop_at_eos = false;
  o.sampling = sampling;
  o.kv_type = kv_type;
  return o;
}

// Floats as the decimal they were written as (0.8, not 0.800000011920929).
static double Dec(float x) { return std::stod(fmt::format("{}", x)); }

json Point::ParamsJson() const {
  bool spec = speculative();
  return json{{"model", model},
              {"target_quant", QuantName(target_quant)},
              {"decoder", std::string(DecoderKindName(decoder))},
              {"k", spec ? k : 0},
              {"k_policy", spec ? std::string(KPolicyName(k_policy)) : "-"},
              {"draft_p_min", spec && k_policy == KPolicy::Threshold ? Dec(draft_p_min) : 0.0},
              {"draft", spec ? draft.Label() : "-"},
              {"draft_base", spec ? draft.BaseLabel() : "-"},
              {"draft_quant", spec ? QuantName(draft.quant) : "-"},
              {"acceptance_source", spec ? acceptance_source.Label() : "-"},
              {"input_length", input_length},
              {"max_new_tokens", max_new_tokens},
              {"temperature", Dec(sampling.temperature)},
              {"top_k", sampling.top_k},
              {"top_p", Dec(sampling.top_p)},
              {"seed", sampling.seed},
              {"threads", threads},
              {"kv_type", std::string(KvTypeName(kv_type))},
              {"max_ngram", spec && draft.lookup ? draft.max_ngram : 0},
              {"min_ngram", spec && draft.lookup ? draft.min_ngram : 0},
              {"prompt_category", prompt_category}};
}

Point PointFromParams(const json& p, std::string_view what) {
  auto get = [&](const char* key) -> const json& {
    if (!p.is_object() || !p.contains(key)) Fail("{}: {}: missing", what, key);
    return p.at(key);
  };
  try {
    Point pt;
    pt.model = get("model").get<std::string>();
    std::string tq = get("target_quant").get<std::string>();
    if (tq != "none") pt.target_quant = ParseQType(tq);
    pt.decoder = ParseDecoderKind(get("decoder").get<std::string>());
    pt.input_length = get("input_length").get<int>();
    pt.max_new_tokens = get("max_new_tokens").get<int>();
    pt.sampling.temperature = get("temperature").get<float>();
    pt.sampling.top_k = get("top_k").get<int>();
    pt.sampling.top_p = get("top_p").get<float>();
    pt.sampling.seed = get("seed").get<uint64_t>();
    pt.threads = get("threads").get<int>();
    if (p.contains("kv_type")) pt.kv_type = ParseKvType(p.at("kv_type").get<std::string>());  // absent before: f32
    if (p.contains("prompt_category")) pt.prompt_category = p.at("prompt_category").get<std::string>();
    if (pt.speculative()) {
      pt.k = get("k").get<int>();
      pt.k_policy = ParseKPolicy(get("k_policy").get<std::string>());
      if (pt.k_policy == KPolicy::Threshold) pt.draft_p_min = get("draft_p_min").get<float>();
      pt.draft = ParseDraftSpec(get("draft").get<std::string>(), "draft");
      // Absent before acceptance replay: measured. A trace is named, not loaded.
      if (p.contains("acceptance_source"))
        pt.acceptance_source = ParseAcceptanceSource(p.at("acceptance_source").get<std::string>(), "acceptance_source");
    }
    return pt;
  } catch (const json::exception& e) {
    Fail("{}: {}", what, e.what());
  } catch (const Error& e) {
    Fail("{}: {}", what, e.what());
  }
}

// ---------------------------------------------------------------------------------
// YAML -> JSON

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

// ---------------------------------------------------------------------------------
// Schema checking

namespace {

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

// Context for error messages: "FILE: key.path: what".
struct Ctx {
  std::string file;
  [[noreturn]] void Bad(const std::string& path, const std::string& what) const {
    throw Error(fmt::format("{}: {}: {}", file, path, what));
  }
  void CheckKeys(const json& obj, const std::string& path, const std::set<std::string>& allowed) const {
    for (auto& [k, v] : obj.items())
      if (!allowed.count(k)) {
        std::string list;
        for (auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        Bad(path.empty() ? k : path + "." + k, "unknown key (expected one of: " + list + ")");
      }
  }
  const json& Map(const json& v, const std::string& path) const {
    if (!v.is_object()) Bad(path, fmt::format("expected a map, got {}", TypeName(v)));
    return v;
  }
  std::string Str(const json& v, const std::string& path) const {
    if (!v.is_string()) Bad(path, fmt::format("expected a string, got {}", TypeName(v)));
    if (v.get<std::string>().empty()) Bad(path, "empty string");
    return v.get<std::string>();
  }
  int64_t Int(const json& v, const std::string& path, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) Bad(path, fmt::format("expected an integer, got {}", TypeName(v)));
    int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) Bad(path, fmt::format("{} is out of range [{}, {}]", i, lo, hi));
    return i;
  }
  double Num(const json& v, const std::string& path, double lo, double hi, bool lo_open = false) const {
    if (!v.is_number()) Bad(path, fmt::format("expected a number, got {}", TypeName(v)));
    double d = v.get<double>();
    if (d < lo || d > hi || (lo_open && d == lo))
      Bad(path, fmt::format("{} is out of range {}{}, {}]", d, lo_open ? "(" : "[", lo, hi));
    return d;
  }
  // An axis is a scalar or a non-empty list of scalars.
  std::vector<std::pair<json, std::string>> Axis(const json& v, const std::string& path) const {
    std::vector<std::pair<json, std::string>> out;
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
  std::vector<int> k{4};
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
  std::vector<AcceptanceSource> acceptance_source{AcceptanceSource{}};
};

const std::set<std::string> kSpecAxes = {"k", "k_policy", "draft_p_min", "draft", "draft_quant", "max_ngram",
                                         "min_ngram", "acceptance_source"};
const std::set<std::string> kAxisKeys = {"target_quant", "k", "k_policy", "draft_p_min", "draft",
                                         "draft_quant", "input_length", "max_new_tokens", "sampling",
                                         "threads", "kv_type", "max_ngram", "min_ngram", "acceptance_source"};

std::optional<QType> ParseQuantOrNone(const Ctx& c, const json& v, const std::string& path) {
  std::string s = c.Str(v, path);
  if (s == "none") return std::nullopt;
  try {
    return ParseQType(s);
  } catch (const Error& e) {
    c.Bad(path, fmt::format("unknown quantization type '{}' (expected none, f32, f16, bf16, q8_0, q4_0, "
                            "q4_g64, q4_g128)", s));
  }
}

bool ModelExists(const std::string& name, const std::string& models_dir) {
  if (fs::exists(name)) return true;
  std::string dir = ResolveModelsDir(models_dir);
  return !dir.empty() && fs::exists(fs::path(dir) / name);
}

// Applies the axis keys present in `m` (a map) on top of `a`.
void ParseAxes(const Ctx& c, const json& m, const std::string& path, Axes& a,
               const std::string& models_dir) {
  auto p = [&](const std::string& k) { return path.empty() ? k : path + "." + k; };
  for (auto& [key, v] : m.items()) {
    std::string kp = p(key);
    if (key == "sampling") {
      c.Map(v, kp);
      c.CheckKeys(v, kp, {"temperature", "top_k", "top_p", "seed"});
      for (auto& [sk, sv] : v.items()) {
        std::string sp = kp + "." + sk;
        if (sk == "temperature") {
          a.temperature.clear();
          for (auto& [x, xp] : c.Axis(sv, sp)) a.temperature.push_back(float(c.Num(x, xp, 0, 100)));
        } else if (sk == "top_k") {
          a.top_k.clear();
          for (auto& [x, xp] : c.Axis(sv, sp)) a.top_k.push_back(int(c.Int(x, xp, 0, 1 << 24)));
        } else if (sk == "top_p") {
          a.top_p.clear();
          for (auto& [x, xp] : c.Axis(sv, sp)) a.top_p.push_back(float(c.Num(x, xp, 0, 1, true)));
        } else if (sk == "seed") {
          a.seed.clear();
          for (auto& [x, xp] : c.Axis(sv, sp)) a.seed.push_back(uint64_t(c.Int(x, xp, 0, INT64_MAX)));
        }
      }
      continue;
    }
    auto axis = c.Axis(v, kp);
    if (key == "target_quant") {
      a.target_quant.clear();
      for (auto& [x, xp] : axis) a.target_quant.push_back(ParseQuantOrNone(c, x, xp));
    } else if (key == "draft_quant") {
      a.draft_quant.clear();
      for (auto& [x, xp] : axis) a.draft_quant.push_back(ParseQuantOrNone(c, x, xp));
    } else if (key == "k") {
      a.k.clear();
      for (auto& [x, xp] : axis) a.k.push_back(int(c.Int(x, xp, 1, 64)));
    } else if (key == "k_policy") {
      a.k_policy.clear();
      for (auto& [x, xp] : axis) {
        std::string s = c.Str(x, xp);
        try {
          a.k_policy.push_back(ParseKPolicy(s));
        } catch (const Error&) {
          c.Bad(xp, fmt::format("unknown k_policy '{}' (expected constant, heuristic, threshold, adaptive)", s));
        }
      }
    } else if (key == "max_ngram" || key == "min_ngram") {
      std::vector<int>& v = key == "max_ngram" ? a.max_ngram : a.min_ngram;
      v.clear();
      for (auto& [x, xp] : axis) v.push_back(int(c.Int(x, xp, 1, 64)));
    } else if (key == "draft_p_min") {
      a.draft_p_min.clear();
      for (auto& [x, xp] : axis) a.draft_p_min.push_back(float(c.Num(x, xp, 0, 1, true)));
    } else if (key == "draft") {
      a.draft.clear();
      for (auto& [x, xp] : axis) {
        DraftSpec d;
        if (x.is_string()) {
          d = ParseDraftSpec(c.Str(x, xp), c.file + ": " + xp);
        } else if (x.is_object()) {
          c.CheckKeys(x, xp, {"model", "layers", "quant", "lookup", "max_ngram", "min_ngram"});
          if (x.contains("model")) d.model = c.Str(x["model"], xp + ".model");
          if (x.contains("layers")) d.layers = int(c.Int(x["layers"], xp + ".layers", 1, 1024));
          if (x.contains("quant")) d.quant = ParseQuantOrNone(c, x["quant"], xp + ".quant");
          if (x.contains("lookup")) {
            if (!x["lookup"].is_boolean()) c.Bad(xp + ".lookup", fmt::format("expected true or false, got {}", TypeName(x["lookup"])));
            d.lookup = x["lookup"].get<bool>();
          }
          if (x.contains("max_ngram")) d.max_ngram = int(c.Int(x["max_ngram"], xp + ".max_ngram", 1, 64));
          if (x.contains("min_ngram")) d.min_ngram = int(c.Int(x["min_ngram"], xp + ".min_ngram", 1, 64));
          CheckDraftSpec(d, c.file + ": " + xp, d.lookup ? "lookup" : "draft");
        } else {
          c.Bad(xp, fmt::format("expected a string (self, q4_0, layers=N, model=NAME, lookup) or a map, got {}",
                                TypeName(x)));
        }
        if (!d.model.empty() && !ModelExists(d.model, models_dir))
          c.Bad(xp, fmt::format("unknown draft model '{}' (not a path nor a folder of the models "
                                "directory '{}')", d.model, ResolveModelsDir(models_dir)));
        a.draft.push_back(d);
      }
    } else if (key == "acceptance_source") {
      a.acceptance_source.clear();
      for (auto& [x, xp] : axis) {
        AcceptanceSource src = ParseAcceptanceSource(c.Str(x, xp), c.file + ": " + xp);
        if (src.kind == AcceptanceSource::Kind::Trace)
          src.traces = std::make_shared<const std::vector<AcceptanceTrace>>(
              LoadAcceptanceTraces(src.trace, c.file, c.file + ": " + xp));
        a.acceptance_source.push_back(std::move(src));
      }
    } else if (key == "input_length") {
      a.input_length.clear();
      for (auto& [x, xp] : axis) a.input_length.push_back(int(c.Int(x, xp, 1, 1 << 20)));
    } else if (key == "max_new_tokens") {
      a.max_new_tokens.clear();
      for (auto& [x, xp] : axis) a.max_new_tokens.push_back(int(c.Int(x, xp, 1, 1 << 20)));
    } else if (key == "threads") {
      a.threads.clear();
      for (auto& [x, xp] : axis) a.threads.push_back(int(c.Int(x, xp, 0, 4096)));
    } else if (key == "kv_type") {
      a.kv_type.clear();
      for (auto& [x, xp] : axis) {
        std::string s = c.Str(x, xp);
        try {
          a.kv_type.push_back(ParseKvType(s));
        } catch (const Error&) {
          c.Bad(xp, fmt::format("unknown KV cache type '{}' (expected f32, f16)", s));
        }
      }
    }
  }
}

std::string ResolvePath(const std::string& p, const std::string& exp_file) {
  if (fs::path(p).is_absolute()) return p;
  fs::path beside = fs::path(exp_file).parent_path() / p;
  if (fs::exists(beside)) return beside.lexically_normal().string();
  fs::path src = fs::path(SourceDir()) / p;
  if (fs::exists(src)) return src.string();
  fs::path src_exp = fs::path(SourceDir()) / "experiments" / p;
  if (fs::exists(src_exp)) return src_exp.string();
  return beside.lexically_normal().string();
}

}  // namespace

Experiment ParseExperiment(const json& doc, const std::string& file, const std::string& models_dir) {
  Ctx c{file};
  if (!doc.is_object()) Fail("{}: top level: expected a map, got {}", file, TypeName(doc));
  c.CheckKeys(doc, "", {"name", "description", "models", "prompts", "decoders", "sweep", "repetitions",
                        "warmup"});
  Experiment e;
  e.file = file;
  e.models_dir = models_dir;

  if (!doc.contains("name")) c.Bad("name", "missing");
  e.name = c.Str(doc["name"], "name");
  for (char ch : e.name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.'))
      c.Bad("name", fmt::format("'{}' is not usable as a file name (letters, digits, _ - . only)", e.name));
  if (doc.contains("description")) c.Str(doc["description"], "description");

  if (!doc.contains("models")) c.Bad("models", "missing");
  for (auto& [m, mp] : c.Axis(doc["models"], "models")) {
    std::string name = c.Str(m, mp);
    if (!ModelExists(name, models_dir))
      c.Bad(mp, fmt::format("unknown model '{}' (not a path nor a folder of the models directory '{}')",
                            name, ResolveModelsDir(models_dir)));
    e.models.push_back(name);
  }

  // Prompts: natural prompts from a file, or cuts of the passages for input_length.
  Axes global;
  std::string prompt_file = "prompts/tinystories.txt", passages = "prompts/passages.txt";
  e.prompts.count = 4;
  if (doc.contains("prompts")) {
    const json& p = c.Map(doc["prompts"], "prompts");
    c.CheckKeys(p, "prompts", {"file", "count", "passages", "input_lengths", "category"});
    if (p.contains("category")) {
      e.prompts.category = c.Str(p["category"], "prompts.category");
      if (e.prompts.category != "free" && e.prompts.category != "grounded")
        c.Bad("prompts.category", fmt::format("unknown category '{}' (expected free, grounded)", e.prompts.category));
    }
    if (p.contains("file")) prompt_file = c.Str(p["file"], "prompts.file");
    if (p.contains("passages")) passages = c.Str(p["passages"], "prompts.passages");
    if (p.contains("count")) e.prompts.count = int(c.Int(p["count"], "prompts.count", 1, 100000));
    if (p.contains("input_lengths")) {
      global.input_length.clear();
      for (auto& [x, xp] : c.Axis(p["input_lengths"], "prompts.input_lengths"))
        global.input_length.push_back(int(c.Int(x, xp, 1, 1 << 20)));
    }
  }
  e.prompts.file = ResolvePath(prompt_file, file);
  e.prompts.passages = ResolvePath(passages, file);

  if (doc.contains("repetitions")) e.repetitions = int(c.Int(doc["repetitions"], "repetitions", 1, 1000));
  if (doc.contains("warmup")) e.warmup = int(c.Int(doc["warmup"], "warmup", 0, 1000));

  if (doc.contains("sweep")) {
    const json& s = c.Map(doc["sweep"], "sweep");
    c.CheckKeys(s, "sweep", kAxisKeys);
    if (s.contains("input_length") && doc["prompts"].is_object() && doc["prompts"].contains("input_lengths"))
      c.Bad("sweep.input_length", "given twice (also prompts.input_lengths)");
    ParseAxes(c, s, "sweep", global, models_dir);
  }
  bool uses_passages = false;

  if (!doc.contains("decoders")) c.Bad("decoders", "missing");
  std::vector<Point> spec, ar;
  for (auto& [d, dp] : c.Axis(doc["decoders"], "decoders")) {
    Axes a = global;
    std::string kind_name;
    if (d.is_string()) {
      kind_name = c.Str(d, dp);
    } else if (d.is_object()) {
      if (!d.contains("decoder")) c.Bad(dp + ".decoder", "missing");
      std::set<std::string> allowed = kAxisKeys;
      allowed.insert("decoder");
      c.CheckKeys(d, dp, allowed);
      kind_name = c.Str(d["decoder"], dp + ".decoder");
    } else {
      c.Bad(dp, fmt::format("expected a decoder name or a map, got {}", TypeName(d)));
    }
    DecoderKind kind;
    try {
      kind = ParseDecoderKind(kind_name);
    } catch (const Error&) {
      c.Bad(d.is_object() ? dp + ".decoder" : dp,
            fmt::format("unknown decoder '{}' (expected ar, speculative, or its aliases assisted, self-spec)",
                        kind_name));
    }
    if (d.is_object()) {
      if (kind == DecoderKind::Autoregressive)
        for (auto& [k, v] : d.items())
          if (kSpecAxes.count(k)) c.Bad(dp + "." + k, "not used by the autoregressive decoder");
      json overrides = d;
      overrides.erase("decoder");
      ParseAxes(c, overrides, dp, a, models_dir);
    }
    bool is_spec = kind != DecoderKind::Autoregressive;
    // Non-speculative decoders collapse the draft axes to one value.
    std::vector<int> ks = is_spec ? a.k : std::vector<int>{0};
    std::vector<KPolicy> kps = is_spec ? a.k_policy : std::vector<KPolicy>{KPolicy::Constant};
    std::vector<DraftSpec> drafts = is_spec ? a.draft : std::vector<DraftSpec>{DraftSpec{}};
    std::vector<AcceptanceSource> sources = is_spec ? a.acceptance_source : std::vector<AcceptanceSource>{{}};
    std::vector<std::optional<QType>> dqs = a.draft_quant;
    if (!is_spec || dqs.empty()) dqs = {std::nullopt};
    // Where the drafts of this entry were given, for errors.
    const std::string draft_path = d.is_object() && d.contains("draft") ? dp + ".draft"
                                   : doc.contains("sweep") && doc["sweep"].contains("draft") ? "sweep.draft"
                                                                                            : dp;
    for (size_t i = 0; i < drafts.size() && is_spec && !a.draft_quant.empty(); ++i)
      if (drafts[i].quant)
        c.Bad(draft_path, fmt::format("'{}' sets a quant type and draft_quant is swept too; use one of them",
                                      drafts[i].Label()));
    // Concrete drafts: lookup drafts take the n-gram axes (pairs with min > max are
    // skipped), model drafts the draft_quant axis; an alias (assisted, self-spec) then
    // settles its kind of draft (self-spec's default q4_0 made explicit so the label
    // names what is measured).
    std::vector<DraftSpec> concrete;
    for (auto& dr : drafts) {
      if (dr.lookup) {
        for (KPolicy kp : kps)
          if (kp == KPolicy::Threshold || kp == KPolicy::Adaptive)
            c.Bad(d.is_object() && d.contains("k_policy") ? dp + ".k_policy" : "sweep.k_policy",
                  fmt::format("{} reads the draft's probabilities, which a lookup draft does not have "
                              "(use constant or heuristic)", KPolicyName(kp)));
        const size_t before = concrete.size();
        for (int mx : a.max_ngram.empty() ? std::vector<int>{dr.max_ngram} : a.max_ngram)
          for (int mn : a.min_ngram.empty() ? std::vector<int>{dr.min_ngram} : a.min_ngram) {
            if (mn > mx) continue;
            DraftSpec d = dr;
            d.max_ngram = mx;
            d.min_ngram = mn;
            concrete.push_back(d);
          }
        if (concrete.size() == before)
          c.Bad(d.is_object() && d.contains("min_ngram") ? dp + ".min_ngram" : "sweep.min_ngram",
                "every min_ngram is larger than every max_ngram: no lookup draft left");
        continue;
      }
      for (auto& dq : dqs) {
        DraftSpec d = dr;
        if (dq) d.quant = dq;
        concrete.push_back(d);
      }
    }
    if (is_spec)
      for (DraftSpec& dr : concrete) {
        const std::string label = dr.Label();
        ApplyDecoderAlias(kind_name, dr, [&](std::string_view part) {
          return fmt::format("{}: {} '{}' ({})", c.file, draft_path, label, part);
        });
        if (dr.IsSelf())
          c.Bad(draft_path, fmt::format("{} needs a draft (layers=N, a quant type, model=NAME or lookup)", kind_name));
      }
    for (auto& model : e.models)
      for (auto& tq : a.target_quant)
        for (int in : a.input_length)
          for (int mnt : a.max_new_tokens)
            for (float temp : a.temperature)
              for (int topk : a.top_k)
                for (float topp : a.top_p)
                  for (uint64_t seed : a.seed)
                    for (int thr : a.threads)
                      for (KvType kv : a.kv_type)
                        for (int k : ks)
                          for (KPolicy kp : kps)
                            for (float pmin : a.draft_p_min)
                              for (auto& dr : concrete)
                                for (auto& src : sources) {
                                  // A model drafting for itself measures nothing; skipping
                                  // it lets one draft list serve every target (e.g. two
                                  // models drafting for each other).
                                  if (is_spec && !dr.model.empty() && dr.model == model) continue;
                                  Point pt;
                                  pt.model = model;
                                  pt.target_quant = tq;
                                  pt.decoder = kind;
                                  pt.input_length = in;
                                  pt.max_new_tokens = mnt;
                                  pt.sampling.temperature = temp;
                                  if (temp > 0) {
                                    pt.sampling.top_k = topk;
                                    pt.sampling.top_p = topp;
                                    pt.sampling.seed = seed;
                                  }
                                  pt.threads = thr;
                                  pt.kv_type = kv;
                                  pt.prompt_category = e.prompts.category;
                                  if (is_spec) {
                                    pt.k = k;
                                    pt.k_policy = kp;
                                    if (kp == KPolicy::Threshold) pt.draft_p_min = pmin;
                                    pt.draft = dr;
                                    pt.acceptance_source = src;
                                  }
                                  (is_spec ? spec : ar).push_back(pt);
                                }
  }
  bool uses_file = false;
  for (auto* v : {&ar, &spec})
    for (auto& pt : *v) (pt.input_length > 0 ? uses_passages : uses_file) = true;
  if (uses_passages && !fs::exists(e.prompts.passages))
    c.Bad("prompts.passages", fmt::format("'{}' does not exist", e.prompts.passages));
  if (uses_file && !fs::exists(e.prompts.file))
    c.Bad("prompts.file", fmt::format("'{}' does not exist", e.prompts.file));

  // Order: each baseline (explicit AR point or added) followed by its speculative points,
  // groups in order of first appearance; duplicates dropped.
  std::vector<std::string> group_order;
  std::map<std::string, std::vector<Point>> groups;
  std::set<std::string> seen;
  auto add = [&](const Point& pt, const std::string& group) {
    if (!seen.insert(pt.Key()).second) return;
    if (!groups.count(group)) group_order.push_back(group);
    groups[group].push_back(pt);
  };
  for (auto& pt : ar) add(pt, pt.Key());
  for (auto& pt : spec) {
    Point b = pt.Baseline();
    add(b, b.Key());
    add(pt, b.Key());
  }
  for (auto& g : group_order)
    for (auto& pt : groups[g]) e.points.push_back(pt);
  return e;
}

Experiment LoadExperiment(const std::string& path, const std::string& models_dir) {
  if (!fs::exists(path)) Fail("{}: cannot open: no such file", path);
  std::string ext = fs::path(path).extension().string();
  json doc;
  if (ext == ".json") {
    std::ifstream f(path);
    try {
      doc = json::parse(f);
    } catch (const json::exception& e) {
      Fail("{}: json: {}", path, e.what());
    }
  } else if (ext == ".yaml" || ext == ".yml") {
    doc = ReadYamlAsJson(path);
  } else {
    Fail("{}: unknown experiment file type '{}' (expected .yaml, .yml or .json)", path, ext);
  }
  return ParseExperiment(doc, path, models_dir);
}

}  // namespace specsweep
