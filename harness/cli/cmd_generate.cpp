// `specsweep generate`: run one decoder on one prompt, stream the text, print latency,
// throughput and (speculative decoders) the acceptance statistics.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "decoders/decoder.h"
#include "decoders/settings.h"
#include "harness/store/acceptance_trace.h"
#include "harness/store/results.h"
#include "harness/report/aggregate.h"
#include "harness/report/statistics.h"
#include "harness/cli/commands.h"
#include "harness/cli/generate_batch.h"
#include "harness/measure/draft_store.h"
#include "harness/measure/process_runtime.h"
#include "base/error.h"
#include "base/status_line.h"
#include "models/chat_template.h"
#include "models/loader.h"
#include "quant/bandwidth.h"

namespace specsweep {
namespace {

struct GenerateArgs {
  std::string model, quant, prompt = "Once upon a time", chat_template = "none";
  std::vector<std::string> prompts;  // -p/--prompt as given (several: one per sequence of --batch)
  int n = 64, ctx = 0;               // ctx: -c/--ctx-size (0: the model's)
  float temp = 0.0f, top_p = 1.0f;
  int top_k = 0;
  uint64_t seed = 0;
  std::string decoder = "ar", draft, draft_model, draft_quant, k_policy = "constant", kv_type = "f32";
  std::string acceptance_source = "measured";
  int draft_layers = 0, k = 4, max_ngram = 0, min_ngram = 0;
  float draft_p_min = 0.8f;
  bool json = false, no_eos = false, draft_lookup = false, do_sample = false;
  bool bandwidth = false;  // --bandwidth: the read probe before and after the generation
  CLI::Option* temp_opt = nullptr;
  // Options given on the command line that only a speculative decoder reads.
  std::vector<CLI::Option*> spec_only;
  // --draft (the whole draft spec) and its parts, which it excludes.
  CLI::Option* draft_opt = nullptr;
  std::vector<CLI::Option*> draft_parts;
  // The table-form settings (decoders/settings.h): their options and texts.
  std::map<std::string_view, std::pair<CLI::Option*, std::string>> table;
  CLI::Option* draft_p_min_opt = nullptr;
  CLI::Option* decoder_opt = nullptr;
  CLI::Option* k_opt = nullptr;
};

// HF's do_sample: sampling on, at temperature 1 (HF's default) unless --temp gives one.
void ApplyDoSample(GenerateArgs& a) {
  if (!a.do_sample) return;
  if (a.temp_opt->count() == 0)
    a.temp = 1.0f;
  else if (a.temp == 0.0f)
    FailUsage("--do-sample: samples, but --temp 0 is greedy (give a temperature above 0, or drop --do-sample)");
}

// The ranges of the experiment files' keys (decoders/settings.h), so a value one refuses
// the other refuses too.
void CheckArgs(const GenerateArgs& a) {
  Setting("temperature").CheckRange(a.temp, "--temp");
  Setting("top_p").CheckRange(a.top_p, "--top-p");
  Setting("top_k").CheckRange(a.top_k, "--top-k");
  Setting("draft_p_min").CheckRange(a.draft_p_min, "--draft-p-min");
  Setting("k").CheckRange(a.k, "--k");
  if (ParseDecoderKind(a.decoder, "--decoder") == DecoderKind::Autoregressive)
    for (const CLI::Option* o : a.spec_only)
      if (o->count() > 0) Fail("{}: does not apply to --decoder ar (speculative decoders only)", o->get_name());
  if (a.draft_p_min_opt->count() > 0 && ParseKPolicy(a.k_policy) != KPolicy::Threshold)
    Fail("--draft-p-min: applies only to --k-policy threshold (not {})", a.k_policy);
}

// The draft spec from --draft or from its parts, with the decoder alias applied.
DraftSpec DraftFromArgs(const GenerateArgs& a) {
  auto given = [](const CLI::Option* o) { return o->count() > 0; };
  DraftSpec d;
  if (given(a.draft_opt)) {
    for (const CLI::Option* o : a.draft_parts)
      if (given(o))
        Fail("{}: not with --draft, which gives the whole draft (write it there, e.g. --draft layers=2+q4_0)",
             o->get_name());
    d = ParseDraftSpec(a.draft, "--draft");
  } else {
    DraftParts p;
    p.model = a.draft_model;
    p.layers = a.draft_layers;
    if (!a.draft_quant.empty()) p.quant = ParseQuantizeTarget(a.draft_quant, "--draft-quant");
    p.lookup = a.draft_lookup;
    for (auto [o, v, field] : {std::tuple{a.draft_parts[4], a.max_ngram, &p.max_ngram},
                               std::tuple{a.draft_parts[5], a.min_ngram, &p.min_ngram}}) {
      if (!given(o)) continue;
      if (!a.draft_lookup) Fail("{}: applies only to --draft-lookup", o->get_name());
      Setting(o == a.draft_parts[4] ? "max_ngram" : "min_ngram").CheckRange(v, o->get_name());
      *field = v;
    }
    d = DraftSpec::FromParts(std::move(p), "--draft-lookup", "lookup");
  }
  ApplyDecoderAlias(a.decoder, d, [&](std::string_view part) {
    if (given(a.draft_opt)) return fmt::format("--draft {} ({})", a.draft, part);
    return part == "lookup" ? std::string("--draft-lookup") : fmt::format("--draft-{}", part);
  });
  return d;
}

// Seconds since this process was started (exec): /proc/self/stat's start time (clock
// ticks since boot, 10 ms resolution) against CLOCK_BOOTTIME. NaN where unavailable.
double SecondsSinceProcessStart() {
  std::ifstream f("/proc/self/stat");
  const std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t comm_end = stat.rfind(')');  // the command name may hold spaces
  if (comm_end == std::string::npos) return NAN;
  std::istringstream rest(stat.substr(comm_end + 1));
  std::string field;
  for (int k = 3; k <= 22 && rest >> field; ++k) {
  }  // field 22: starttime
  timespec now{};
  if (!rest || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return NAN;
  return double(now.tv_sec) + now.tv_nsec * 1e-9 - std::stod(field) / double(sysconf(_SC_CLK_TCK));
}

// Start-up as a user sees it: from process start to the model being ready (files
// loaded, decoder built, prompt tokenized) and to the first generated token, less the
// kernel calibration of this process (kernel_calibration_s; announced on stderr).
nlohmann::json StartupJson(double ready_s, double calibration_s, const GenerationStats& s) {
  return {{"ready_s", ready_s},
          {"first_token_s", ready_s + s.first_token_latency_s},
          {"kernel_calibration_s", calibration_s}};
}

// Why a generation ended: a stop token, the requested length, or the context length.
std::string StopReason(const GenerationStats& s, int max_new_tokens) {
  if (s.stopped_at_eos) return "eos";
  return s.generated_tokens >= max_new_tokens ? "max_new_tokens" : "context";
}

// Length of the longest prefix of s that does not end inside a UTF-8 sequence, so a
// character split over two byte tokens is printed only once it is complete.
size_t CompleteUtf8Prefix(const std::string& s) {
  size_t i = s.size(), back = 0;
  while (i > 0 && back < 4 && (static_cast<unsigned char>(s[i - 1]) & 0xC0) == 0x80) --i, ++back;
  if (i == 0) return s.size();
  const unsigned char lead = static_cast<unsigned char>(s[i - 1]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return need > back + 1 ? i - 1 : s.size();
}

// Prints the new suffix of Decode(whole sequence) at each callback.
class Streamer {
 public:
  Streamer(const Tokenizer& tok, std::span<const int> prompt) : tok_(tok), seq_(prompt.begin(), prompt.end()) {}
  void Add(std::span<const int> toks) {
    seq_.insert(seq_.end(), toks.begin(), toks.end());
    Print(false);
  }
  void Flush() { Print(true); }

 private:
  void Print(bool all) {
    const std::string text = tok_.Decode(seq_);
    // Decoding may rewrite earlier bytes (rare, e.g. a leading-space rule); then only
    // the part after the common prefix can still be shown.
    size_t common = 0;
    while (common < printed_.size() && common < text.size() && printed_[common] == text[common]) ++common;
    const size_t end = all ? text.size() : CompleteUtf8Prefix(text);
    if (end > common && common == printed_.size()) {
      std::fwrite(text.data() + common, 1, end - common, stdout);
      std::fflush(stdout);
      printed_ = text.substr(0, end);
    }
  }
  const Tokenizer& tok_;
  std::vector<int> seq_;  // [prompt + generated so far]
  std::string printed_;
};

// Autoregressive decoding's time per token after the prefill, split into its Forward
// call and everything else (sampling, the logits check, statistics, output): the decode
// time over its Forward calls, so forward + outside = total.
struct PerToken {
  int calls = 0;
  double forward_s = 0, outside_s = 0, total_s = 0;
};
PerToken SplitPerToken(const GenerationStats& s) {
  PerToken p;
  p.calls = s.decode_forward_calls;
  if (p.calls == 0) return p;
  p.total_s = (s.total_s - s.prefill_s) / p.calls;
  p.forward_s = s.decode_forward_s / p.calls;
  p.outside_s = p.total_s - p.forward_s;
  return p;
}

// The harness's record of a generation plus the derived figures a reader wants at once.
nlohmann::json StatsJson(const GenerationStats& s, bool speculative) {
  nlohmann::json j = StatsToJson(s);
  if (const PerToken p = SplitPerToken(s); p.calls > 0)
    j["per_token"] = {{"forward_calls", p.calls},
                      {"forward_s", p.forward_s},
                      {"forward_median_s", s.decode_forward_median_s},
                      {"outside_s", p.outside_s},
                      {"total_s", p.total_s},
                      {"outside_over_forward", p.outside_s / p.forward_s}};
  j["stopped_at_eos"] = s.stopped_at_eos;
  j["retokenize_s"] = s.retokenize_s;  // until StatsToJson carries it
  j["acceptance_rate"] = s.acceptance_rate();
  const double tau = MeanAcceptedLength(s, speculative);  // the results' rule: null when nothing was generated
  j["mean_accepted_length"] = std::isfinite(tau) ? nlohmann::json(tau) : nlohmann::json(nullptr);
  return j;
}

void PrintSummary(const GenerationStats& s, bool speculative, double ready_s) {
  fmt::print("\n\nprompt tokens            {}\n", s.prompt_tokens);
  fmt::print("process start: ready    {:.3f} ms, first token {:.3f} ms\n", ready_s * 1e3,
             (ready_s + s.first_token_latency_s) * 1e3);
  fmt::print("generated tokens         {}{}\n", s.generated_tokens,
             s.stopped_at_eos ? " (stopped at a stop token)" : "");
  fmt::print("first-token latency      {:.3f} ms\n", s.first_token_latency_s * 1e3);
  fmt::print("mean next-token latency  {:.3f} ms\n", s.mean_next_token_latency_s * 1e3);
  fmt::print("tokens/s                 {:.1f}\n", s.tokens_per_s);
  fmt::print("time prefill/draft/verify/other  {:.3f}/{:.3f}/{:.3f}/{:.3f} ms (total {:.3f} ms)\n", s.prefill_s * 1e3,
             s.draft_s * 1e3, s.verify_s * 1e3, s.other_s * 1e3, s.total_s * 1e3);
  if (const PerToken p = SplitPerToken(s); p.calls > 0)
    fmt::print("per token (decode)       forward {:.3f} ms + outside {:.4f} ms = {:.3f} ms (outside {:.3f}%)\n",
               p.forward_s * 1e3, p.outside_s * 1e3, p.total_s * 1e3, 100 * p.outside_s / p.forward_s);
  if (!speculative) return;
  fmt::print("target calls             {}\n", s.target_calls);
  fmt::print("draft calls              {}\n", s.draft_calls);
  fmt::print("drafted / accepted       {} / {}\n", s.drafted, s.accepted);
  fmt::print("acceptance rate          {:.4f}\n", s.acceptance_rate());
  const double tau = MeanAcceptedLength(s, speculative);
  if (std::isfinite(tau))
    fmt::print("mean accepted length     {:.3f} tokens per target call\n", tau);
  else
    fmt::print("mean accepted length     - (nothing generated)\n");
  const double mean_k =
      s.k_per_step.empty() ? 0.0 : std::accumulate(s.k_per_step.begin(), s.k_per_step.end(), 0.0) / s.k_per_step.size();
  fmt::print("mean K per step          {:.3f}\n", mean_k);
  std::vector<std::string> pos;
  for (size_t i = 0; i < s.drafted_at_pos.size(); ++i)
    pos.push_back(fmt::format("{}:{}/{}", i + 1, s.accepted_at_pos[i], s.drafted_at_pos[i]));
  fmt::print("accepted/drafted by pos  {}\n", fmt::join(pos, " "));
  if (s.draft_calls > 0 && s.target_calls > 0)
    fmt::print("ms per draft call        {:.4f}\nms per target call       {:.4f}\n", s.draft_s * 1e3 / s.draft_calls,
               s.verify_s * 1e3 / s.target_calls);
  if (s.retokenize_s > 0 && s.target_calls > 0)
    fmt::print("ms re-tokenizing / step  {:.4f} (part of draft time)\n", s.retokenize_s * 1e3 / s.target_calls);
}

// The decoder options the arguments ask for (a trace acceptance source loaded).
DecoderOptions OptionsFromArgs(const GenerateArgs& a) {
  DecoderOptions o;
  o.kind = ParseDecoderKind(a.decoder, "--decoder");
  o.k_policy = ParseKPolicy(a.k_policy);
  o.draft_p_min = a.draft_p_min;
  if (o.kind == DecoderKind::Speculative) o.draft = DraftFromArgs(a);
  if (o.kind == DecoderKind::Speculative && !o.draft.ModelFree() && o.draft.model().empty() && o.draft.IsSelf())
    Fail(
        "--decoder {}: needs a draft (--draft q4_0, --draft-model M, --draft-layers L, --draft-quant Q or "
        "--draft-lookup)",
        a.decoder);
  o.k = a.k_opt->count() > 0 ? a.k : DefaultK(o.draft);  // not given: a tree's size sets it
  o.acceptance_source = ParseAcceptanceSource(a.acceptance_source, "--acceptance-source");
  o.max_new_tokens = a.n;
  o.stop_at_eos = !a.no_eos;
  o.sampling.temperature = a.temp;
  o.sampling.top_k = a.top_k;
  o.sampling.top_p = a.top_p;
  o.sampling.seed = a.seed;
  o.kv_type = ParseKvType(a.kv_type, "--kv-type");
  for (const auto& [name, given] : a.table)
    if (given.first->count() > 0) Setting(name).parse(o, given.second, given.first->get_name());
  return o;
}

// A trace acceptance source's records, checked against every setting of `o`.
void LoadTraces(DecoderOptions& o) {
  if (o.acceptance_source.kind != AcceptanceSource::Kind::Trace) return;
  auto t = std::make_shared<const RecordedTraces>(
      LoadAcceptanceTraces(o.acceptance_source.trace, "", "--acceptance-source"));
  CheckTraceShape(*t, o, "--acceptance-source");
  o.acceptance_source.traces = std::shared_ptr<const std::vector<AcceptanceTrace>>(t, &t->runs);
}

// What a generation ran: the target, its decoder and prompt, and the types its weights
// are stored as (a partial fallback is part of the label).
struct Run {
  LoadedModel target;
  DecoderOptions o;
  std::unique_ptr<Decoder> dec;
  ChatTemplate tpl;
  std::vector<int> prompt;
  std::vector<std::string> batch_texts;         // --batch > 1: each sequence's prompt
  std::vector<std::vector<int>> batch_prompts;  // and its ids
  std::map<std::string, int> target_types, draft_types;
  std::string target_label, draft_label;
  double ready_s = 0;
  double calibration_s = 0;  // of the kernels, in this process: left out of ready_s
};

Run PrepareRun(const GenerateArgs& a) {
  Run r;
  // "none" (the experiment files' name) keeps the weights as loaded.
  const bool quantize = !a.quant.empty() && a.quant != "none";
  AsUsage([&] {  // the options' values first: a misspelt one fails before seconds of loading
    if (quantize) ParseQuantizeTarget(a.quant, "--quant");
    r.o = OptionsFromArgs(a);
    r.tpl = ParseChatTemplate(a.chat_template, "--template");
    r.batch_texts = BatchPromptTexts(a.prompts, a.prompt, r.o.batch);
    return 0;
  });
  LoadTraces(r.o);
  const Runtime rt = ProcessRuntime(Globals().threads);  // before loading: weights are packed for its kernels
  // -c/--ctx-size as llama.cpp's n_ctx: a prompt that fills it is an error, and the
  // generation stops when it is full (no context shift).
  r.target = LoadModel(a.model, Globals().models_dir, a.ctx);
  if (quantize) r.target = WithQuant(r.target, ParseQuantizeTarget(a.quant, "--quant"));
  const SharedDraftModels drafts(Globals().models_dir);
  r.dec = MakeDecoder(r.target, r.o, DecoderEnv{rt, &drafts});
  const Tokenizer& tok = *r.target.tokenizer;
  for (const std::string& text : r.batch_texts) {
    std::vector<int> ids = r.tpl.name == "none" ? tok.Encode(text, tok.add_bos_default())
                                                : ChatEncoder(tok, r.tpl, "--template").EncodeTurns({text}, {});
    if (a.ctx > 0 && int(ids.size()) >= a.ctx)
      FailUsage("-c/--ctx-size: the prompt is {} tokens: a context of {} leaves no room to generate", ids.size(),
                a.ctx);
    r.batch_prompts.push_back(std::move(ids));
  }
  r.prompt = r.batch_prompts[0];
  if (r.o.batch == 1) r.batch_prompts.clear(), r.batch_texts.clear();
  r.target_types = MatrixTypeCounts(*r.target.model), r.draft_types = r.dec->draft_types();
  r.target_label =
      quantize ? StoredTypesLabel(std::string(QTypeName(ParseQuantizeTarget(a.quant, "--quant"))), r.target_types)
               : "none";
  r.draft_label =
      r.o.draft.quant() ? StoredTypesLabel(std::string(QTypeName(*r.o.draft.quant())), r.draft_types) : "none";
  for (auto [who, label] : {std::pair{"target", &r.target_label}, {"draft", &r.draft_label}})
    if (label->find(' ') != std::string::npos)
      fmt::print(stderr, "notice: {} weights are {} (the other matrices' rows are no whole number of blocks)\n", who,
                 *label);
  // A first process of a build (or thread count) times the kernel families for seconds:
  // start-up as a user will see it again leaves that out (and says so).
  r.calibration_s = rt.kernels.calibration_s;
  r.ready_s = SecondsSinceProcessStart() - r.calibration_s;
  return r;
}

// --bandwidth: the read probe (quant/bandwidth.h) just before and after the generation,
// which names the memory phase its timings met.
struct Bandwidth {
  double before_gbs = 0, after_gbs = 0;
};

void PrintJson(const GenerateArgs& a, const Run& run, const GenerationResult& r, const Bandwidth& bw) {
  const DecoderOptions& o = run.o;
  nlohmann::json j = {{"model", a.model},
                      {"quant", run.target_label},
                      {"target_types", run.target_types},
                      {"decoder", DecoderKindName(o.kind)},
                      {"kv_type", KvTypeName(o.kv_type)},
                      {"prompt", a.prompt},
                      {"template", ChatTemplateLabel(run.tpl)},
                      {"prompt_ids", run.prompt},
                      {"text", o.acceptance_source.replayed() ? nlohmann::json(nullptr) : nlohmann::json(r.text)},
                      {"tokens", r.tokens},
                      {"generated_tokens", r.stats.generated_tokens},
                      {"stop_reason", StopReason(r.stats, a.n)},
                      {"sampling", {{"temperature", a.temp}, {"top_k", a.top_k}, {"top_p", a.top_p}, {"seed", a.seed}}},
                      {"stats", StatsJson(r.stats, o.kind != DecoderKind::Autoregressive)},
                      {"startup", StartupJson(run.ready_s, run.calibration_s, r.stats)}};
  if (a.bandwidth) j["read_bandwidth"] = {{"before_gbs", bw.before_gbs}, {"after_gbs", bw.after_gbs}};
  // The results files' names (Point::ParamsJson) for the same things.
  const LookupDraft* lookup = o.draft.get<LookupDraft>();
  if (o.kind != DecoderKind::Autoregressive)
    j["speculative"] = {{"k", o.k},
                        {"k_policy", a.k_policy},
                        {"k_label", KLabel(o.k, o.k_policy)},
                        {"draft_p_min", a.draft_p_min},
                        {"draft", o.draft.Label()},
                        {"draft_base", o.draft.BaseLabel()},
                        {"draft_quant", run.draft_label},
                        {"draft_types", run.draft_types},
                        {"max_ngram", lookup ? lookup->max_ngram : 0},
                        {"min_ngram", lookup ? lookup->min_ngram : 0},
                        {"acceptance_source", o.acceptance_source.Label()}};
  fmt::print("{}\n", DumpJson(j, 2));
}

// Streams the prompt and the new text as they come.
GenerationResult StreamText(const Run& run) {
  Streamer streamer(*run.target.tokenizer, std::span<const int>(run.prompt).first(0));
  // The prompt text is echoed with the first new tokens, so an invalid prompt (e.g.
  // longer than the context) fails before anything is printed.
  bool echoed = false;
  GenerationResult r = run.dec->Generate(run.prompt, [&](std::span<const int> t) {
    if (!std::exchange(echoed, true)) streamer.Add(run.prompt);
    streamer.Add(t);
  });
  if (!echoed) streamer.Add(run.prompt);
  streamer.Flush();
  return r;
}

void RunGenerate(GenerateArgs a) {
  // As in HF generate() (assistant_model) and llama.cpp (-md): giving a draft turns
  // speculation on, unless --decoder says otherwise.
  if (a.decoder_opt->count() == 0 &&
      (a.draft_opt->count() > 0 ||
       std::any_of(a.draft_parts.begin(), a.draft_parts.end(), [](auto* o) { return o->count() > 0; })))
    a.decoder = "speculative";
  AsUsage([&] {
    ApplyDoSample(a);
    CheckArgs(a);
    return 0;
  });
  const Run run = PrepareRun(a);
  if (run.o.batch > 1) {
    if (a.bandwidth) FailUsage("--bandwidth: not with --batch (one sequence's generation only)");
    return RunBatchGenerate(BatchGenerate{run.dec.get(), run.target.tokenizer.get(), a.model, run.target_label,
                                          run.batch_texts, run.batch_prompts, a.json});
  }
  const bool spec = run.o.kind != DecoderKind::Autoregressive;
  // Replayed acceptance keeps draft tokens whatever they are: the text is no model's.
  const bool replayed = run.o.acceptance_source.replayed();
  GenerationResult r;
  Bandwidth bw;
  if (a.bandwidth) bw.before_gbs = MeasureReadBandwidthGBs();
  if (a.json) {
    r = run.dec->Generate(run.prompt);
    if (a.bandwidth) bw.after_gbs = MeasureReadBandwidthGBs();
    PrintJson(a, run, r, bw);
  } else if (replayed) {
    r = run.dec->Generate(run.prompt);
    fmt::print(
        "text not shown: acceptance {} (draft tokens kept by the source, not by the target's choice); "
        "the timings and counts below are real for that acceptance",
        run.o.acceptance_source.Caption());
    PrintSummary(r.stats, spec, run.ready_s);
  } else {
    r = StreamText(run);
    PrintSummary(r.stats, spec, run.ready_s);
  }
  if (a.bandwidth && !a.json)
    fmt::print("read bandwidth           {:.2f} GB/s before, {:.2f} GB/s after\n", bw.before_gbs,
               bw.after_gbs = MeasureReadBandwidthGBs());
  if (StopReason(r.stats, a.n) == "context")
    fmt::print(stderr, "notice: stopped at the context length ({} positions) after {} of {} tokens\n",
               run.target.model->config.max_seq_len, r.stats.generated_tokens, a.n);
}

CommandRegistrar reg(30, [](CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Generate text with one decoder and print its statistics");
  cmd->add_option("-m,--model", a->model, "Target model (folder in the models dir, or path)")->required();
  cmd->add_option("--quant", a->quant, "Quantize the target in memory (none, f32, q8_0, q4_0, ...)");
  cmd->add_option("-p,--prompt", a->prompts,
                  "Prompt text (BOS is prepended); with --batch B, give it once (every sequence) or B times (one "
                  "per sequence)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--template", a->chat_template,
                  "Chat format around the prompt: none (default), vicuna, llama-3, chatml, or a format with {prompt}");
  cmd->add_option("-n,--max-new-tokens", a->n, "Tokens to generate")->check(IntAtLeast(0));
  cmd->add_option("-c,--ctx-size", a->ctx,
                  "Context length (llama.cpp's -c): at most the model's; the generation stops when it is full "
                  "(0: the model's)")
      ->check(IntAtLeast(0));
  a->temp_opt =
      cmd->add_option(std::string(Setting("temperature").flag), a->temp, std::string(Setting("temperature").help));
  cmd->add_flag("--do-sample", a->do_sample,
                "Sample (Hugging Face's do_sample): at temperature 1 unless --temp gives one");
  cmd->add_option("--top-k", a->top_k, "Top-k (0: off)");
  cmd->add_option("--top-p", a->top_p, "Top-p (1: off)");
  cmd->add_option("--seed", a->seed, "Sampling seed")->check(SeedRange());
  cmd->add_option("--kv-type", a->kv_type, "KV cache type of target and draft: f32 (default), f16");
  a->decoder_opt = cmd->add_option("--decoder", a->decoder,
                                   "ar | speculative; aliases of speculative: assisted (a separate draft model), "
                                   "self-spec (the target quantized in memory, q4_0 unless --draft-quant). Default: "
                                   "speculative when a draft is given, else ar");
  a->draft_opt = cmd->add_option("--draft", a->draft,
                                 "The whole draft, as in experiment files: q4_0, layers=2+q8_0, model=NAME, "
                                 "lookup+max_ngram=4 (or give its parts below)");
  a->draft_parts = {
      cmd->add_option("--draft-model,--model-draft", a->draft_model,
                      "Separate draft model (another tokenizer: bridged through text, greedy only); llama.cpp's -md"),
      cmd->add_option("--draft-layers", a->draft_layers, "Early-exit draft: first L blocks (0: all)"),
      cmd->add_option("--draft-quant", a->draft_quant, "Draft weights quantized in memory"),
      cmd->add_flag("--draft-lookup", a->draft_lookup, "Prompt-lookup draft (n-gram copy, no model)"),
      cmd->add_option("--max-ngram", a->max_ngram, "Lookup draft: longest n-gram matched (default 3)")->default_str(""),
      cmd->add_option("--min-ngram", a->min_ngram, "Lookup draft: shortest n-gram matched (default 1)")
          ->default_str("")};
  a->spec_only = a->draft_parts;
  a->spec_only.push_back(a->draft_opt);
  a->spec_only.push_back(a->k_opt = cmd->add_option("--k,--draft-max", a->k,
                                                    "Draft length K: every step (constant), the bound "
                                                    "(threshold, adaptive), the start (heuristic); default 4, "
                                                    "a token tree's size for a tree draft"));
  a->spec_only.push_back(cmd->add_option("--k-policy", a->k_policy, "constant | heuristic | threshold | adaptive"));
  a->spec_only.push_back(a->draft_p_min_opt =
                             cmd->add_option("--draft-p-min", a->draft_p_min,
                                             "Threshold policy: stop drafting below this top probability"));
  a->spec_only.push_back(cmd->add_option(
      "--acceptance-source", a->acceptance_source,
      "measured (default) | alpha=A | positions=[p1,p2,...] | trace=RESULTS[:POINT]: accepted draft tokens per "
      "step drawn from a source instead of compared (real draft, verify and rollback; the text is not shown)"));
  for (const DecoderSetting& s : DecoderSettings()) {
    if (s.form != DecoderSetting::Form::Table) continue;
    auto& [opt, text] = a->table[s.name];
    opt = cmd->add_option(std::string(s.flag), text, std::string(s.help))->default_str("");
    if (s.speculative_only) a->spec_only.push_back(opt);
  }
  a->table.at("batch").first->description(std::string(Setting("batch").help) +
                                          " (generate: printed once the batch is done, no streaming)");
  cmd->add_flag("--no-eos", a->no_eos, "Do not stop at EOS");
  cmd->add_flag("--json", a->json, "Print one JSON object instead of streaming text");
  cmd->add_flag("--bandwidth", a->bandwidth,
                "Read the memory bandwidth probe (about 1 s) before and after the generation, which names its "
                "memory phase");
  cmd->callback([a] {
    StatusLine status;  // a live line on a terminal while loading a large model
    if (!a->prompts.empty()) a->prompt = a->prompts[0];
    RunGenerate(*a);
  });
});

}  // namespace
}  // namespace specsweep
