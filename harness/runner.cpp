#include "harness/runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "harness/results.h"
#include "models/error.h"
#include "models/forward.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {

// ---------------------------------------------------------------------------------
// Prompts

static std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> ReadPromptLines(const std::string& path, int count) {
  std::ifstream f(path);
  if (!f) Fail("{}: cannot open prompt file", path);
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
    if (Trim(line).empty()) flush();
    else cur += (cur.empty() ? "" : "\n") + line;
  }
  flush();
  return out;
}

std::vector<std::vector<int>> CutPassages(const std::vector<std::string>& passages, const Tokenizer& tok,
                                          int n_tokens, int count, const std::string& what) {
  if (count > int(passages.size()))
    Fail("{}: prompts.count: {} prompts need {} passages, the file has {}", what, count, count, passages.size());
  std::vector<std::vector<int>> out;
  for (int i = 0; i < count; ++i) {
    std::string text;
    std::vector<int> ids;
    // Add whole passages until the encoding is long enough, then cut the token list.
    for (size_t j = 0; j < passages.size(); ++j) {
      text += (text.empty() ? "" : "\n") + passages[(i + j) % passages.size()];
      ids = tok.Encode(text, /*add_bos=*/true);
      if (int(ids.size()) >= n_tokens) break;
    }
    if (int(ids.size()) < n_tokens)
      Fail("{}: input_length: {} tokens asked, all passages together give only {}", what, n_tokens, ids.size());
    ids.resize(n_tokens);
    out.push_back(std::move(ids));
  }
  return out;
}

// ---------------------------------------------------------------------------------
// Progress

namespace {

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  int t = int(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02d}m", t / 3600, (t / 60) % 60);
  if (t >= 60) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

class Progress {
 public:
  Progress(std::FILE* f, int total, int resumed)
      : f_(f), tty_(f && isatty(fileno(f))), total_(total), done_(resumed), resumed_(resumed),
        start_(std::chrono::steady_clock::now()) {}
  void Start(const std::string& name) { Draw(name, ""); }
  void Done(const std::string& name, const std::string& summary) {
    ++done_;
    Draw(name, summary);
  }
  void Finish() {
    if (f_ && tty_) std::fputs("\n", f_);
  }

 private:
  void Draw(const std::string& name, const std::string& summary) {
    if (!f_) return;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    int measured = done_ - resumed_;
    double eta = measured > 0 ? elapsed / measured * (total_ - done_) : NAN;
    if (tty_) {
      const int width = 24;
      int fill = total_ ? done_ * width / total_ : width;
      std::string bar = std::string(fill, '#') + std::string(width - fill, '.');
      std::string line = fmt::format("[{}] {}/{} points  elapsed {}  eta {}  {}", bar, done_, total_,
                                     FormatDuration(elapsed), FormatDuration(eta), name);
      if (line.size() > 150) line.resize(150);
      std::fprintf(f_, "\r\033[K%s", line.c_str());
    } else if (!summary.empty()) {
      std::fprintf(f_, "[%d/%d] %s  %s  (elapsed %s, eta %s)\n", done_, total_, name.c_str(), summary.c_str(),
                   FormatDuration(elapsed).c_str(), FormatDuration(eta).c_str());
    }
    std::fflush(f_);
  }
  std::FILE* f_;
  bool tty_;
  int total_, done_, resumed_;
  std::chrono::steady_clock::time_point start_;
};

// Appends one line and forces it to disk before the next point starts.
void AppendLine(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) Fail("{}: cannot open for appending", path);
  std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n <= 0) {
      ::close(fd);
      Fail("{}: write failed", path);
    }
    off += size_t(n);
  }
  ::fsync(fd);
  ::close(fd);
}

void WriteFileAtomic(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) Fail("{}: cannot open for writing", tmp);
    f << bytes;
    if (!f) Fail("{}: write failed", tmp);
  }
  fs::rename(tmp, path);
}

std::string OutputHash(const std::vector<int>& tokens) {
  std::string bytes(reinterpret_cast<const char*>(tokens.data()), tokens.size() * sizeof(int));
  return Sha256Hex(bytes).substr(0, 16);
}

