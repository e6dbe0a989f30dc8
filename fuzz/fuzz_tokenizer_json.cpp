// HF tokenizer.json: parse, then encode and decode a short text with special tokens.
#include <filesystem>

#include "fuzz/fuzz_util.h"
#include "base/error.h"
#include "models/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A directory of its own: the loader also reads a tokenizer_config.json beside it.
  std::filesystem::create_directories(fuzz::ScratchDir() / "tok");
  const std::string path = fuzz::WriteScratch("tok/tokenizer.json", fuzz::AsView(data, size));
  try {
    auto tok = specsweep::LoadHfTokenizer(path);
    auto ids = tok->Encode("Hello <s> w\xC3\xB6rld\n  42 </s>\xF0\x9F\x98\x80", tok->add_bos_default());
    tok->Decode(ids);
  } catch (const specsweep::Error&) {
  }
  return 0;
}
