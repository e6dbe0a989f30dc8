// llama2.c tokenizer (tok512.bin): read to the end of the file and as a 512-piece
// vocabulary, then encode and decode a short text.
#include "fuzz/fuzz_util.h"
#include "base/error.h"
#include "models/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::WriteScratch("tok.bin", fuzz::AsView(data, size));
  for (int vocab : {0, 512}) {
    try {
      auto tok = specsweep::LoadLlama2cTokenizer(path, vocab);
      auto ids = tok->Encode("Once upon a time \xE2\x96\x81 \xFF\xFE zebra", true);
      tok->Decode(ids);
    } catch (const specsweep::Error&) {
    }
  }
  return 0;
}
