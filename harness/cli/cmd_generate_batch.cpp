// `specsweep generate --batch B`: the batch path of cmd_generate.cpp (generate_batch.h).
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "harness/cli/generate_batch.h"
#include "harness/report/aggregate.h"
#include "harness/store/results.h"

namespace specsweep {
namespace {

using nlohmann::json;

bool Speculative(const BatchGenerate& b) { return b.dec->options().kind != DecoderKind::Autoregressive; }

// τ of one sequence by the results' rule (MeanAcceptedLength): NaN when it generated nothing.
double SequenceTau(const SequenceStats& q, bool speculative) {
  GenerationStats s;
  s.generated_tokens = q.generated_tokens;
  s.target_calls = q.target_calls;
  return MeanAcceptedLength(s, speculative);
}

json Finite(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

std::string StopReason(const SequenceStats& q, int max_new_tokens) {
  if (q.stopped_at_eos) return "eos";
  return q.generated_tokens >= max_new_tokens ? "max_new_tokens" : "context";
}

json SequenceJson(const BatchGenerate& b, size_t i, const GenerationResult& r, const SequenceStats& q) {
  const bool spec = Speculative(b);
  const bool replayed = b.dec->options().acceptance_source.replayed();
  return {{"index", i},
          {"prompt", b.prompts[i]},
          {"prompt_ids", b.prompt_ids[i]},
          {"text", replayed ? json(nullptr) : json(r.text)},
          {"tokens", r.tokens},
          {"generated_tokens", q.generated_tokens},
          {"stop_reason", StopReason(q, b.dec->options().max_new_tokens)},
          {"stats",
           {{"prompt_tokens", q.prompt_tokens},
            {"generated_tokens", q.generated_tokens},
            {"target_calls", q.target_calls},
            {"drafted", q.drafted},
            {"accepted", q.accepted},
            {"acceptance_rate", q.acceptance_rate()},
            {"mean_accepted_length", Finite(SequenceTau(q, spec))},
            {"first_token_latency_s", q.first_token_latency_s},
            {"mean_next_token_latency_s", q.mean_next_token_latency_s},
            {"stopped_at_eos", q.stopped_at_eos}}}};
}

void PrintJson(const BatchGenerate& b, const std::vector<GenerationResult>& results, const GenerationStats& agg) {
  const DecoderOptions& o = b.dec->options();
  json seqs = json::array();
  for (size_t i = 0; i < results.size(); ++i)
    seqs.push_back(SequenceJson(b, i, results[i], i < agg.per_sequence.size() ? agg.per_sequence[i] : SequenceStats{}));
  json aggregate = StatsToJson(agg);  // the records' form: batch fields, per_sequence
  aggregate["acceptance_rate"] = agg.acceptance_rate();
  aggregate["mean_accepted_length"] = Finite(MeanAcceptedLength(agg, Speculative(b)));
  json j = {{"model", b.model},
            {"quant", b.quant},
            {"decoder", DecoderKindName(o.kind)},
            {"batch", int(results.size())},
            {"sequences", seqs},
            {"aggregate", aggregate}};
  if (Speculative(b))
    j["speculative"] = {{"k", o.k},
                        {"k_label", KLabel(o.k, o.k_policy)},
                        {"draft", o.draft.Label()},
                        {"acceptance_source", o.acceptance_source.Label()}};
  fmt::print("{}\n", DumpJson(j, 2));
}

// The prompt and its continuation decoded together, as the streamed text of one
// sequence reads (a token's leading space, a character split over two tokens).
std::string SequenceText(const BatchGenerate& b, size_t i, const GenerationResult& r) {
  std::vector<int> all = b.prompt_ids[i];
  all.insert(all.end(), r.tokens.begin(), r.tokens.end());
  return b.tok->Decode(all);
}

void PrintSequence(const BatchGenerate& b, size_t i, const GenerationResult& r, const SequenceStats& q) {
  const bool spec = Speculative(b);
  fmt::print("--- sequence {} of {}\n", i + 1, b.prompt_ids.size());
  if (b.dec->options().acceptance_source.replayed())
    fmt::print("(text not shown: replayed acceptance)\n");
  else
    fmt::print("{}\n", SequenceText(b, i, r));
  std::string line =
      fmt::format("generated {} ({})", q.generated_tokens, StopReason(q, b.dec->options().max_new_tokens));
  if (spec) {
    const double tau = SequenceTau(q, spec);
    line += fmt::format(", acceptance {:.4f}, mean accepted length {}", q.acceptance_rate(),
                        std::isfinite(tau) ? fmt::format("{:.3f}", tau) : "-");
  }
  line += fmt::format(", first-token latency {:.3f} ms, next-token latency {:.3f} ms", q.first_token_latency_s * 1e3,
                      q.mean_next_token_latency_s * 1e3);
  fmt::print("{}\n", line);
}

void PrintAggregate(const BatchGenerate& b, const GenerationStats& agg) {
  const double tau = MeanAcceptedLength(agg, Speculative(b));
  fmt::print(
      "\nbatch {}: {} tokens in {:.3f} ms, {:.1f} tokens/s (batch), target calls {}, draft calls {}, "
      "mean accepted length {}\n",
      b.prompt_ids.size(), agg.generated_tokens, agg.total_s * 1e3, agg.tokens_per_s, agg.batch_target_calls,
      agg.batch_draft_calls, std::isfinite(tau) ? fmt::format("{:.3f}", tau) : "-");
}

}  // namespace

std::vector<std::string> BatchPromptTexts(const std::vector<std::string>& given, const std::string& default_prompt,
                                          int batch) {
  if (given.size() > 1 && batch == 1)
    FailUsage("--prompt: {} prompts need --batch {} (one sequence per prompt)", given.size(), given.size());
  if (given.size() > 1 && int(given.size()) != batch)
    FailUsage("--prompt: {} prompts for --batch {} (give one, used for every sequence, or {})", given.size(), batch,
              batch);
  if (given.size() == size_t(batch)) return given;
  return std::vector<std::string>(size_t(batch), given.empty() ? default_prompt : given[0]);
}

void RunBatchGenerate(const BatchGenerate& b) {
  GenerationStats agg;
  const std::unique_ptr<DecoderState> state = b.dec->NewState();
  const std::vector<GenerationResult> results = b.dec->GenerateBatch(b.prompt_ids, *state, agg);
  if (b.json) return PrintJson(b, results, agg);
  for (size_t i = 0; i < results.size(); ++i)
    PrintSequence(b, i, results[i], i < agg.per_sequence.size() ? agg.per_sequence[i] : SequenceStats{});
  PrintAggregate(b, agg);
}

}  // namespace specsweep
