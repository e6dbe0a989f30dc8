// MeasureGroup (measure.h): a group's warm-up, cost model and rounds, at the group's batch.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "decoders/draft_vocabulary.h"
#include "harness/measure/context.h"
#include "harness/measure/conversation.h"
#include "harness/measure/measure.h"
#include "harness/measure/process_runtime.h"
#include "harness/store/sha256.h"
#include "harness/sweep/draft_tokenizer.h"
#include "base/error.h"
#include "quant/matmul.h"

namespace specsweep {

namespace {

std::string OutputHash(const std::vector<int>& tokens) {
  std::string bytes(reinterpret_cast<const char*>(tokens.data()), tokens.size() * sizeof(int));
  return Sha256Hex(bytes).substr(0, 16);
}

// A batch's output: its sequences' ids in order, each after its count, so that a token
// moved from one sequence to the next changes the hash.
std::string BatchOutputHash(const std::vector<GenerationResult>& results) {
  std::vector<int> all;
  for (const GenerationResult& r : results) {
    all.push_back(int(r.tokens.size()));
    all.insert(all.end(), r.tokens.begin(), r.tokens.end());
  }
  return OutputHash(all);
}

// Verify batches the group's points can ask for: K + 1 (K bounds the threshold and
// adaptive policies too); the heuristic policy's K grows without a cap, so it gets
// twice its start (longer batches are extrapolated by the aggregation).
int VerifyBatchMax(const Group& g) {
  int n = 1;
  for (auto* p : g.points) {
    if (!p->speculative()) continue;
    int k = p->options.k;
    if (p->options.k_policy == KPolicy::Heuristic) k = std::max(k, 2 * p->options.k);
    n = std::max(n, k + 1);
  }
  return std::min(n, 17);
}

// Element-wise median over prompts of per-prompt medians (an even count: the mean of the
// middle two; the upper one alone made every cost of a 2-prompt group the larger).
std::vector<double> MedianOver(const std::vector<std::vector<double>>& v) {
  if (v.empty()) return {};
  std::vector<double> out;
  for (size_t j = 0; j < v[0].size(); ++j) {
    std::vector<double> col;
    for (auto& row : v)
      if (j < row.size()) col.push_back(row[j]);
    std::sort(col.begin(), col.end());
    const size_t m = col.size() / 2;
    out.push_back(col.size() % 2 ? col[m] : (col[m - 1] + col[m]) / 2);
  }
  return out;
}

constexpr int kCostReps = 5;  // calls per batch size and prompt

// What a point ran on: its matrices' stored types, the runtime, the host's load.
void DescribeRun(const Point& p, const Decoder& decoder, const Runtime& rt, const HostLoad& host, SweepInputs& in,
                 RawRecord& r) {
  r.target_types = MatrixTypeCounts(*in.models.Target(p.model, p.target_quant).model);
  r.draft_types = decoder.draft_types();
  for (auto [types, asked] : {std::pair{&r.target_types, p.target_quant}, {&r.draft_types, p.options.draft.quant()}})
    if (asked && !types->empty()) (*types)[std::string(QTypeName(*asked))] += 0;  // listed even when it covers none
  if (const std::string& draft = p.options.draft.model(); p.speculative())
    r.draft_tokenizer = draft.empty() || DraftSharesVocabulary(in.models.Target(p.model, p.target_quant),
                                                               in.models.Drafts().Load(draft))
                            ? kDraftTokenizerShared
                            : kDraftTokenizerBridged;
  r.threads_used = rt.threads;
  r.kernel_isa = rt.kernel_isa();
  for (const auto* types : {&r.target_types, &r.draft_types})
    for (const auto& [type, count] : *types)
      if (count > 0) r.kernels[type] = rt.kernels.per_type[int(ParseQType(type, "stored type"))]->name;
  r.host = host;
}

// Each point's decoder and its run state (kept through warm-up, costs and rounds).
struct GroupDecoders {
  std::vector<std::unique_ptr<Decoder>> decoders;
  std::vector<std::unique_ptr<DecoderState>> runs;
};

GroupDecoders MakeGroupDecoders(const Group& g, SweepInputs& in, const Runtime& rt) {
  GroupDecoders d;
  for (auto* p : g.points) {
    d.decoders.push_back(
        MakeDecoder(in.models.Target(p->model, p->target_quant), in.Options(*p), DecoderEnv{rt, &in.models.Drafts()}));
    d.runs.push_back(d.decoders.back()->NewState());
  }
  return d;
}

// The batch a group runs at: its baseline's, which every point shares (the baseline's key
// holds the batch, and a group is the points of one baseline).
int GroupBatch(const Group& g) {
  const int batch = g.baseline().options.batch;
  for (auto* p : g.points)
    if (p->options.batch != batch)
      Fail("group of {}: point {} has batch {}, its baseline {}", g.baseline().Name(), p->Name(), p->options.batch,
           batch);
  return batch;
}

// Rounds of one repetition at `batch`: every prompt is decoded once per repetition at
// every batch, B of them per round (the last round wraps around the list).
int RoundsPerRepetition(int n_prompts, int batch) { return (n_prompts + batch - 1) / batch; }

// The sequences of one batched generation from prompt `first`: that prompt and the next
// batch - 1 of the point's list, cyclic (with fewer prompts than the batch, prompts
// repeat within a batch).
std::vector<std::vector<int>> BatchPrompts(const std::vector<std::vector<int>>& prompts, int first, int batch) {
  std::vector<std::vector<int>> out;
  for (int b = 0; b < batch; ++b) out.push_back(prompts[(size_t(first) + size_t(b)) % prompts.size()]);
  return out;
}

// One run of a group's measuring: the decoders, the prompts, the costs gathered over the
// rounds and where the loop is (for progress and Ctrl-C).
class GroupMeasurer {
 public:
  GroupMeasurer(const Experiment& e, const Group& g, SweepInputs& in, const Runtime& rt, Progress* progress,
                const std::atomic<bool>* stop, ProgressState where)
      : e_(e),
        g_(g),
        in_(in),
        base_(g.baseline()),
        prompts_(in.prompts.Prompts(base_.model, base_.input_length, base_.part)),
        batch_(GroupBatch(g)),
        n_(int(g.points.size())),
        rounds_(e.repetitions * RoundsPerRepetition(int(prompts_.size()), batch_)),
        ctx_(in.models.Base(base_.model).model->config.max_seq_len),
        group_(MakeGroupDecoders(g, in, rt)),
        progress_(progress),
        stop_(stop),
        where_(std::move(where)),
        draft_(n_),
        draft_tree_(n_) {
    if (batch_ > 1 && Conversation())  // refused when the file is read (sweep/experiment.cpp)
      Fail("{}: point {}: a conversation (turns: all) runs at batch 1, not {}", e.file, base_.Name(), batch_);
  }

