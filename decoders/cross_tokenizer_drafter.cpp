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
      : model_(std::move(model)),
        layers_(layers),
        name_(std::move(name)),
        kv_type_(kv_type),
        tb_(std::move(target_tok)),
        db_(std::move(draft_tok)),
        rt_(rt) {}
  const std::string& name() const override { return name_; }
  // Timed on the prompt's text in the draft's own vocabulary. A batch's sequences draft
  // one after another (ProposeBatch's default), so T_d(B) is B calls of one.
  std::map<std::string, int> matrix_types() const override { return MatrixTypeCounts(*model_, layers_); }
  DraftCallCosts MeasureCallCosts(const DraftState&, std::span<const int> prompt, int, int reps,
                                  int batch) const override {
    const std::vector<int> ids = db_.tok().Encode(tb_.tok().Decode(prompt), db_.tok().add_bos_default());
    std::vector<double> t = TimeForwardCalls(rt_, *model_, layers_, kv_type_, ids, 2, reps, false);
    for (double& s : t) s *= batch;
    return {t, {}};
  }
  std::unique_ptr<DraftState> NewState() const override { return std::make_unique<State>(); }

  void Begin(DraftState& state, std::span<const int> prompt) const override {
    State& s = static_cast<State&>(state);
    s.cache = std::make_unique<KVCache>(model_->config, layers_, 0, kv_type_);
    s.dseq.clear();
    // The target's BOS maps to the draft's (Sync); without one, the draft's own default.
    if (!prompt.empty() && prompt[0] != tb_.tok().bos_id() && db_.tok().add_bos_default())
      s.dseq.push_back(db_.tok().bos_id());
    s.synced = 0;
    s.pending.clear();
    Sync(s, prompt);
    s.cached.clear();
    // All but the last token, which is fed with the first draft position. A prompt
    // longer than the draft's context in its own tokens gets no drafts (Propose).
    if (s.dseq.size() > 1 && static_cast<int>(s.dseq.size()) <= model_->config.max_seq_len) {
      s.cached.assign(s.dseq.begin(), s.dseq.end() - 1);
      Forward(rt_, *model_, s.cached, 0, *s.cache, false);
    }
  }

  void Propose(DraftState& state, const DraftRequest& r, Rng&, DraftBlock& out, GenerationStats& st) const override {
    State& s = static_cast<State&>(state);
    const std::span<const int> seq = r.seq;
    const int k = r.k;
    DraftPolicy& policy = r.policy;
    auto t0 = Clock::now();
    Sync(s, seq);
    // Keep the cached prefix that still matches; the last token is always fed again.
    size_t keep = 0;
    while (keep < s.cached.size() && keep + 1 < s.dseq.size() && s.cached[keep] == s.dseq[keep]) ++keep;
    s.cache->Truncate(static_cast<int>(keep));
    s.cached.resize(keep);
    st.retokenize_s += Seconds(t0, Clock::now());
    const int room = model_->config.max_seq_len - static_cast<int>(s.dseq.size());
    const int kd = std::min(k, room);
    if (s.dseq.empty() || kd <= 0) return;

    // --- draft in the draft's vocabulary ---
    s.drafted.clear();
    bool eos = false;
    std::span<const int> feed = std::span<const int>(s.dseq).subspan(keep);
    for (int i = 0; i < kd; ++i) {
      const int pos = s.cache->length() + static_cast<int>(feed.size()) - 1;
      std::span<const float> logits = Forward(rt_, *model_, feed, s.cache->length(), *s.cache, false);  // [1][vocab]
      CheckLogits(logits, model_->config.vocab_size, "draft " + name(), pos, st.target_calls);
      s.cached.insert(s.cached.end(), feed.begin(), feed.end());
      ++st.draft_calls;
      const DraftAction act = policy.OnDraft(i + 1, policy.UsesTopProb() ? MaxSoftmaxProb(logits) : 1.0f);
      if (act == DraftAction::DropAndStop) break;
      const int tok = Argmax(logits);
      if (db_.IsControl(tok)) {  // a story ends: propose the target's EOS after the text
        eos = tok == db_.tok().eos_id();
        break;
      }
      s.drafted.push_back(tok);
      if (act == DraftAction::KeepAndStop) break;
      feed = std::span<const int>(&s.drafted.back(), 1);
    }

    // --- bridge: draft text -> target tokens continuing seq ---
    t0 = Clock::now();
    std::vector<int> all = s.dseq;  // [dseq + drafted]
    all.insert(all.end(), s.drafted.begin(), s.drafted.end());
    const int n = static_cast<int>(s.dseq.size());
    auto text = db_.TextAfter(all, n, static_cast<int>(all.size()));
    if (text && text->starts_with(s.pending)) {
      if (auto cont = tb_.Continue(seq, text->substr(s.pending.size()))) {
        out.tokens.assign(cont->begin(), cont->begin() + std::min<size_t>(cont->size(), k));
        if (eos && static_cast<int>(out.tokens.size()) < k) out.tokens.push_back(tb_.tok().eos_id());
      }
    }
    st.retokenize_s += Seconds(t0, Clock::now());
  }

 private:
  struct State : DraftState {
    std::unique_ptr<KVCache> cache;  // the draft's, over cached
    std::vector<int> dseq;           // draft ids spelling the text of seq[0..synced)
    int synced = 0;                  // target tokens reflected in dseq (+ pending)
    std::string pending;             // held-back trailing spaces of the synced text
    std::vector<int> cached;         // draft ids in cache (a prefix of dseq + drafted)
    std::vector<int> drafted;        // [<= K] this step's draft-vocabulary tokens
  };

  // Brings s.dseq up to seq: text runs go through the bridge, BOS/EOS map one to one.
  void Sync(State& s, std::span<const int> seq) const {
    const int n = static_cast<int>(seq.size());
    while (s.synced < n) {
      int end = s.synced;
      while (end < n && !tb_.IsControl(seq[end])) ++end;
      if (end > s.synced) {
        std::optional<std::vector<int>> add;
        if (auto text = tb_.TextAfter(seq.first(end), s.synced, end)) add = db_.Continue(s.dseq, s.pending + *text);
        if (add) {
          s.dseq.insert(s.dseq.end(), add->begin(), add->end());
        } else {  // not prefix-stable or not spellable here: re-encode the whole run
          const int run = tb_.RunStart(seq.first(s.synced));
          s.dseq.resize(db_.RunStart(s.dseq));
          const auto enc = db_.tok().Encode(tb_.tok().Decode(seq.subspan(run, end - run)), false);
          s.dseq.insert(s.dseq.end(), enc.begin(), enc.end());
        }
        // A trailing space the draft's vocabulary would spell as a lone "▁" piece (its
        // words carry their leading space) is held back: the draft continues from the
        // word before it, and its text must then start with the held-back spaces.
        s.pending.clear();
        while (!s.dseq.empty() && db_.SpaceOnly(s.dseq.back()) > 0) {
          s.pending.append(db_.SpaceOnly(s.dseq.back()), ' ');
          s.dseq.pop_back();
        }
      }
      if (end < n) {
        s.dseq.push_back(seq[end] == tb_.tok().eos_id() ? db_.tok().eos_id() : db_.tok().bos_id());
        s.pending.clear();
      }
      s.synced = std::min(n, end + 1);
    }
  }

  std::shared_ptr<const Model> model_;
  int layers_;
  std::string name_;
  KvType kv_type_;
  TextBridge tb_, db_;  // target side, draft side
  Runtime rt_;
};

}  // namespace

std::unique_ptr<Drafter> MakeCrossTokenizerDrafter(std::shared_ptr<const Model> model, int layers, std::string name,
                                                   KvType kv_type, std::shared_ptr<const Tokenizer> target_tok,
                                                   std::shared_ptr<const Tokenizer> draft_tok, const Runtime& rt) {
  return std::make_unique<CrossTokenizerDrafter>(std::move(model), layers, std::move(name), kv_type,
                                                 std::move(target_tok), std::move(draft_tok), rt);
}

}  // namespace specsweep
