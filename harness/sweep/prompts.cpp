#include "harness/sweep/prompts.h"

#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/text_input.h"

namespace specsweep {

static std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> ReadPromptLines(const std::string& path, int count) {
  std::ifstream f = OpenTextInput(path, "prompt file");
  std::vector<std::string> out;
  std::string line;
  while (int(out.size()) < count && std::getline(f, line)) {
    line = Trim(line);
    if (!line.empty()) out.push_back(line);
  }
  if (int(out.size()) < count)
    Fail("{}: prompts.count: asks for {} prompts, the file has only {}", path, count, out.size());
  return out;
}

std::vector<std::string> SplitPassages(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line, cur;
  auto flush = [&] {
    std::string t = Trim(cur);
    if (!t.empty()) out.push_back(t);
    cur.clear();
  };
  while (std::getline(in, line)) {
    if (Trim(line).empty())
      flush();
    else
      cur += (cur.empty() ? "" : "\n") + line;
  }
  flush();
  return out;
}

std::vector<std::vector<int>> CutPassages(const std::vector<std::string>& passages, const Tokenizer& tok, int n_tokens,
                                          int count, const std::string& what) {
  if (count > int(passages.size()))
    Fail("{}: prompts.count: {} prompts need {} passages, the file has {}", what, count, count, passages.size());
  std::vector<std::vector<int>> out;
  for (int i = 0; i < count; ++i) {
    std::string text;
    std::vector<int> ids;
    // Add whole passages until the encoding is long enough, then cut the token list.
    for (size_t j = 0; j < passages.size(); ++j) {
      text += (text.empty() ? "" : "\n") + passages[(i + j) % passages.size()];
      ids = tok.Encode(text, tok.add_bos_default());
      if (int(ids.size()) >= n_tokens) break;
    }
    if (int(ids.size()) < n_tokens)
      Fail("{}: input_length: {} tokens asked, all passages together give only {}", what, n_tokens, ids.size());
    ids.resize(n_tokens);
    out.push_back(std::move(ids));
  }
  return out;
}

}  // namespace specsweep
