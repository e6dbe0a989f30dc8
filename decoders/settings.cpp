#include "decoders/settings.h"

#include <charconv>
#include <cstdint>
#include <system_error>

#include <fmt/format.h>

#include "base/error.h"

namespace specsweep {

int64_t SettingRange::IntHi() const { return hi >= 9223372036854775807.0 ? INT64_MAX : static_cast<int64_t>(hi); }

void DecoderSetting::CheckRange(double v, std::string_view what) const {
  if (!range.Contains(v))
    Fail("{}: {} is out of range {}{}, {}]", what, v, range.lo_open ? "(" : "[", range.lo, range.hi);
}

namespace {

// A batch size: a whole number in [1, 256].
int ParseBatch(std::string_view t, std::string_view what) {
  int v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || v < 1 || v > 256)
    Fail("{}: batch must be a whole number in [1, 256], got '{}'", what, t);
  return v;
}

}  // namespace

const std::vector<DecoderSetting>& DecoderSettings() {
  static const std::vector<DecoderSetting> table = {
      SettingDef("k", "--k,--draft-max")
          .Int(1, 64)
          .Speculative()
          .Help("Draft length K: every step (constant), the bound (threshold, adaptive), the start (heuristic)"),
      SettingDef("k_policy", "--k-policy").Speculative().Help("constant | heuristic | threshold | adaptive"),
      SettingDef("draft_p_min", "--draft-p-min")
          .Number(0, 1, true)
          .Speculative()
          .Help("Threshold policy: stop drafting below this top probability"),
      SettingDef("draft", "--draft")
          .Speculative()
          .Help("The whole draft, as in experiment files: q4_0, layers=2+q8_0, model=NAME, lookup+max_ngram=4 (or give "
                "its "
                "parts below)"),
      // Axes of the experiment files that set a part of each draft (decoders/draft_spec.h).
      SettingDef("draft_quant", "--draft-quant").Speculative().Help("Draft weights quantized in memory"),
      SettingDef("max_ngram", "--max-ngram")
          .Int(1, 64)
          .Speculative()
          .Help("Lookup draft: longest n-gram matched (default 3)"),
      SettingDef("min_ngram", "--min-ngram")
          .Int(1, 64)
          .Speculative()
          .Help("Lookup draft: shortest n-gram matched (default 1)"),
      SettingDef("tree_budget").Int(0, 1024).Speculative(),
      SettingDef("branching").Speculative(),
      SettingDef("acceptance_source", "--acceptance-source")
          .Speculative()
          .Help(
              "measured (default) | alpha=A | positions=[p1,p2,...] | trace=RESULTS[:POINT]: accepted draft tokens per "
              "step drawn from a source instead of compared (real draft, verify and rollback; the text is not shown)"),
      SettingDef("max_new_tokens", "-n,--max-new-tokens").Int(1, 1 << 20).Help("Tokens to generate"),
      SettingDef("kv_type", "--kv-type").Help("KV cache type of target and draft: f32 (default), f16"),
      SettingDef("draft_kv_type", "--draft-kv-type")
          .Speculative()
          .Help("KV cache type of the draft model: f32, f16 (default: the target's, --kv-type)")
          .Table([](DecoderOptions& o, std::string_view t,
                    std::string_view what) { o.draft_kv_type = ParseKvType(t, what); },
                 [](const DecoderOptions& o) {
                   return o.draft_kv_type ? std::string(KvTypeName(*o.draft_kv_type)) : std::string();
                 }),
      SettingDef("batch", "--batch")
          .Int(1, 256)
          .Help("Sequences decoded together: each target call verifies every live sequence in one pass")
          .Table([](DecoderOptions& o, std::string_view t, std::string_view what) { o.batch = ParseBatch(t, what); },
                 [](const DecoderOptions& o) { return std::to_string(o.batch); }),
      SettingDef("temperature", "--temp,--temperature")
          .Number(0, 100)
          .Group("sampling")
          .Help("Temperature (0: greedy)"),
      SettingDef("top_k", "--top-k").Int(0, 1 << 24).Group("sampling").Help("Top-k (0: off)"),
      SettingDef("top_p", "--top-p").Number(0, 1, true).Group("sampling").Help("Top-p (1: off)"),
      SettingDef("seed", "--seed").Int(0, 9223372036854775807.0).Group("sampling").Help("Sampling seed"),
  };
  return table;
}

const DecoderSetting& Setting(std::string_view name) {
  for (const DecoderSetting& s : DecoderSettings())
    if (s.name == name) return s;
  Fail("setting: unknown name '{}'", name);
}

}  // namespace specsweep
