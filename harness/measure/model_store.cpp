#include "harness/measure/model_store.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "harness/store/sha256.h"
#include "models/synthetic.h"

namespace fs = std::filesystem;

namespace specsweep {

const LoadedModel& ModelStore::Target(const std::string& name, const std::optional<QType>& quant) {
  const std::string key = name + "@" + (quant ? std::string(QTypeName(*quant)) : "none");
  auto it = targets_.find(key);
  if (it != targets_.end()) return it->second;
  LoadedModel m = Base(name);
  if (quant) m.model = std::make_shared<const Model>(QuantizeModel(*m.model, *quant));
  return targets_[key] = m;
}

const LoadedModel& ModelStore::Base(const std::string& name) {
  auto it = base_.find(name);
  if (it != base_.end()) return it->second;
  LoadedModel m = LoadModel(name, models_dir_);
  m.name = name;
  return base_[name] = m;
}

const std::map<std::string, std::string>& ModelStore::FileHashes(const std::string& name) {
  auto it = hashes_.find(name);
  if (it != hashes_.end()) return it->second;
  std::map<std::string, std::string> h;
  for (auto& f : Base(name).model->source.files) h[f] = Sha256File(f);
  return hashes_[name] = h;
}

ModelFiles ModelStore::ModelFilesOf(const Point& p) {
  ModelFiles out;
  auto add = [&](const std::string& model, const char* role) {
    for (auto& [f, h] : FileHashes(model)) out.push_back({role, std::filesystem::path(f).filename().string(), h});
  };
  add(p.model, "target");
  if (!p.options.draft.model().empty()) add(p.options.draft.model(), "draft");
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

bool ModelFound(const std::string& name, const std::string& dir) {
  std::error_code ec;
  return fs::exists(name, ec) || fs::exists(fs::path(dir) / name, ec);
}

// "specsweep synth ..." for a file named synth-<shape>-<type>.gguf; "" for another name.
std::string SynthCommand(const std::string& name, const fs::path& out) {
  const std::optional<SynthFileName> n = ParseSynthFileName(name);
  return n ? fmt::format("specsweep synth --shape {} --type {} -o {}", n->shape, n->type, out.string()) : "";
}

}  // namespace

std::vector<MissingModel> MissingModels(const Experiment& e) {
  const std::string dir = ResolveModelsDir(e.models_dir);
  std::vector<MissingModel> out;
  auto count = [&](const std::string& name) {
    if (name.empty() || ModelFound(name, dir)) return;
    auto it = std::find_if(out.begin(), out.end(), [&](const MissingModel& m) { return m.name == name; });
    (it == out.end() ? out.emplace_back(MissingModel{name, 0}) : *it).points++;
  };
  for (const Point& p : e.points) {
    count(p.model);
    if (p.options.draft.model() != p.model) count(p.options.draft.model());
  }
  return out;
}

std::string MissingModelText(const std::string& name, const std::string& models_dir) {
  const std::string dir = ResolveModelsDir(models_dir);
  const bool path = fs::path(name).has_parent_path() || fs::path(name).is_absolute();
  const fs::path out = path ? fs::path(name) : fs::path(dir) / name;
  const std::string text =
      path ? fmt::format("model '{}' does not exist", name)
           : fmt::format("model '{}' is not in {}{}", name, dir, fs::is_directory(dir) ? "" : ", which does not exist");
  const std::string synth = SynthCommand(name, out);
  return text + (synth.empty() ? " (put the checkpoint there or pass --models DIR)" : " (make it: " + synth + ")");
}

void CheckModelsPresent(const Experiment& e) {
  const std::vector<MissingModel> missing = MissingModels(e);
  if (missing.empty()) return;
  const MissingModel& m = missing[0];
  Fail("{}: {}; --skip-missing-models leaves its {} point{} out", e.file, MissingModelText(m.name, e.models_dir),
       m.points, m.points == 1 ? "" : "s");
}

std::vector<MissingModel> SkipMissingModels(Experiment& e, std::FILE* out) {
  const std::vector<MissingModel> missing = MissingModels(e);
  if (missing.empty()) return missing;
  std::vector<std::string> names;
  for (const MissingModel& m : missing) {
    names.push_back(m.name);
    if (out)
      fmt::print(out, "skipped: {}; its {} point{} {} left out\n", MissingModelText(m.name, e.models_dir), m.points,
                 m.points == 1 ? "" : "s", m.points == 1 ? "is" : "are");
  }
  const size_t before = e.points.size();
  std::erase_if(e.points, [&](const Point& p) {
    return std::find(names.begin(), names.end(), p.model) != names.end() ||
           std::find(names.begin(), names.end(), p.options.draft.model()) != names.end();
  });
  if (before > 0 && e.points.empty())
    Fail("{}: --skip-missing-models: every point needs a missing model ({}): nothing to run", e.file,
         fmt::join(names, ", "));
  return missing;
}

}  // namespace specsweep
