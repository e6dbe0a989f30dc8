// HF directory: config.json and model.safetensors from one input, split at the first
// "\n#SAFETENSORS\n" (no separator: the whole input is config.json and the weights file
// is empty). Seeds come from fuzz/run.sh.
#include <filesystem>

#include "fuzz/fuzz_util.h"
#include "base/error.h"
#include "models/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr std::string_view kSep = "\n#SAFETENSORS\n";
  const std::string_view in = fuzz::AsView(data, size);
  const size_t cut = in.find(kSep);
  const std::string_view config = in.substr(0, cut);
  const std::string_view weights = cut == in.npos ? std::string_view{} : in.substr(cut + kSep.size());
  const auto dir = fuzz::ScratchDir() / "hf";
  std::filesystem::create_directories(dir);
  fuzz::WriteScratch("hf/config.json", config);
  fuzz::WriteScratch("hf/model.safetensors", weights);
  try {
    specsweep::LoadHfSafetensors(dir.string());
  } catch (const specsweep::Error&) {
  }
  return 0;
}
