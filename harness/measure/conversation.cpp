#include "harness/measure/conversation.h"

#include <algorithm>

#include "base/error.h"
#include "decoders/common.h"

namespace specsweep {

namespace {

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

GenerationStats CombineTurns(const GenerationStats& a, const GenerationStats& b) {
  GenerationStats s = a;
  AddStats(s, b);
  const double decode_s = s.total_s - s.prefill_s;
  s.tokens_per_s = decode_s > 0 ? s.generated_tokens / decode_s : 0.0;
  const int n = a.generated_tokens + b.generated_tokens;
  s.mean_next_token_latency_s =
      n > 0 ? (a.mean_next_token_latency_s * a.generated_tokens + b.mean_next_token_latency_s * b.generated_tokens) / n
            : 0.0;
  s.stopped_at_eos = b.stopped_at_eos;
  return s;
}

GenerationResult GenerateConversation(const Decoder& d, DecoderState& state, const std::vector<int>& first,
                                      const std::vector<std::string>& turns, const ChatEncoder& chat, int context,
                                      int reserve, const std::string& what) {
  GenerationResult out = d.Generate(first, state);
  std::vector<std::string> users{turns.at(0)}, answers;
  std::string answer = out.text;
  for (size_t t = 1; t < turns.size(); ++t) {
    answers.push_back(Trim(answer));  // FastChat keeps the stripped answer
    users.push_back(turns[t]);
    const std::vector<int> ids = chat.EncodeTurns(users, answers);
    if (int(ids.size()) + reserve > context)
      Fail("{}: turn {} ({} tokens with the answers before it) + {} exceeds the context of {} tokens", what, t + 1,
           ids.size(), reserve, context);
    GenerationResult next = d.Generate(ids, state);
    out.tokens.insert(out.tokens.end(), next.tokens.begin(), next.tokens.end());
    out.text += next.text;
    out.stats = CombineTurns(out.stats, next.stats);
    answer = next.text;
  }
  return out;
}

}  // namespace specsweep
