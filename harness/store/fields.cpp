// Fields of flat result records as the report reads them: text, numbers, K labels,
// acceptance captions, and the parameter fields in their fixed order.
#include "harness/store/results.h"

#include <cmath>

#include <fmt/format.h>

#include "base/error.h"

using nlohmann::json;

namespace specsweep {

std::string FieldText(const json& rec, const std::string& field) {
  if (!rec.contains(field)) return "";
  const json& v = rec[field];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "";
  return v.dump();
}

std::string KernelsLabel(const json& rec) {
  const std::string isa = FieldText(rec, "kernel_isa");
  if (!rec.contains("kernels") || !rec["kernels"].is_object()) return isa;
  std::map<std::string, std::string> others;  // family -> its formats
  for (const auto& [type, family] : rec["kernels"].items()) {
    const std::string f = family.is_string() ? family.get<std::string>() : family.dump();
    if (f == isa) continue;
    std::string& s = others[f];
    s += (s.empty() ? "" : ", ") + type;
  }
  std::string list;
  for (const auto& [family, types] : others) list += (list.empty() ? "" : "; ") + types + ": " + family;
  return list.empty() ? isa : isa + " (" + list + ")";
}

double FieldNumber(const json& rec, const std::string& field) {
  if (!rec.contains(field) || !rec[field].is_number()) return std::numeric_limits<double>::quiet_NaN();
  return rec[field].get<double>();
}

std::string KLabelOf(const json& rec) {
  const std::string policy = FieldText(rec, "k_policy");
  const double k = FieldNumber(rec, "k");
  if (policy.empty() || policy == "-" || !std::isfinite(k)) return "";
  try {
    return KLabel(static_cast<int>(k), ParseKPolicy(policy));
  } catch (const Error&) {
    return fmt::format("k={} {}", k, policy);  // a policy this version does not know
  }
}

std::string AcceptanceCaptionOf(const json& rec) {
  if (FieldText(rec, "decoder") == "ar") return "";
  return AcceptanceCaption(FieldText(rec, "acceptance_source"));
}

std::string AcceptanceCaption(const std::string& label) {
  if (label == "-") return "-";          // an autoregressive point accepts nothing
  if (label.empty()) return "measured";  // written before acceptance replay
  try {
    return ParseAcceptanceSource(label, "acceptance_source").Caption();
  } catch (const Error&) {
    return "replayed " + label;  // a source this version does not know: still not measured
  }
}

bool IsReplayed(const json& rec) {
  const std::string c = AcceptanceCaptionOf(rec);
  return !c.empty() && c != "measured";
}

const std::vector<std::string>& ParamFields() {
  static const std::vector<std::string> f = {"model",        "target_quant",
                                             "decoder",      "draft_base",
                                             "draft_quant",  "k",
                                             "k_policy",     "draft_p_min",
                                             "input_length", "max_new_tokens",
                                             "temperature",  "top_k",
                                             "top_p",        "seed",
                                             "threads",      "batch",
                                             "kv_type",      "max_ngram",
                                             "min_ngram",    "prompt_category",
                                             "category",     "acceptance_source"};
  return f;
}

}  // namespace specsweep
