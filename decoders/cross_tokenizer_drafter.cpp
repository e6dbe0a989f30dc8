// Cross-tokenizer draft (HF "universal assisted generation", Timor et al. 2025): a draft
// model with its own vocabulary, bridged through text. Per step:
//   1. sync:    text the target emitted since last step -> appended to the draft's
//               token sequence (TextBridge::Continue: re-encoded with a window of the
//               tokens before it); the draft cache keeps the longest prefix still equal
//   2. draft:   up to K tokens in the draft's vocabulary, greedy (one Forward each;
//               the first also catches the cache up)
//   3. bridge:  their text, as target tokens continuing the committed ones
//               (TextBridge::Continue); the first K are the proposal
//   4. the shared loop verifies; next step's sync drops whatever the target rejected
// Greedy verification makes the output the target's own whatever is proposed, so this
// only has to be fast and usually right. Sampling is refused (make_decoder.cpp): the
// draft's q lives on another vocabulary, and the target-side proposal is not drawn from
// any distribution over target tokens that speculative sampling could correct.
// Steps 1 and 3 are timed as GenerationStats::retokenize_s (part of draft_s).
#include <algorithm>

#include "decoders/common.h"
#include "decoders/drafter.h"
#include "decoders/text_bridge.h"
#include "models/forward.h"

namespace specsweep {
namespace {

class CrossTokenizerDrafter : public Drafter {
 public:
  CrossTokenizerDrafter(std::shared_ptr<const Model> model, int layers, std::string name, KvType kv_type,
                        std::shared_ptr<const Tokenizer> target_tok, std::shared_ptr<const Tokenizer> draft_tok,
                        const Runtime& rt)
      : model_(std::move(model)), layers_(layers), name_(std::move(name)), kv_type_(kv_type),
        tb_(std::move(target_tok)), db_(std::move(draft_tok)), rt_(rt) {}
  const std::string& name() const override { return name_; }
  // Timed on the prompt's text in the draft's own vocabulary.
  std::map<std::string, int> matrix_types() const override { return MatrixTypeCounts(*model_, layers_); }
  std::vector<double> MeasureCallCosts(std::span<const int> prompt, int reps) override {
    const std::vector<int> ids = db_.tok().Encode(tb_.tok().Decode(prompt), db_.tok().add_bos_default());
    return TimeForwardCalls(rt_, *model_, layers_, kv_type_, ids, 2, reps, false);
  }

  void Begin(std::span<const int> prompt) override {
    cache_ = std::make_unique<KVCache>(model_->config, layers_, 0, kv_type_);
    dseq_.clear();
    // The target's BOS maps to the draft's (Sync); without one, the draft's own default.
    if (!prompt.empty() && prompt[0] != tb_.tok().bos_id() && db_.tok().add_bos_default())
      dseq_.push_back(db_.tok().bos_id());
    synced_ = 0;
    pending_.clear();
    Sync(prompt);
    cached_.clear();
    // All but the last token, which is fed with the first draft position. A prompt
    // longer than the draft's context in its own tokens gets no drafts (Propose).
    if (dseq_.size() > 1 && static_cast<int>(dseq_.size()) <= model_->config.max_seq_len) {
      cached_.assign(dseq_.begin(), dseq_.end() - 1);
      Forward(rt_, *model_, cached_, 0, *cache_, false);
    }
  }

