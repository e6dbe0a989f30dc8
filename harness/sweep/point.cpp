#include "harness/sweep/point.h"

#include <fmt/format.h>

#include "base/error.h"

using nlohmann::json;

namespace specsweep {

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

}  // namespace specsweep
