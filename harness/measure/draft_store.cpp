#include "harness/measure/draft_store.h"

namespace specsweep {

LoadedModel SharedDraftModels::Load(const std::string& name) const {
  std::lock_guard lock(mu_);
  Held& h = files_[name];
  LoadedModel d{name, h.model.lock(), h.tokenizer.lock()};
  if (!d.model || (!d.tokenizer && h.has_tokenizer)) {
    d = LoadModel(name, models_dir_);
    d.name = name;
    h = {d.model, d.tokenizer, d.tokenizer != nullptr};
  }
  last_file_ = d;
  return d;
}

std::shared_ptr<const Model> SharedDraftModels::Quantized(const std::shared_ptr<const Model>& m, QType t) const {
  std::lock_guard lock(mu_);
  auto& [source, copy] = quantized_[{m.get(), t}];
  if (source.lock() == m)
    if (auto c = copy.lock()) return last_quantized_ = c;
  last_quantized_.reset();  // before quantizing: the old copy's memory is free for the new one
  auto c = std::make_shared<const Model>(QuantizeModel(*m, t));
  source = m, copy = c;
  return last_quantized_ = c;
}

}  // namespace specsweep
