// GGUF: the header parser on the raw bytes, then (when the header parses) the full
// loader (config, vocabulary, tensors) and one encode/decode round with its tokenizer.
#include "fuzz/fuzz_util.h"
#include "base/error.h"
#include "models/gguf.h"
#include "models/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    specsweep::ParseGgufHeader(data, size, "fuzz.gguf");
  } catch (const specsweep::Error&) {
    return 0;
  }
  try {
    auto lm = specsweep::LoadGguf(fuzz::WriteScratch("fuzz.gguf", fuzz::AsView(data, size)));
    auto ids = lm.tokenizer->Encode("Once upon a time, 12 \xC3\xA9t\xC3\xA9s!", true);
    lm.tokenizer->Decode(ids);
  } catch (const specsweep::Error&) {
  }
  return 0;
}
