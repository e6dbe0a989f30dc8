#include "harness/sweep/draft_tokenizer.h"

#include <fmt/format.h>

#include "base/error.h"
#include "models/loader.h"

namespace specsweep {

BridgedDrafts FindBridgedDrafts(const Experiment& e) {
  BridgedDrafts out;
  std::map<std::string, std::shared_ptr<const Tokenizer>> tokenizers;  // name -> tokenizer (null: unreadable)
  auto tokenizer = [&](const std::string& name) {
    auto [it, fresh] = tokenizers.try_emplace(name);
    if (fresh) try {
        it->second = LoadTokenizer(name, e.models_dir);
      } catch (const Error&) {
      }  // no tokenizer: the decoder compares vocabulary sizes, or names the fault
    return it->second;
  };
  std::map<std::pair<std::string, std::string>, bool> seen;
  for (const Point& p : e.points) {
    const std::string& draft = p.options.draft.model();
    if (!p.speculative() || draft.empty() || !seen.try_emplace({p.model, draft}, true).second) continue;
    const auto t = tokenizer(p.model), d = tokenizer(draft);
    std::string why;
    if (t && d && !SameVocabulary(*t, *d, &why))
      out[{p.model, draft}] = BridgedDraft{size_t(t->vocab_size()), size_t(d->vocab_size()), why};
  }
  return out;
}

std::string BridgedNote(const Point& p, const BridgedDrafts& bridged) {
  if (!p.speculative()) return "";
  auto it = bridged.find({p.model, p.options.draft.model()});
  if (it == bridged.end()) return "";
  return fmt::format(" (draft tokenizer: bridged through text, {} vs {} pieces)", it->second.draft_pieces,
                     it->second.target_pieces);
}

std::string BridgedPlanText(const Experiment& e, const BridgedDrafts& bridged) {
  std::string t;
  for (auto& [pair, b] : bridged) {
    int points = 0;
    for (const Point& p : e.points)
      points += p.speculative() && p.model == pair.first && p.options.draft.model() == pair.second;
    t += fmt::format(
        "{}plan: draft {} has another tokenizer than target {} ({} vs {} pieces{}): bridged through text in {} "
        "point(s) (greedy only, no trees; records say draft_tokenizer: bridged)",
        t.empty() ? "" : "\n", pair.second, pair.first, b.draft_pieces, b.target_pieces,
        b.draft_pieces == b.target_pieces ? ", " + b.why : "", points);
  }
  return t;
}

}  // namespace specsweep
