#include "harness/sweep/experiment.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "base/error.h"
#include "base/text_input.h"
#include "harness/sweep/experiment_files.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/schema.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {

using namespace schema;

namespace {

// The prompts: keys of a question set (a .jsonl file); Error for them on a prompt file.
void ParseQuestionKeys(const Ctx& c, const json& p, PromptSet& ps) {
  for (const char* k : {"turns", "categories", "per_category", "select", "max_chars", "groups", "chunk"})
    if (p.contains(k) && !ps.questions)
      c.Bad(std::string("prompts.") + k, "applies to a question set (a .jsonl prompts.file) only");
  if (!ps.questions) return;
  if (p.contains("count")) c.Bad("prompts.count", "a question set takes per_category (questions per group)");
  QuestionSelection& s = ps.selection;
  if (p.contains("turns")) {
    const std::string t = c.Str(p["turns"], "prompts.turns");
    if (t != "first" && t != "all") c.Bad("prompts.turns", fmt::format("'{}' (expected first, all)", t));
    ps.all_turns = t == "all";
  }
  if (p.contains("categories"))
    for (auto& [x, xp] : c.Axis(p["categories"], "prompts.categories")) s.categories.push_back(c.Str(x, xp));
  if (p.contains("per_category")) s.per_category = int(c.Int(p["per_category"], "prompts.per_category", 1, 100000));
  if (p.contains("select")) {
    s.select = c.Str(p["select"], "prompts.select");
    if (s.select != "first" && s.select != "shortest")
      c.Bad("prompts.select", fmt::format("'{}' (expected first, shortest)", s.select));
  }
  if (p.contains("chunk")) s.chunk = int(c.Int(p["chunk"], "prompts.chunk", 1, 100000));
  if (p.contains("max_chars")) s.max_chars = int(c.Int(p["max_chars"], "prompts.max_chars", 16, 1 << 24));
  if (p.contains("groups"))
    for (auto& [raw, g] : c.Map(p["groups"], "prompts.groups").items())
      s.groups[raw] = c.Str(g, "prompts.groups." + raw);
}

void ParseName(const Ctx& c, const json& doc, Experiment& e) {
  if (!doc.contains("name")) c.Bad("name", "missing");
  e.name = c.Str(doc["name"], "name");
  for (char ch : e.name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.'))
      c.Bad("name", fmt::format("'{}' is not usable as a file name (letters, digits, _ - . only)", e.name));
  if (doc.contains("description")) c.Str(doc["description"], "description");
}

void ParseModels(const Ctx& c, const json& doc, Experiment& e) {
  if (!doc.contains("models")) c.Bad("models", "missing");
  // Looked for once the plan is known: a shard or --skip-missing-models needs only some
  // (measure/model_store.h MissingModels).
  for (auto& [m, mp] : c.Axis(doc["models"], "models")) e.models.push_back(c.Str(m, mp));
}

// Where the prompt files were looked for: an unused one may be missing.
struct PromptFiles {
  std::string file_written, passages_written;
  ExperimentFile file, passages;
};

// Prompts: natural prompts from a file, or cuts of the passages for input_length (an
// axis of every decoder, into `global`).
PromptFiles ParsePrompts(const Ctx& c, const json& doc, Experiment& e, Axes& global) {
  std::string prompt_file = "prompts/tinystories.txt", passages = "prompts/passages.txt";
  e.prompts.count = 4;
  if (doc.contains("prompts")) {
    const json& p = c.Map(doc["prompts"], "prompts");
    c.CheckKeys(p, "prompts",
                {"file", "count", "passages", "input_lengths", "category", "turns", "categories", "per_category",
                 "select", "max_chars", "groups", "chunk"});
    if (p.contains("category")) {
      e.prompts.category = c.Str(p["category"], "prompts.category");
      if (e.prompts.category != "free" && e.prompts.category != "grounded")
        c.Bad("prompts.category", fmt::format("unknown category '{}' (expected free, grounded)", e.prompts.category));
    }
    if (p.contains("file")) prompt_file = c.Str(p["file"], "prompts.file");
    if (p.contains("passages")) passages = c.Str(p["passages"], "prompts.passages");
    if (p.contains("count")) e.prompts.count = int(c.Int(p["count"], "prompts.count", 1, 100000));
    if (p.contains("input_lengths")) {
      const DecoderSetting& s = AnySetting("input_length");
      global.input_length.clear();
      for (auto& [x, xp] : c.Axis(p["input_lengths"], "prompts.input_lengths"))
        global.input_length.push_back(int(c.Int(x, xp, s.range.IntLo(), s.range.IntHi())));
    }
  }
  PromptFiles f{prompt_file, passages, FindExperimentFile(prompt_file, e.file, e.models_dir),
                FindExperimentFile(passages, e.file, e.models_dir)};
  e.prompts.file = f.file.path.empty() ? f.file.tried[0] : f.file.path;
  e.prompts.passages = f.passages.path.empty() ? f.passages.tried[0] : f.passages.path;
  e.prompts.questions = fs::path(e.prompts.file).extension() == ".jsonl";
  if (doc.contains("prompts")) ParseQuestionKeys(c, doc["prompts"], e.prompts);
  return f;
}

// The prompt files the points read exist and are files.
void CheckPromptFiles(const Ctx& c, const Experiment& e, const PromptFiles& f, const std::vector<Point>& ar,
                      const std::vector<Point>& spec) {
  bool uses_passages = false, uses_file = false;
  for (auto* v : {&ar, &spec})
    for (auto& pt : *v) (pt.input_length > 0 ? uses_passages : uses_file) = true;
  for (auto [used, path, key, written, found] :
       {std::tuple{uses_passages, e.prompts.passages, "prompts.passages", f.passages_written, f.passages},
        std::tuple{uses_file, e.prompts.file, "prompts.file", f.file_written, f.file}}) {
    if (!used) continue;
    if (found.path.empty()) throw Error(FileNotFound(written, found, e.file, key));
    if (fs::is_directory(path))
      c.Bad(key, fmt::format("'{}' is a directory; give a text file ({})", path,
                             std::string(key) == "prompts.file" ? "one prompt per line"
                                                                : "passages separated by blank lines"));
    try {  // a device or FIFO would be hashed and read forever
      CheckTextInput(path, std::string(key) == "prompts.passages" ? "passages file"
                           : e.prompts.questions                  ? "question file"
                                                                  : "prompt file");
    } catch (const Error& err) {
      c.Bad(key, err.what());
    }
  }
}

// A point's key names a REST corpus or a replayed trace by file name (its records by
// content), so two different files of one name would be one point: refuse them.
void CheckFileNamesDistinct(const Ctx& c, const std::vector<Point>& spec) {
  std::map<std::string, std::string> by_name;  // "corpus c.txt" -> the path as written
  auto check = [&](const std::string& role, const std::string& path) {
    const std::string normal = fs::path(path).lexically_normal().string();
    auto [it, fresh] = by_name.emplace(role + " " + fs::path(path).filename().string(), normal);
    if (!fresh && it->second != normal)
      c.Bad("decoders", fmt::format("'{}' names two {} files ({} and {}): a point's key names its {} by file "
                                    "name, so both would be one point; rename one",
                                    fs::path(path).filename().string(), role, it->second, normal, role));
  };
  for (const Point& pt : spec) {
    if (const RestDraft* r = pt.options.draft.get<RestDraft>()) check("REST corpus", r->corpus);
    const AcceptanceSource& a = pt.options.acceptance_source;
    if (a.kind == AcceptanceSource::Kind::Trace) check("trace", a.trace.substr(0, a.trace.find(':')));
  }
}

// A conversation (turns: all) feeds each answer into the next turn, one sequence at a
// time: a batch of them has no defined rounds, so it is refused when the file is read.
void CheckConversationBatch(const Ctx& c, const Experiment& e) {
  if (!e.prompts.questions || !e.prompts.all_turns) return;
  for (const Point& pt : e.points)
    if (pt.options.batch > 1 && pt.input_length == 0)
      c.Bad("prompts.turns", fmt::format("all (conversations) decodes one sequence at a time, but point {} has "
                                         "batch {}: use turns: first, or batch 1",
                                         pt.Name(), pt.options.batch));
}

// Every decoder entry over the axes, then baselines and groups in order.
void ExpandDecoders(const Ctx& c, const json& doc, const Axes& global, const PromptFiles& files, Experiment& e) {
  if (!doc.contains("decoders")) c.Bad("decoders", "missing");
  PointBudget budget{kDefaultMaxPoints, "the default max_points"};
  if (doc.contains("max_points")) budget = {c.Int(doc["max_points"], "max_points", 1, int64_t(1) << 40), "max_points"};
  std::vector<Point> spec, ar;
  for (auto& [d, dp] : c.Axis(doc["decoders"], "decoders"))
    ExpandDecoderEntry(c, doc, d, dp, global, e.models, e.prompts.category, e.models_dir, ar, spec, budget);
  CheckPromptFiles(c, e, files, ar, spec);
  CheckFileNamesDistinct(c, spec);
  e.points = OrderIntoGroups(ar, spec);
  if (e.prompts.questions) {  // one group per part of the question set (sweep/questions.h)
    e.prompts.parts = SplitIntoParts(SelectQuestions(ReadQuestions(e.prompts.file), e.prompts.selection, e.file),
                                     e.prompts.selection.chunk, e.prompts.all_turns);
    e.points = SplitIntoParts(e.points, e.prompts.parts);
  }
  CheckConversationBatch(c, e);
  if (e.points.empty())  // only points of a model drafting for itself, each skipped: nothing would run
    c.Bad("decoders",
          "plans no point: every speculative point has its target as its draft model (a model never "
          "drafts for itself)");
}

}  // namespace

Experiment ParseExperiment(const json& doc, const std::string& file, const std::string& models_dir) {
  Ctx c{file};
  if (!doc.is_object()) Fail("{}: top level: expected a map, got {}", file, TypeName(doc));
  for (auto& [k, v] : doc.items())
    if (AxisKeys().count(k) || kHfAliases.count(k))
      c.Bad(k, "a sweep axis: write it under sweep: (every decoder) or in a decoder entry (docs/experiments.md)");
  c.CheckKeys(doc, "", TopLevelKeys());
  Experiment e;
  e.file = file;
  e.models_dir = models_dir;
  ParseName(c, doc, e);
  ParseModels(c, doc, e);
  Axes global;
  const PromptFiles files = ParsePrompts(c, doc, e, global);
  if (doc.contains("template"))
    e.chat_template = ParseChatTemplate(c.Str(doc["template"], "template"), file + ": template");
  if (doc.contains("repetitions")) e.repetitions = int(c.Int(doc["repetitions"], "repetitions", 1, 1000));
  if (doc.contains("warmup")) e.warmup = int(c.Int(doc["warmup"], "warmup", 0, 1000));
  if (doc.contains("sweep")) {
    const json s = ResolveHfAliases(c, c.Map(doc["sweep"], "sweep"), "sweep");
    c.CheckKeys(s, "sweep", AxisKeys());
    if (s.contains("input_length") && doc["prompts"].is_object() && doc["prompts"].contains("input_lengths"))
      c.Bad("sweep.input_length", "given twice (also prompts.input_lengths)");
    ParseAxes(c, s, "sweep", global, models_dir);
  }
  ExpandDecoders(c, doc, global, files, e);
  return e;
}

Experiment LoadExperiment(const std::string& path, const std::string& models_dir) {
  if (!fs::exists(path)) Fail("{}: cannot open: no such file", path);
  std::string ext = fs::path(path).extension().string();
  json doc;
  if (ext == ".json") {
    doc = ReadJsonStrict(path);
  } else if (ext == ".yaml" || ext == ".yml") {
    doc = ReadYamlAsJson(path);
  } else {
    Fail("{}: unknown experiment file type '{}' (expected .yaml, .yml or .json)", path, ext);
  }
  return ParseExperiment(doc, path, models_dir);
}

}  // namespace specsweep