// Tokenizers: llama2.c BPE-by-score (also the SPM vocab of GGUF files), rank BPE
// (HF tokenizer.json, SentencePiece-style with byte fallback or GPT-2 byte-level with
// regex pre-tokenizers; GGUF "gpt2" vocabularies), and SentencePiece .model files.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specsweep {

// SentencePiece token types, as GGUF stores them.
enum class TokenType : int { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// A vocabulary as GGUF's "llama" (SPM) tokenizer stores it.
struct Vocab {
  std::vector<std::string> pieces;  // "▁the", "<0x0A>", "<s>", ...
  std::vector<float> scores;
  std::vector<TokenType> types;
  int bos_id = 1, eos_id = 2, unk_id = 0;
  // GGUF tokenizer.ggml.model: "llama" (SPM, scores) or "gpt2" (byte-level BPE: pre
  // names the pre-tokenizer as llama.cpp does, merges are "a b" in rank order).
  std::string model = "llama";
  std::string pre;
  std::vector<std::string> merges;
  bool add_bos = true;  // tokenizer.ggml.add_bos_token
};

// Whether Decode writes control/special tokens: kSkip for generated text, kKeep to
// show every id (HF decode with skip_special_tokens=false).
enum class Specials { kSkip, kKeep };

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Encodes text; prepends BOS when add_bos (the model's config decides).
  virtual std::vector<int> Encode(std::string_view text, bool add_bos) const = 0;
  // Decodes ids to text; with kSkip BOS/EOS and other control tokens produce nothing. Like
  // SentencePiece, the dummy-prefix space of the first piece is dropped, so
  // Decode(Encode(x)) == x; decode whole sequences, not single tokens, for streaming.
  // An id outside [0, vocab_size) is an Error.
  virtual std::string Decode(std::span<const int> ids, Specials specials = Specials::kSkip) const = 0;
  virtual int vocab_size() const = 0;
  virtual int bos_id() const = 0;
  virtual int eos_id() const = 0;
  virtual std::string_view kind() const = 0;  // "llama2c", "hf-bpe", "gguf-bpe", "sentencepiece"
  // Whether the tokenizer's own config asks for BOS (HF add_bos_token); pass this as
  // Encode's add_bos unless the model config says otherwise. llama2.c/SPM: true.
  virtual bool add_bos_default() const { return true; }
  // Export as an SPM vocabulary (GGUF writer).
  virtual Vocab ExportVocab() const = 0;
};

// llama2.c tokenizer.bin (max_token_length, then per token: f32 score, i32 len, bytes).
// vocab_size <= 0 reads pieces until the end of the file.
std::unique_ptr<Tokenizer> LoadLlama2cTokenizer(const std::string& path, int vocab_size);
// Same BPE-by-score algorithm over an in-memory vocabulary (GGUF "llama" tokenizer).
std::unique_ptr<Tokenizer> MakeScoreBpeTokenizer(Vocab vocab);
// Byte-level rank BPE over a GGUF "gpt2" vocabulary (pre, merges; control and
// user-defined tokens are split out of the text). `file` names errors.
// add_bos: tokenizer.ggml.add_bos_token if the file has it, else llama.cpp's default
// for the pre-tokenizer (true for llama-bpe).
std::unique_ptr<Tokenizer> MakeGgufBpeTokenizer(const Vocab& vocab, const std::string& file,
                                                std::optional<bool> add_bos);
// HF tokenizer.json (model.type BPE); tokenizer_config.json beside it, when present,
// supplies add_bos_token/bos/eos.
std::unique_ptr<Tokenizer> LoadHfTokenizer(const std::string& tokenizer_json_path);
// SentencePiece .model through libsentencepiece.
std::unique_ptr<Tokenizer> LoadSentencePieceTokenizer(const std::string& path);

// Whether a and b have the same token table: the same size and the same piece for
// every id (pieces as ExportVocab spells them, so the same vocabulary compares equal
// across tokenizer.json, GGUF, tokenizer.model and tokenizer.bin). On false, *why (if
// given) says where they differ.
bool SameVocabulary(const Tokenizer& a, const Tokenizer& b, std::string* why = nullptr);

}  // namespace specsweep
