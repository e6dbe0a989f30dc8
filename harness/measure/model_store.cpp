#include "harness/measure/model_store.h"

#include <algorithm>
#include <filesystem>

#include "harness/store/sha256.h"

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

}  // namespace specsweep
