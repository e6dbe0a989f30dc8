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

}  // namespace specsweep
