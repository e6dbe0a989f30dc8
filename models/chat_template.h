// Chat templates: the text an instruct model expects around each user turn, and its
// encoding with the template's special tokens resolved through the tokenizer's own
// control/added tokens (never spelled out as text) and BOS exactly once.
//
// Named formats follow their sources: vicuna (FastChat's vicuna_v1.1, as Spec-Bench
// prompts its models), llama-3 (Meta's instruct header format), chatml (Qwen's
// im_start/im_end); "none" is the bare text; any other string holding "{prompt}" is a
// custom per-turn format. docs/spec-bench.md spells each out.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/tokenizer.h"

namespace specsweep {

struct ChatTemplate {
  std::string name;    // vicuna | llama-3 | chatml | none | custom
  std::string custom;  // the custom format (holds "{prompt}")
};
// `what` names the option in errors ("--template", "FILE: template").
ChatTemplate ParseChatTemplate(const std::string& spec, const std::string& what);
// "vicuna", "llama-3", ... or the custom format itself (for records and keys).
std::string ChatTemplateLabel(const ChatTemplate& t);

// The conversation as the template writes it, ending where the assistant's next answer
// starts: users[0..n), answers[0..n-1) (answers.size() == users.size() - 1). Special
// tokens appear as their pieces ("<|eot_id|>", "</s>" for the tokenizer's EOS).
std::string RenderChat(const ChatTemplate& t, const std::vector<std::string>& users,
                       const std::vector<std::string>& answers);

// Encodes rendered chat text with one tokenizer: the special pieces the template uses
// are split out and looked up in the tokenizer ("</s>" and "<s>" mean its EOS and BOS
// whatever their spelling), the text between them is encoded without BOS, and BOS is
// prepended once when the tokenizer asks for it and the text does not start with it.
// The constructor throws Error (naming `what`) when the tokenizer lacks a special token
// the template needs. The tokenizer must outlive the encoder.
class ChatEncoder {
 public:
  ChatEncoder(const Tokenizer& tok, ChatTemplate t, const std::string& what);
  std::vector<int> Encode(std::string_view rendered) const;
  // RenderChat, then Encode.
  std::vector<int> EncodeTurns(const std::vector<std::string>& users, const std::vector<std::string>& answers) const {
    return Encode(RenderChat(t_, users, answers));
  }
  const ChatTemplate& chat_template() const { return t_; }

 private:
  const Tokenizer& tok_;
  ChatTemplate t_;
  std::vector<std::pair<std::string, int>> specials_;  // piece -> id, split out of the text
};

}  // namespace specsweep
