// Experiment files: the input as YAML, and as JSON when it looks like an object.
#include "fuzz/fuzz_util.h"
#include "harness/sweep/experiment.h"
#include "base/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::AsView(data, size);
  for (const char* name : {"exp.yaml", "exp.json"}) {
    if (name[4] == 'j' && (in.empty() || in[0] != '{')) continue;
    try {
      specsweep::LoadExperiment(fuzz::WriteScratch(name, in), "/nonexistent-models");
    } catch (const specsweep::Error&) {
    }
  }
  return 0;
}
