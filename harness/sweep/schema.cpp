#include "harness/sweep/schema.h"

#include <filesystem>

#include "base/build_info.h"
#include "decoders/draft_spec.h"
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
                            "q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q4_g64, q4_g128, q4_k, q5_k, q6_k)", s));
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
    for (auto& [x, xp] : c.Axis(m["assistant_model"], p("assistant_model")))
      drafts.push_back("model=" + c.Str(x, xp));
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

bool ModelExists(const std::string& name, const std::string& models_dir) {
  if (fs::exists(name)) return true;
  std::string dir = ResolveModelsDir(models_dir);
  return !dir.empty() && fs::exists(fs::path(dir) / name);
}

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
          if (d.rest) d.corpus = ResolvePath(d.corpus, c.file, models_dir);  // beside the experiment file first
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
          c.Bad(xp, fmt::format("unknown draft model '{}': {}", d.model, WhyModelNotFound(d.model, models_dir)));
        a.draft.push_back(d);
      }
    } else if (key == "tree_budget") {
      a.tree_budget.clear();
      for (auto& [x, xp] : axis) a.tree_budget.push_back(int(c.Int(x, xp, 0, 1024)));
    } else if (key == "branching") {
      a.branching.clear();
      for (auto& [x, xp] : axis) {
        const std::string s = c.Str(x, xp);
        a.branching.push_back(s == "chain" ? std::vector<int>{}
                                           : ParseDraftSpec("self+branching=" + s, c.file + ": " + xp).branching);
      }
    } else if (key == "acceptance_source") {
      a.acceptance_source.clear();
      for (auto& [x, xp] : axis) {
        AcceptanceSource src = ParseAcceptanceSource(c.Str(x, xp), c.file + ": " + xp);
        // A trace's records are read by the measuring stage (ModelCache::Options).
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

std::string ResolvePath(const std::string& p, const std::string& exp_file, const std::string& models_dir) {
  if (fs::path(p).is_absolute()) return p;
  fs::path beside = fs::path(exp_file).parent_path() / p;
  if (fs::exists(beside)) return beside.lexically_normal().string();
  fs::path src = fs::path(SourceDir()) / p;
  if (fs::exists(src)) return src.string();
  fs::path src_exp = fs::path(SourceDir()) / "experiments" / p;
  if (fs::exists(src_exp)) return src_exp.string();
  fs::path shared = fs::path(ResolveModelsDir(models_dir)).parent_path() / p;
  if (fs::exists(shared)) return shared.lexically_normal().string();
  return beside.lexically_normal().string();
}

}  // namespace specsweep::schema