  void WarmUp() {
    for (int w = 0; w < e_.warmup; ++w)
      for (int j = 0; j < n_; ++j) {
        At("warm-up", 0, *g_.points[j]);
        Generate(j, 0, /*turns=*/false);
      }
  }

  void Rounds(std::vector<RawRecord>& records) {
    const int per_rep = RoundsPerRepetition(int(prompts_.size()), batch_);
    for (int rep = 0; rep < e_.repetitions; ++rep)
      for (int r = 0; r < per_rep; ++r) {
        const int round = rep * per_rep + r, i = r * batch_;  // i: the round's first prompt
        if (rep == 0) MeasureCosts(prompts_[i]);
        const std::vector<int> order = RoundOrder(n_, round);
        for (int slot = 0; slot < n_; ++slot) {
          const int j = order[slot];
          At("round", round + 1, *g_.points[j]);
          RawRun run = Generate(j, i, Conversation());
          run.rep = rep, run.round = round, run.slot = slot;
          records[j].runs.push_back(std::move(run));
          if (progress_) progress_->GenerationDone();
        }
        ++rounds_done_;
      }
  }

  void Finish(const Runtime& rt, const HostLoad& host, std::vector<RawRecord>& records) {
    const std::vector<double> target_s = MedianOver(target_);
    for (int j = 0; j < n_; ++j) {
      records[j].costs.target_s = target_s;
      records[j].costs.draft_s = MedianOver(draft_[j]);
      records[j].costs.draft_tree_s = MedianOver(draft_tree_[j]);
      DescribeRun(*g_.points[j], *group_.decoders[j], rt, host, in_, records[j]);
    }
  }