// Loaded targets and prompt sets, shared by the points of a sweep.
class Cache {
 public:
  Cache(const Experiment& e) : e_(e) {}

  const LoadedModel& Target(const std::string& name, const std::optional<QType>& tq) {
    std::string key = name + "@" + (tq ? std::string(QTypeName(*tq)) : "none");
    auto it = targets_.find(key);
    if (it != targets_.end()) return it->second;
    const LoadedModel& base = Base(name);
    LoadedModel m = base;
    if (tq) m.model = std::make_shared<const Model>(QuantizeModel(*base.model, *tq));
    return targets_[key] = m;
  }

  const LoadedModel& Base(const std::string& name) {
    auto it = base_.find(name);
    if (it != base_.end()) return it->second;
    LoadedModel m = LoadModel(name, e_.models_dir);
    m.name = name;
    for (auto& f : m.model->source.files) files_.insert(f);
    return base_[name] = m;
  }

  const std::vector<std::vector<int>>& Prompts(const std::string& model, int input_length) {
    auto key = std::make_pair(model, input_length);
    auto it = prompts_.find(key);
    if (it != prompts_.end()) return it->second;
    const LoadedModel& m = Base(model);
    std::vector<std::vector<int>> ids;
    if (input_length == 0) {
      for (auto& line : ReadPromptLines(e_.prompts.file, e_.prompts.count))
        ids.push_back(m.tokenizer->Encode(line, /*add_bos=*/true));
    } else {
      if (passages_.empty()) {
        std::ifstream f(e_.prompts.passages);
        if (!f) Fail("{}: cannot open passages file", e_.prompts.passages);
        std::stringstream ss;
        ss << f.rdbuf();
        passages_ = SplitPassages(ss.str());
      }
      ids = CutPassages(passages_, *m.tokenizer, input_length, e_.prompts.count, e_.prompts.passages);
    }
    return prompts_[key] = ids;
  }

  const std::set<std::string>& Files() const { return files_; }

 private:
  const Experiment& e_;
  std::map<std::string, LoadedModel> base_, targets_;
  std::map<std::pair<std::string, int>, std::vector<std::vector<int>>> prompts_;
  std::vector<std::string> passages_;
  std::set<std::string> files_;
};

void SetThreads(const Point& p, const RunOptions& o) { SetNumThreads(p.threads > 0 ? p.threads : o.default_threads); }

// Everything that can be wrong with a point short of running it: context length,
// decoder options, draft model. Checked for the whole grid before measuring.
void Preflight(const Experiment& e, const std::vector<const Point*>& pending, Cache& cache) {
  std::set<std::string> checked;
  for (auto* p : pending) {
    const LoadedModel& t = cache.Base(p->model);
    const auto& prompts = cache.Prompts(p->model, p->input_length);
    int ctx = t.model->config.max_seq_len;
    for (size_t i = 0; i < prompts.size(); ++i) {
      int need = int(prompts[i].size()) + p->max_new_tokens + p->k + 1;
      if (need > ctx)
        Fail("{}: point {}: prompt {} ({} tokens) + max_new_tokens {} + k {} exceeds the context of {} tokens",
             e.file, p->Name(), i, prompts[i].size(), p->max_new_tokens, p->k, ctx);
    }
    DecoderOptions opt = p->Options();
    opt.max_new_tokens = 1;
    opt.sampling = {};
    std::string key = fmt::format("{}|{}|{}|{}|{}|{}", p->model, p->target_quant ? int(*p->target_quant) : -1,
                                  int(p->decoder), p->k, int(p->k_policy), p->draft.Label());
    if (!checked.insert(key).second) continue;
    try {
      MakeDecoder(cache.Target(p->model, p->target_quant), opt, e.models_dir);
    } catch (const Error& err) {
      Fail("{}: point {}: {}", e.file, p->Name(), err.what());
    }
  }
}

