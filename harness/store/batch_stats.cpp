#include "harness/store/batch_stats.h"

#include "base/error.h"

using nlohmann::json;

namespace specsweep {

void BatchStatsToJson(const GenerationStats& s, const std::vector<std::string>& sequence_hashes, json& out) {
  if (s.batch <= 1) return;
  out["batch"] = s.batch;
  out["batch_target_calls"] = s.batch_target_calls;
  out["batch_draft_calls"] = s.batch_draft_calls;
  json& seqs = out["per_sequence"] = json::array();
  for (size_t i = 0; i < s.per_sequence.size(); ++i) {
    const SequenceStats& q = s.per_sequence[i];
    json& x = seqs.emplace_back(json{{"prompt_tokens", q.prompt_tokens},
                                     {"generated_tokens", q.generated_tokens},
                                     {"target_calls", q.target_calls},
                                     {"drafted", q.drafted},
                                     {"accepted", q.accepted},
                                     {"first_token_latency_s", q.first_token_latency_s},
                                     {"mean_next_token_latency_s", q.mean_next_token_latency_s},
                                     {"stopped_at_eos", q.stopped_at_eos}});
    if (sequence_hashes.size() == s.per_sequence.size()) x["output"] = sequence_hashes[i];
  }
}

void BatchStatsFromJson(const json& j, const std::string& what, GenerationStats& s,
                        std::vector<std::string>& sequence_hashes) {
  sequence_hashes.clear();
  if (!j.contains("batch")) return;  // batch 1, and every record from before batches
  s.batch = j.at("batch").get<int>();
  s.batch_target_calls = j.at("batch_target_calls").get<int>();
  s.batch_draft_calls = j.at("batch_draft_calls").get<int>();
  const json& seqs = j.at("per_sequence");
  if (s.batch < 2 || seqs.size() != size_t(s.batch))
    Fail("{}: stats: per_sequence: {} entries for batch {}", what, seqs.size(), s.batch);
  for (const json& x : seqs) {
    SequenceStats& q = s.per_sequence.emplace_back();
    q.prompt_tokens = x.at("prompt_tokens").get<int>();
    q.generated_tokens = x.at("generated_tokens").get<int>();
    q.target_calls = x.at("target_calls").get<int>();
    q.drafted = x.at("drafted").get<int64_t>();
    q.accepted = x.at("accepted").get<int64_t>();
    q.first_token_latency_s = x.at("first_token_latency_s").get<double>();
    q.mean_next_token_latency_s = x.at("mean_next_token_latency_s").get<double>();
    q.stopped_at_eos = x.at("stopped_at_eos").get<bool>();
    if (x.contains("output")) sequence_hashes.push_back(x.at("output").get<std::string>());
  }
  if (!sequence_hashes.empty() && sequence_hashes.size() != seqs.size())
    Fail("{}: stats: per_sequence: {} of {} entries have an output hash", what, sequence_hashes.size(), seqs.size());
}

}  // namespace specsweep
