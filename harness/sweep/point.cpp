#include "harness/sweep/point.h"

#include <filesystem>

#include <fmt/format.h>

#include "base/error.h"
#include "decoders/settings.h"

using nlohmann::json;

namespace specsweep {
namespace {

std::string QuantName(const std::optional<QType>& q) { return q ? std::string(QTypeName(*q)) : "none"; }

// Floats as the decimal they were written as (0.8, not 0.800000011920929).
double Dec(float x) { return std::stod(fmt::format("{}", x)); }

// The table-form settings (decoders/settings.h) that apply to `p` and differ from their
// default, as (name, text): only these enter keys, names and params, so records written
// before a setting existed keep their keys.
std::vector<std::pair<std::string_view, std::string>> TableSettings(const Point& p) {
  static const DecoderOptions defaults;
  std::vector<std::pair<std::string_view, std::string>> out;
  for (const DecoderSetting& s : DecoderSettings()) {
    if (s.form != DecoderSetting::Form::Table || (s.speculative_only && !p.speculative())) continue;
    if (std::string t = s.text(p.options); t != s.text(defaults)) out.emplace_back(s.name, std::move(t));
  }
  return out;
}

// A path as its file name. The files a point reads besides its models (a REST corpus, a
// replayed trace) enter its key by name, never by folder: their content (sha256) is the
// record's identity, as a model's is (measure/measure.cpp, store/identity.cpp), so the
// same files give the same key from any folder and an edited file is another measurement.
std::string FileName(const std::string& path) { return std::filesystem::path(path).filename().string(); }

std::string DraftKeyLabel(const DraftSpec& d) {
  std::string label = d.Label();
  if (const RestDraft* r = d.get<RestDraft>())
    if (const size_t at = label.find("corpus=" + r->corpus); at != std::string::npos)
      label.replace(at + 7, r->corpus.size(), FileName(r->corpus));
  return label;
}

std::string AcceptanceKeyLabel(const AcceptanceSource& a) {
  if (a.kind != AcceptanceSource::Kind::Trace) return a.Label();
  const size_t colon = a.trace.find(':');  // FILE[:POINT], as LoadAcceptanceTrace splits it
  return "trace=" + FileName(a.trace.substr(0, colon)) + (colon == std::string::npos ? "" : a.trace.substr(colon));
}

}  // namespace

std::string Point::Key() const {
  const DecoderOptions& o = options;
  std::string k = fmt::format("model={};tq={};dec={};in={};new={};temp={};topk={};topp={};seed={};thr={}", model,
                              QuantName(target_quant), DecoderKindName(o.kind), input_length, o.max_new_tokens,
                              o.sampling.temperature, o.sampling.top_k, o.sampling.top_p, o.sampling.seed, threads);
  if (o.kv_type != KvType::F32) k += fmt::format(";kv={}", KvTypeName(o.kv_type));  // keys of older files stay valid
  if (prompt_category != "free") k += ";cat=" + prompt_category;
  if (speculative()) {
    k += fmt::format(";k={};kp={};draft={}", o.k, KPolicyName(o.k_policy), DraftKeyLabel(o.draft));
    if (o.k_policy == KPolicy::Threshold) k += fmt::format(";pmin={}", o.draft_p_min);
    if (o.acceptance_source.replayed()) k += ";acc=" + AcceptanceKeyLabel(o.acceptance_source);  // measured: as before
  }
  for (const auto& [name, text] : TableSettings(*this)) k += fmt::format(";{}={}", name, text);
  if (!part.empty()) k += ";part=" + part;  // last: the report strips it to merge a method's parts
  return k;
}

std::string Point::Name() const {
  const DecoderOptions& o = options;
  std::string n = model;
  if (target_quant) n += fmt::format("@{}", QuantName(target_quant));
  n += fmt::format("/{}", DecoderKindName(o.kind));
  if (speculative()) {
    n += fmt::format("/{}/k={}", o.draft.Label(), o.k);
    if (o.k_policy != KPolicy::Constant) n += fmt::format("/{}", KPolicyName(o.k_policy));
    if (o.k_policy == KPolicy::Threshold) n += fmt::format("/pmin={}", o.draft_p_min);
    if (o.acceptance_source.replayed()) n += "/acc=" + o.acceptance_source.Label();
  }
  if (input_length) n += fmt::format("/in={}", input_length);
  n += fmt::format("/new={}", o.max_new_tokens);
  if (!o.sampling.greedy())
    n += fmt::format("/t={}/topk={}/topp={}/seed={}", o.sampling.temperature, o.sampling.top_k, o.sampling.top_p,
                     o.sampling.seed);
  if (threads) n += fmt::format("/thr={}", threads);
  if (o.kv_type != KvType::F32) n += fmt::format("/kv={}", KvTypeName(o.kv_type));
  if (prompt_category != "free") n += "/" + prompt_category;
  for (const auto& [name, text] : TableSettings(*this)) n += fmt::format("/{}={}", name, text);
  if (!part.empty()) n += "/part=" + part;
  return n;
}

Point Point::Baseline() const {
  Point b = *this;
  b.options = Defaults();
  b.options.max_new_tokens = options.max_new_tokens;
  b.options.kv_type = options.kv_type;
  b.options.sampling = options.sampling;
  for (const DecoderSetting& s : DecoderSettings())  // the table's settings of every decoder
    if (s.form == DecoderSetting::Form::Table && !s.speculative_only) s.parse(b.options, s.text(options), s.name);
  return b;
}

DecoderOptions Point::Options() const {
  DecoderOptions o = options;
  o.k = speculative() ? options.k : 1;
  o.stop_at_eos = false;
  return o;
}

json Point::ParamsJson() const {
  const DecoderOptions& o = options;
  const bool spec = speculative();
  const LookupDraft* lookup = o.draft.get<LookupDraft>();
  json j{{"model", model},
         {"target_quant", QuantName(target_quant)},
         {"decoder", std::string(DecoderKindName(o.kind))},
         {"k", spec ? o.k : 0},
         {"k_policy", spec ? std::string(KPolicyName(o.k_policy)) : "-"},
         {"draft_p_min", spec && o.k_policy == KPolicy::Threshold ? Dec(o.draft_p_min) : 0.0},
         {"draft", spec ? o.draft.Label() : "-"},
         {"draft_base", spec ? o.draft.BaseLabel() : "-"},
         {"draft_quant", spec ? QuantName(o.draft.quant()) : "-"},
         {"acceptance_source", spec ? o.acceptance_source.Label() : "-"},
         {"input_length", input_length},
         {"max_new_tokens", o.max_new_tokens},
         {"temperature", Dec(o.sampling.temperature)},
         {"top_k", o.sampling.top_k},
         {"top_p", Dec(o.sampling.top_p)},
         {"seed", o.sampling.seed},
         {"threads", threads},
         {"kv_type", std::string(KvTypeName(o.kv_type))},
         {"max_ngram", spec && lookup ? lookup->max_ngram : 0},
         {"min_ngram", spec && lookup ? lookup->min_ngram : 0},
         {"prompt_category", prompt_category}};
  for (const auto& [name, text] : TableSettings(*this)) j[std::string(name)] = text;
  if (!part.empty()) j["part"] = part;  // absent otherwise: records of other prompts keep their fields
  return j;
}

namespace {

// The speculative fields of params into `o`.
void SpeculativeFromParams(const json& p, DecoderOptions& o, const std::function<const json&(const char*)>& get) {
  o.k = get("k").get<int>();
  o.k_policy = ParseKPolicy(get("k_policy").get<std::string>());
  if (o.k_policy == KPolicy::Threshold) o.draft_p_min = get("draft_p_min").get<float>();
  o.draft = ParseDraftSpec(get("draft").get<std::string>(), "draft");
  // Absent before acceptance replay: measured. A trace is named, not loaded.
  if (p.contains("acceptance_source"))
    o.acceptance_source = ParseAcceptanceSource(p.at("acceptance_source").get<std::string>(), "acceptance_source");
}

}  // namespace

Point PointFromParams(const json& p, std::string_view what) {
  auto get = [&](const char* key) -> const json& {
    if (!p.is_object() || !p.contains(key)) Fail("{}: {}: missing", what, key);
    return p.at(key);
  };
  try {
    Point pt;
    DecoderOptions& o = pt.options;
    pt.model = get("model").get<std::string>();
    std::string tq = get("target_quant").get<std::string>();
    if (tq != "none") pt.target_quant = ParseQType(tq);
    o.kind = ParseDecoderKind(get("decoder").get<std::string>());
    pt.input_length = get("input_length").get<int>();
    o.max_new_tokens = get("max_new_tokens").get<int>();
    o.sampling.temperature = get("temperature").get<float>();
    o.sampling.top_k = get("top_k").get<int>();
    o.sampling.top_p = get("top_p").get<float>();
    o.sampling.seed = get("seed").get<uint64_t>();
    pt.threads = get("threads").get<int>();
    if (p.contains("kv_type")) o.kv_type = ParseKvType(p.at("kv_type").get<std::string>());  // absent before: f32
    if (p.contains("prompt_category")) pt.prompt_category = p.at("prompt_category").get<std::string>();
    if (p.contains("part")) pt.part = p.at("part").get<std::string>();
    if (pt.speculative()) SpeculativeFromParams(p, o, get);
    for (const DecoderSetting& s : DecoderSettings())  // absent: the default
      if (s.form == DecoderSetting::Form::Table && p.contains(s.name))
        s.parse(o, p.at(s.name).get<std::string>(), s.name);
    return pt;
  } catch (const json::exception& e) {
    Fail("{}: {}", what, e.what());
  } catch (const Error& e) {
    Fail("{}: {}", what, e.what());
  }
}

}  // namespace specsweep