 private:
  bool Conversation() const { return e_.prompts.questions && e_.prompts.all_turns && base_.input_length == 0; }

  void At(const char* stage, int round, const Point& p) {
    if (stop_ && stop_->load()) throw Interrupted(rounds_done_, rounds_);
    if (!progress_) return;
    where_.stage = stage;
    where_.round = round;
    where_.rounds = rounds_;
    where_.point = p.Name();
    progress_->Set(where_);
  }

  // Cost model: the target's calls through the baseline, each draft through its point, at
  // the group's batch (T(B x n), T_d(B)), on each prompt at the start of its round of the
  // first repetition, so that the call times and the generations they predict share the
  // host's minutes. (Timed once before all rounds, T(1) came out 9% and 20% above the
  // baseline's own calls in the rounds at 7B and 1.1B: issue #31, docs/reproducing.md.)
  void MeasureCosts(const std::vector<int>& ids) {
    At("cost model", 0, base_);
    const int n_max = std::min(VerifyBatchMax(g_), ctx_ - int(ids.size()));
    target_.push_back(group_.decoders[0]->MeasureCallCosts(ids, n_max, kCostReps, *group_.runs[0], batch_).target_s);
    for (int i = 1; i < n_; ++i) {
      CallCosts c = group_.decoders[i]->MeasureCallCosts(ids, 0, kCostReps, *group_.runs[i], batch_);
      draft_[i].push_back(std::move(c.draft_s));
      draft_tree_[i].push_back(std::move(c.draft_tree_s));
    }
  }

  // Point j's generation of round prompt i: one sequence, a conversation (`turns`: a
  // question's later turns follow the decoder's own answers), or one batch from prompt i.
  RawRun Generate(int j, int i, bool turns) {
    const Decoder& dec = *group_.decoders[j];
    DecoderState& state = *group_.runs[j];
    RawRun run;
    run.prompt = i;
    if (batch_ > 1) {
      const std::vector<GenerationResult> res = dec.GenerateBatch(BatchPrompts(prompts_, i, batch_), state, run.stats);
      run.output_hash = BatchOutputHash(res);
      for (const GenerationResult& r : res) run.sequence_hashes.push_back(OutputHash(r.tokens));
      return run;
    }
    const GenerationResult res = turns ? GenerateTurns(j, i) : dec.Generate(prompts_[i], state);
    run.stats = res.stats;
    run.output_hash = OutputHash(res.tokens);
    return run;
  }

  GenerationResult GenerateTurns(int j, int i) {
    const Point& p = *g_.points[j];
    const Question& q = in_.prompts.Questions(base_.part)[i];
    return GenerateConversation(*group_.decoders[j], *group_.runs[j], prompts_[i], q.turns,
                                in_.prompts.Chat(base_.model), ctx_, p.options.max_new_tokens + p.options.k + 1,
                                fmt::format("{}: point {}: question {}", e_.file, p.Name(), q.id));
  }

  const Experiment& e_;
  const Group& g_;
  SweepInputs& in_;
  const Point& base_;
  const std::vector<std::vector<int>>& prompts_;
  const int batch_, n_, rounds_, ctx_;
  GroupDecoders group_;
  Progress* progress_;
  const std::atomic<bool>* stop_;
  ProgressState where_;
  int rounds_done_ = 0;
  std::vector<std::vector<double>> target_;                           // [prompt] T(n)
  std::vector<std::vector<std::vector<double>>> draft_, draft_tree_;  // [point][prompt]
};

}  // namespace

void MeasureGroup(const Experiment& e, const Group& g, SweepInputs& in, int default_threads,
                  std::vector<RawRecord>& records, Progress* progress, const std::atomic<bool>* stop,
                  ProgressState where) {
  const Point& base = g.baseline();
  const Runtime rt = ProcessRuntime(base.threads > 0 ? base.threads : default_threads);
  GroupMeasurer m(e, g, in, rt, progress, stop, std::move(where));
  const HostSample before = SampleHost();
  m.WarmUp();
  m.Rounds(records);
  const HostLoad host = HostLoadBetween(before, SampleHost());
  m.Finish(rt, host, records);
}

}  // namespace specsweep
