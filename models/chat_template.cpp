#include "models/chat_template.h"

#include <map>

#include "base/error.h"

namespace specsweep {

namespace {

// FastChat's vicuna_v1.1 system message (Spec-Bench's default conversation).
constexpr std::string_view kVicunaSystem =
    "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, "
    "detailed, and polite answers to the user's questions.";

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// The special pieces a named template writes ("<s>"/"</s>" stand for BOS/EOS).
std::vector<std::string> TemplateSpecials(const ChatTemplate& t) {
  if (t.name == "vicuna") return {"</s>"};
  if (t.name == "llama-3") return {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  if (t.name == "chatml") return {"<|im_start|>", "<|im_end|>"};
  return {};
}

}  // namespace

ChatTemplate ParseChatTemplate(const std::string& spec, const std::string& what) {
  for (const char* n : {"vicuna", "llama-3", "chatml", "none"})
    if (spec == n) return {spec, ""};
  if (spec.find("{prompt}") == std::string::npos)
    Fail("{}: unknown template '{}' (expected vicuna, llama-3, chatml, none, or a format holding {{prompt}})", what,
         spec);
  return {"custom", spec};
}

std::string ChatTemplateLabel(const ChatTemplate& t) { return t.name == "custom" ? t.custom : t.name; }

std::string RenderChat(const ChatTemplate& t, const std::vector<std::string>& users,
                       const std::vector<std::string>& answers) {
  if (users.empty() || answers.size() + 1 != users.size())
    Fail("chat template: {} user turns need {} answers, got {}", users.size(), users.size() - 1, answers.size());
  std::string out;
  // FastChat ADD_COLON_TWO: system, then "ROLE: message" closed by " " (user) or "</s>"
  // (assistant); the open assistant turn is "ASSISTANT:".
  if (t.name == "vicuna") {
    out = std::string(kVicunaSystem) + " ";
    for (size_t i = 0; i < users.size(); ++i) {
      out += "USER: " + users[i] + " ASSISTANT:";
      if (i < answers.size()) out += " " + answers[i] + "</s>";
    }
  } else if (t.name == "llama-3") {
    // Meta's instruct format: BOS, then per message a role header, the trimmed content
    // and <|eot_id|>; the open assistant header ends the prompt.
    out = "<|begin_of_text|>";
    auto header = [](const char* role) { return std::string("<|start_header_id|>") + role + "<|end_header_id|>\n\n"; };
    for (size_t i = 0; i < users.size(); ++i) {
      out += header("user") + Trim(users[i]) + "<|eot_id|>";
      if (i < answers.size()) out += header("assistant") + Trim(answers[i]) + "<|eot_id|>";
    }
    out += header("assistant");
  } else if (t.name == "chatml") {
    for (size_t i = 0; i < users.size(); ++i) {
      out += "<|im_start|>user\n" + users[i] + "<|im_end|>\n";
      if (i < answers.size()) out += "<|im_start|>assistant\n" + answers[i] + "<|im_end|>\n";
    }
    out += "<|im_start|>assistant\n";
  } else {
    // none: the turns and answers one after another; custom: each turn in its format.
    for (size_t i = 0; i < users.size(); ++i) {
      std::string turn = users[i];
      if (t.name == "custom") {
        turn = t.custom;
        for (size_t p = turn.find("{prompt}"); p != std::string::npos; p = turn.find("{prompt}", p + users[i].size()))
          turn.replace(p, 8, users[i]);
      }
      out += (i ? "\n" : "") + turn;
      if (i < answers.size()) out += (t.name == "none" ? "\n" : "") + answers[i];
    }
  }
  return out;
}

ChatEncoder::ChatEncoder(const Tokenizer& tok, ChatTemplate t, const std::string& what) : tok_(tok), t_(std::move(t)) {
  // Special pieces to split out: the template's own (each must exist), and for a custom
  // format every control or user-defined token of the vocabulary.
  const Vocab v = tok.ExportVocab();
  std::map<std::string, int> by_piece;
  for (size_t id = 0; id < v.pieces.size(); ++id)
    if (v.types[id] == TokenType::Control || v.types[id] == TokenType::UserDefined) by_piece[v.pieces[id]] = int(id);
  by_piece.emplace("<s>", tok.bos_id());
  by_piece.emplace("</s>", tok.eos_id());
  for (const std::string& p : TemplateSpecials(t_)) {
    auto it = by_piece.find(p);
    if (it == by_piece.end())
      Fail("{}: template {} needs the special token {}, which the tokenizer ({}) does not have", what,
           ChatTemplateLabel(t_), p, tok.kind());
    specials_.emplace_back(p, it->second);
  }
  if (t_.name == "custom")
    for (auto& [p, id] : by_piece)
      if (!p.empty()) specials_.emplace_back(p, id);
}

std::vector<int> ChatEncoder::Encode(std::string_view text) const {
  std::vector<int> ids;
  size_t pos = 0;
  while (pos < text.size()) {
    // The earliest special piece from here (the longest one at that position).
    size_t best = std::string_view::npos, best_len = 0;
    int best_id = -1;
    for (auto& [p, id] : specials_) {
      size_t at = text.find(p, pos);
      if (at < best || (at == best && at != std::string_view::npos && p.size() > best_len))
        best = at, best_len = p.size(), best_id = id;
    }
    const std::string_view plain =
        text.substr(pos, best == std::string_view::npos ? std::string_view::npos : best - pos);
    if (!plain.empty())
      for (int id : tok_.Encode(plain, false)) ids.push_back(id);
    if (best == std::string_view::npos) break;
    ids.push_back(best_id);
    pos = best + best_len;
  }
  if (tok_.add_bos_default() && (ids.empty() || ids[0] != tok_.bos_id())) ids.insert(ids.begin(), tok_.bos_id());
  return ids;
}

}  // namespace specsweep
