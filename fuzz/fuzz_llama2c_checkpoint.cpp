// llama2.c checkpoint (7 x i32 header + F32 tensors).
#include "fuzz/fuzz_util.h"
#include "base/error.h"
#include "models/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    specsweep::LoadLlama2cCheckpoint(fuzz::WriteScratch("model.bin", fuzz::AsView(data, size)));
  } catch (const specsweep::Error&) {
  }
  return 0;
}
