// The draft models of a run's decoders, shared (decoders/decoder.h DraftModels).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "decoders/decoder.h"

namespace specsweep {

// Drafts are shared by the decoders that ask for the same one while any of them holds it:
// a run builds a group's decoders together and keeps them, and each making its own copy
// ran out of memory (docs/measurements.md, "Sharing draft models"). Models are
// const after loading, so sharing is safe. Beyond the decoders' holds the store keeps only
// the last draft it loaded and the last copy it quantized: consecutive groups (a question
// set's parts, the preflight before them) ask for the same one, and quantizing a 7B target
// again for every group would cost more than its measurement.
class SharedDraftModels : public DraftModels {
 public:
  explicit SharedDraftModels(std::string models_dir) : models_dir_(std::move(models_dir)) {}
  // The draft file `name` from the models directory, loaded once while a decoder holds it.
  LoadedModel Load(const std::string& name) const override;
  // `m` quantized to `t`, once while a decoder holds the copy. Keyed by the source's
  // address and kept only while the source lives, so a later model at the same address
  // is never taken for it.
  std::shared_ptr<const Model> Quantized(const std::shared_ptr<const Model>& m, QType t) const override;

 private:
  struct Held {
    std::weak_ptr<const Model> model;
    std::weak_ptr<const Tokenizer> tokenizer;
    bool has_tokenizer = false;
  };
  std::string models_dir_;
  mutable std::mutex mu_;
  mutable std::map<std::string, Held> files_;
  mutable LoadedModel last_file_;
  mutable std::shared_ptr<const Model> last_quantized_;
  mutable std::map<std::pair<const Model*, QType>, std::pair<std::weak_ptr<const Model>, std::weak_ptr<const Model>>>
      quantized_;
};

}  // namespace specsweep