  void Propose(std::span<const int> seq, int k, DraftPolicy& policy, Rng&, DraftBlock& out,
               GenerationStats& st) override {
    auto t0 = Clock::now();
    Sync(seq);
    // Keep the cached prefix that still matches; the last token is always fed again.
    size_t keep = 0;
    while (keep < cached_.size() && keep + 1 < dseq_.size() && cached_[keep] == dseq_[keep]) ++keep;
    cache_->Truncate(static_cast<int>(keep));
    cached_.resize(keep);
    st.retokenize_s += Seconds(t0, Clock::now());
    const int room = model_->config.max_seq_len - static_cast<int>(dseq_.size());
    const int kd = std::min(k, room);
    if (dseq_.empty() || kd <= 0) return;

    // --- draft in the draft's vocabulary ---
    drafted_.clear();
    bool eos = false;
    std::span<const int> feed = std::span<const int>(dseq_).subspan(keep);
    for (int i = 0; i < kd; ++i) {
      const int pos = cache_->length() + static_cast<int>(feed.size()) - 1;
      std::span<const float> logits = Forward(rt_, *model_, feed, cache_->length(), *cache_, false);  // [1][vocab]
      CheckLogits(logits, model_->config.vocab_size, "draft " + name(), pos, st.target_calls);
      cached_.insert(cached_.end(), feed.begin(), feed.end());
      ++st.draft_calls;
      const DraftAction act = policy.OnDraft(i + 1, policy.UsesTopProb() ? MaxSoftmaxProb(logits) : 1.0f);
      if (act == DraftAction::DropAndStop) break;
      const int tok = Argmax(logits);
      if (db_.IsControl(tok)) {  // a story ends: propose the target's EOS after the text
        eos = tok == db_.tok().eos_id();
        break;
      }
      drafted_.push_back(tok);
      if (act == DraftAction::KeepAndStop) break;
      feed = std::span<const int>(&drafted_.back(), 1);
    }

    // --- bridge: draft text -> target tokens continuing seq ---
    t0 = Clock::now();
    std::vector<int> all = dseq_;  // [dseq + drafted]
    all.insert(all.end(), drafted_.begin(), drafted_.end());
    const int n = static_cast<int>(dseq_.size());
    auto text = db_.TextAfter(all, n, static_cast<int>(all.size()));
    if (text && text->starts_with(pending_)) {
      if (auto cont = tb_.Continue(seq, text->substr(pending_.size()))) {
        out.tokens.assign(cont->begin(), cont->begin() + std::min<size_t>(cont->size(), k));
        if (eos && static_cast<int>(out.tokens.size()) < k) out.tokens.push_back(tb_.tok().eos_id());
      }
    }
    st.retokenize_s += Seconds(t0, Clock::now());
  }

 private:
  // Brings dseq_ up to seq: text runs go through the bridge, BOS/EOS map one to one.
  void Sync(std::span<const int> seq) {
    const int n = static_cast<int>(seq.size());
    while (synced_ < n) {
      int end = synced_;
      while (end < n && !tb_.IsControl(seq[end])) ++end;
      if (end > synced_) {
        std::optional<std::vector<int>> add;
        if (auto text = tb_.TextAfter(seq.first(end), synced_, end)) add = db_.Continue(dseq_, pending_ + *text);
        if (add) {
          dseq_.insert(dseq_.end(), add->begin(), add->end());
        } else {  // not prefix-stable or not spellable here: re-encode the whole run
          const int run = tb_.RunStart(seq.first(synced_));
          dseq_.resize(db_.RunStart(dseq_));
          const auto enc = db_.tok().Encode(tb_.tok().Decode(seq.subspan(run, end - run)), false);
          dseq_.insert(dseq_.end(), enc.begin(), enc.end());
        }
        // A trailing space the draft's vocabulary would spell as a lone "▁" piece (its
        // words carry their leading space) is held back: the draft continues from the
        // word before it, and its text must then start with the held-back spaces.
        pending_.clear();
        while (!dseq_.empty() && db_.SpaceOnly(dseq_.back()) > 0) {
          pending_.append(db_.SpaceOnly(dseq_.back()), ' ');
          dseq_.pop_back();
        }
      }
      if (end < n) {
        dseq_.push_back(seq[end] == tb_.tok().eos_id() ? db_.tok().eos_id() : db_.tok().bos_id());
        pending_.clear();
      }
      synced_ = std::min(n, end + 1);
    }
  }

  std::shared_ptr<const Model> model_;
  int layers_;
  std::string name_;
  KvType kv_type_;
  TextBridge tb_, db_;                // target side, draft side
  std::unique_ptr<KVCache> cache_;    // the draft's, over cached_
  std::vector<int> dseq_;             // draft ids spelling the text of seq[0..synced_)
  int synced_ = 0;                    // target tokens reflected in dseq_ (+ pending_)
  std::string pending_;               // held-back trailing spaces of the synced text
  std::vector<int> cached_;           // draft ids in cache_ (a prefix of dseq_ + drafted)
  std::vector<int> drafted_;          // [<= K] this step's draft-vocabulary tokens
  Runtime rt_;
};

}  // namespace

std::unique_ptr<Drafter> MakeCrossTokenizerDrafter(std::shared_ptr<const Model> model, int layers,
                                                   std::string name, KvType kv_type,
                                                   std::shared_ptr<const Tokenizer> target_tok,
                                                   std::shared_ptr<const Tokenizer> draft_tok, const Runtime& rt) {
  return std::make_unique<CrossTokenizerDrafter>(std::move(model), layers, std::move(name), kv_type,
                                                 std::move(target_tok), std::move(draft_tok), rt);
}

}  // namespace specsweep
