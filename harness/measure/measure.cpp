#include "harness/measure/measure.h"

#include "harness/store/acceptance_trace.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "decoders/draft_policy.h"
#include "decoders/draft_vocabulary.h"
#include "harness/measure/context.h"
#include "harness/measure/conversation.h"
#include "harness/measure/process_runtime.h"
#include "harness/sweep/draft_tokenizer.h"
#include "harness/sweep/experiment_files.h"
#include "harness/sweep/prompts.h"
#include "harness/store/acceptance_trace.h"
#include "harness/store/sha256.h"
#include "base/error.h"
#include "base/text_input.h"
#include "models/forward.h"
#include "quant/matmul.h"

using nlohmann::json;

namespace specsweep {

// ---------------------------------------------------------------------------------
// Decoder options

DecoderOptions SweepInputs::Options(const Point& p) {
  DecoderOptions o = p.Options();
  AcceptanceSource& a = o.acceptance_source;
  if (a.kind == AcceptanceSource::Kind::Trace) {
    const std::string what = fmt::format("{}: {}: acceptance_source", e_.file, p.Name());
    auto& t = traces_[a.trace];
    if (!t)  // found by the rule of every file the experiment names
      t = std::make_shared<const RecordedTraces>(
          LoadAcceptanceTraces(ResolveTraceRef(a.trace, e_.file, e_.models_dir, p.Name()), "", what));
    CheckTraceShape(*t, o, what);  // per point: points may share a trace
    a.traces = std::shared_ptr<const std::vector<AcceptanceTrace>>(t, &t->runs);
  }
  return o;
}

namespace {

// A REST corpus's sha256, checked first: hashing /dev/zero would never end.
std::string CorpusSha(const std::string& path, const std::string& what) {
  try {
    CheckTextInput(path, "rest corpus");
  } catch (const Error& e) {
    Fail("{}: {}", what, e.what());
  }
  return Sha256File(path);
}

}  // namespace

ModelFiles SweepInputs::InputFilesOf(const Point& p) {
  ModelFiles out;
  if (const RestDraft* r = p.options.draft.get<RestDraft>()) {
    auto& sha = corpus_sha_[r->corpus];
    if (sha.empty()) sha = CorpusSha(r->corpus, fmt::format("{}: point {}: draft", e_.file, p.Name()));
    out.push_back({"corpus", std::filesystem::path(r->corpus).filename().string(), sha});
  }
  if (p.options.acceptance_source.kind == AcceptanceSource::Kind::Trace) {
    Options(p);  // loads the trace once
    out.push_back(traces_.at(p.options.acceptance_source.trace)->file);
  }
  return out;
}

// ---------------------------------------------------------------------------------
// Identity

namespace {

std::string FileSha(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ? Sha256File(path) : "";  // not /dev/zero: never ends
}

std::string OutputHash(const std::vector<int>& tokens) {
  std::string bytes(reinterpret_cast<const char*>(tokens.data()), tokens.size() * sizeof(int));
  return Sha256Hex(bytes).substr(0, 16);
}

std::string PromptSha(const std::vector<std::vector<int>>& prompts) {
  json j = prompts;
  return Sha256Hex(j.dump());
}

}  // namespace

std::string ExperimentSha256(const Experiment& e) {
  json keys = json::array();
  for (auto& p : e.points) keys.push_back(p.Key());
  json doc{{"name", e.name},
           {"points", keys},
           {"repetitions", e.repetitions},
           {"warmup", e.warmup},
           {"prompts", json{{"count", e.prompts.count},
                            {"file_sha256", FileSha(e.prompts.file)},
                            {"passages_sha256", FileSha(e.prompts.passages)}}}};
  // Only what differs from a plain prompt file, so older experiments keep their sha.
  if (e.chat_template.name != "none") doc["template"] = ChatTemplateLabel(e.chat_template);
  if (e.prompts.questions) {
    const QuestionSelection& s = e.prompts.selection;
    doc["questions"] = json{{"turns", e.prompts.all_turns ? "all" : "first"},
                            {"categories", s.categories},
                            {"per_category", s.per_category},
                            {"select", s.select},
                            {"max_chars", s.max_chars},
                            {"groups", s.groups}};
  }
  return Sha256Hex(doc.dump());
}

std::vector<RawRecord> DescribeGroup(const Experiment& e, const std::string& experiment_sha, const Group& g,
                                     SweepInputs& in) {
  std::vector<std::string> keys;
  for (auto* p : g.points) keys.push_back(p->Key());
  std::vector<RawRecord> out;
  for (auto* p : g.points) {
    RawRecord r;
    r.key = p->Key();
    r.baseline_key = p->speculative() ? p->Baseline().Key() : "";
    r.name = p->Name();
    r.params = p->ParamsJson();
    r.repetitions = e.repetitions;
    r.warmup = e.warmup;
    const auto& prompts = in.prompts.Prompts(p->model, p->input_length, p->part);
    for (auto& ids : prompts) r.prompt_tokens.push_back(int(ids.size()));
    r.prompt_categories = in.prompts.PromptCategories(p->input_length, p->part);
    r.prompt_set = in.prompts.PromptSetJson(p->input_length, p->part);
    r.identity.experiment_sha256 = experiment_sha;
    r.identity.prompt_sha256 = PromptSha(prompts);
    r.identity.model_files = in.models.ModelFilesOf(*p);
    for (ModelFile& f : in.InputFilesOf(*p)) r.identity.model_files.push_back(std::move(f));
    std::sort(r.identity.model_files.begin(), r.identity.model_files.end());
    r.identity.group = keys;
    out.push_back(std::move(r));
  }
  return out;
}

// ---------------------------------------------------------------------------------
// Measuring

void Preflight(const Experiment& e, const Group& g, SweepInputs& in) {
  for (auto* p : g.points) {
    const LoadedModel& t = in.models.Base(p->model);
    const auto& prompts = in.prompts.Prompts(p->model, p->input_length, p->part);
    const int ctx = t.model->config.max_seq_len;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const int need = int(prompts[i].size()) + p->options.max_new_tokens + p->options.k + 1;
      if (need > ctx)
        Fail("{}: point {}: prompt {} ({} tokens) + max_new_tokens {} + k {} exceeds the context of {} tokens", e.file,
             p->Name(), i, prompts[i].size(), p->options.max_new_tokens, p->options.k, ctx);
    }
    // A conversation's last turn holds every turn and up to max_new_tokens per answer.
    if (e.prompts.questions && e.prompts.all_turns && p->input_length == 0)
      for (auto& q : in.prompts.Questions(p->part)) {
        if (q.turns.size() < 2) continue;
        const std::vector<int> all =
            in.prompts.Chat(p->model).EncodeTurns(q.turns, std::vector<std::string>(q.turns.size() - 1, ""));
        const int need = int(all.size()) + int(q.turns.size()) * p->options.max_new_tokens + p->options.k + 1;
        if (need > ctx)
          Fail(
              "{}: point {}: question {}: its {} turns ({} tokens) + max_new_tokens {} per answer + k {} can "
              "exceed the context of {} tokens",
              e.file, p->Name(), q.id, q.turns.size(), all.size(), p->options.max_new_tokens, p->options.k, ctx);
      }
    DecoderOptions opt = in.Options(*p);
    opt.max_new_tokens = 1;
    opt.sampling = {};
    try {
      MakeDecoder(in.models.Target(p->model, p->target_quant), opt, DecoderEnv{Runtime{}, &in.models.Drafts()});
    } catch (const Error& err) {
      Fail("{}: point {}: {}", e.file, p->Name(), err.what());
    }
  }
}