RawRecord Measure(const Experiment& e, const Point& p, Cache& cache) {
  const LoadedModel& target = cache.Target(p.model, p.target_quant);
  const auto& prompts = cache.Prompts(p.model, p.input_length);
  auto decoder = MakeDecoder(target, p.Options(), e.models_dir);
  for (int w = 0; w < e.warmup; ++w) decoder->Generate(prompts[0]);
  RawRecord r;
  r.key = p.Key();
  r.baseline_key = p.speculative() ? p.Baseline().Key() : "";
  r.name = p.Name();
  r.params = p.ParamsJson();
  r.repetitions = e.repetitions;
  r.warmup = e.warmup;
  r.threads_used = NumThreads();
  for (auto& ids : prompts) r.prompt_tokens.push_back(int(ids.size()));
  for (int rep = 0; rep < e.repetitions; ++rep)
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenerationResult g = decoder->Generate(prompts[i]);
      r.runs.push_back(RawRun{int(i), rep, g.stats, OutputHash(g.tokens)});
    }
  return r;
}

}  // namespace

RunSummary RunExperiment(const Experiment& e, const RunOptions& o) {
  RunSummary s;
  s.total = int(e.points.size());
  fs::create_directories(o.out_dir);
  const std::string stem = o.out_stem.empty() ? e.name : o.out_stem;
  s.jsonl_path = (fs::path(o.out_dir) / (stem + ".jsonl")).string();
  s.json_path = (fs::path(o.out_dir) / (stem + ".json")).string();

  std::set<std::string> done;
  if (fs::exists(s.jsonl_path)) {
    if (o.resume) {
      size_t valid = 0;
      for (auto& r : ReadJsonl(s.jsonl_path, &valid)) done.insert(r.key);
      // Drop a line cut by a crash so the next append starts on a fresh line.
      if (valid != fs::file_size(s.jsonl_path)) fs::resize_file(s.jsonl_path, valid);
    } else if (o.overwrite) {
      fs::remove(s.jsonl_path);
    } else {
      Fail("{}: already exists (use --resume to continue that sweep or --overwrite to start over)", s.jsonl_path);
    }
  }
  std::vector<const Point*> pending;
  for (auto& p : e.points) {
    if (done.count(p.Key())) ++s.resumed;
    else pending.push_back(&p);
  }

  Cache cache(e);
  Preflight(e, pending, cache);
  Progress progress(o.progress, s.total, s.resumed);
  for (auto* p : pending) {
    progress.Start(p->Name());
    SetThreads(*p, o);
    RawRecord r = Measure(e, *p, cache);
    AppendLine(s.jsonl_path, DumpJson(RawToJson(r)));
    ++s.measured;
    json agg = Aggregate(r, nullptr);
    std::string summary = fmt::format("{:.1f} tok/s", agg.value("tokens_per_s", 0.0));
    if (p->speculative())
      summary += fmt::format(", accept {:.3f}, tau {:.2f}", agg.value("acceptance_rate", 0.0),
                             agg.value("mean_accepted_length", 0.0));
    progress.Done(p->Name(), summary);
  }
  progress.Finish();

  // Final file: the grid's records in grid order (a resumed .jsonl may hold others).
  std::map<std::string, RawRecord> by_key;
  for (auto& r : ReadJsonl(s.jsonl_path)) by_key[r.key] = std::move(r);
  std::vector<RawRecord> ordered;
  for (auto& p : e.points) {
    auto it = by_key.find(p.Key());
    if (it == by_key.end()) Fail("{}: point {} is missing after the sweep", s.jsonl_path, p.Name());
    ordered.push_back(it->second);
  }
  // Hashes cover every model the grid uses, resumed points and separate drafts included.
  for (auto& p : e.points) {
    cache.Base(p.model);
    if (!p.draft.model.empty()) cache.Base(p.draft.model);
  }
  SetNumThreads(o.default_threads);
  json doc;
  doc["context"] = ContextBlock(e.name, e.file, std::vector<std::string>(cache.Files().begin(), cache.Files().end()));
  doc["context"].update(o.context);
  doc["benchmarks"] = AggregateAll(ordered);
  WriteFileAtomic(s.json_path, DumpJson(doc, 2) + "\n");
  return s;
}

}  // namespace specsweep