namespace {

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

}  // namespace

void MeasureGroup(const Experiment& e, const Group& g, SweepInputs& in, int default_threads,
                  std::vector<RawRecord>& records, Progress* progress, const std::atomic<bool>* stop,
                  ProgressState where) {
  const Point& base = g.baseline();
  const auto& prompts = in.prompts.Prompts(base.model, base.input_length, base.part);
  const int rounds = e.repetitions * int(prompts.size());
  int rounds_done = 0;
  auto at = [&](const char* stage, int round, const Point& p) {
    if (stop && stop->load()) throw Interrupted(rounds_done, rounds);
    if (!progress) return;
    where.stage = stage;
    where.round = round;
    where.rounds = rounds;
    where.point = p.Name();
    progress->Set(where);
  };
  const Runtime rt = ProcessRuntime(base.threads > 0 ? base.threads : default_threads);
  const int n = int(g.points.size());
  GroupDecoders group = MakeGroupDecoders(g, in, rt);
  auto& decoders = group.decoders;  // not a structured binding: the lambdas below capture them
  auto& runs = group.runs;

  const HostSample before = SampleHost();
  for (int w = 0; w < e.warmup; ++w)
    for (int j = 0; j < n; ++j) {
      at("warm-up", 0, *g.points[j]);
      decoders[j]->Generate(prompts[0], *runs[j]);
    }

  // Cost model: the target's batches through the baseline, each draft through its point,
  // on each prompt at the start of its round of the first repetition, so that the call
  // times and the generations they predict share the host's minutes. (Timed once before
  // all rounds, T(1) came out 9% and 20% above the baseline's own calls in the rounds
  // at 7B and 1.1B: issue #31, docs/reproducing.md.)
  const int ctx = in.models.Base(base.model).model->config.max_seq_len;
  std::vector<std::vector<double>> target;
  std::vector<std::vector<std::vector<double>>> draft(n), draft_tree(n);
  auto measure_costs = [&](const std::vector<int>& ids) {
    at("cost model", 0, base);
    const int n_max = std::min(VerifyBatchMax(g), ctx - int(ids.size()));
    target.push_back(decoders[0]->MeasureCallCosts(ids, n_max, kCostReps, *runs[0]).target_s);
    for (int i = 1; i < n; ++i) {
      CallCosts c = decoders[i]->MeasureCallCosts(ids, 0, kCostReps, *runs[i]);
      draft[i].push_back(std::move(c.draft_s));
      draft_tree[i].push_back(std::move(c.draft_tree_s));
    }
  };

  // Rounds: every point once per (repetition, prompt), in rotated order. A question's
  // later turns (turns: all) follow each decoder's own answers.
  const int n_prompts = int(prompts.size());
  const bool conversation = e.prompts.questions && e.prompts.all_turns && base.input_length == 0;
  const std::vector<Question>& questions = in.prompts.Questions(base.part);
  std::vector<int> reserve;
  for (auto* p : g.points) reserve.push_back(p->options.max_new_tokens + p->options.k + 1);
  auto what = [&](int j, int i) {
    return fmt::format("{}: point {}: question {}", e.file, g.points[j]->Name(), questions[i].id);
  };
  for (int rep = 0; rep < e.repetitions; ++rep)
    for (int i = 0; i < n_prompts; ++i) {
      const int round = rep * n_prompts + i;
      if (rep == 0) measure_costs(prompts[i]);
      const std::vector<int> order = RoundOrder(n, round);
      for (int slot = 0; slot < n; ++slot) {
        const int j = order[slot];
        at("round", round + 1, *g.points[j]);
        GenerationResult res = conversation
                                   ? GenerateConversation(*decoders[j], *runs[j], prompts[i], questions[i].turns,
                                                          in.prompts.Chat(base.model), ctx, reserve[j], what(j, i))
                                   : decoders[j]->Generate(prompts[i], *runs[j]);
        records[j].runs.push_back(RawRun{i, rep, round, slot, res.stats, OutputHash(res.tokens)});
        if (progress) progress->GenerationDone();
      }
      ++rounds_done;
    }
  const HostLoad host = HostLoadBetween(before, SampleHost());
  const std::vector<double> target_s = MedianOver(target);
  for (int j = 0; j < n; ++j) {
    records[j].costs.target_s = target_s;
    records[j].costs.draft_s = MedianOver(draft[j]);
    records[j].costs.draft_tree_s = MedianOver(draft_tree[j]);
    DescribeRun(*g.points[j], *decoders[j], rt, host, in, records[j]);
  }
}

}  // namespace specsweep
