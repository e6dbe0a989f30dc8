// Rank BPE, the engine behind HF tokenizer.json and GGUF "gpt2" vocabularies: a
// plain description of the pipeline (BpeSpec) that both loaders fill, and the
// tokenizer that runs it. Semantics follow HF `tokenizers`: added tokens are split
// out of the raw text, the rest is normalized, pre-tokenized into words, and each
// word is merged by rank.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "models/tokenizer.h"
#include "models/tokenizer_text.h"

namespace specsweep {

struct AddedToken {
  std::string content;
  int id = 0;
  bool special = false;                 // a control token: Decode(kSkip) drops it
  bool normalized = false;              // matched in the normalized text rather than the raw text
  bool lstrip = false, rstrip = false;  // the match absorbs whitespace on that side
};

struct NormStep {
  enum Kind { kPrepend, kReplace, kNfc } kind;
  std::string a, b;  // Prepend: a = prefix. Replace: a -> b.
};

// HF ByteLevel(add_prefix_space, use_regex) is kPrefixSpace, kSplit (GPT-2 regex),
// kByteLevel, each step applied to every word the previous one produced.
struct PreStep {
  enum Kind { kSplit, kPrefixSpace, kByteLevel } kind;
  explicit PreStep(Kind k) : kind(k) {}
  std::shared_ptr<const Regex> re;  // kSplit
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};

struct DecodeStep {
  enum Kind { kReplace, kByteFallback, kFuse, kStrip, kByteLevel } kind;
  std::string a, b;         // Replace: a -> b; Strip: a = the character stripped
  int start = 0, stop = 0;  // Strip: at most this many from each end of a token
};

struct BpeSpec {
  std::string source;                      // file named in errors
  std::string kind;                        // Tokenizer::kind()
  std::vector<std::string> pieces;         // [vocab] id -> piece, added tokens included
  std::vector<char> in_model;              // [vocab] piece takes part in BPE (not an added-only token)
  std::vector<std::array<int, 3>> merges;  // by rank: {left id, right id, merged id}
  std::vector<AddedToken> added;
  std::vector<NormStep> norm;
  std::vector<PreStep> pre;
  std::vector<DecodeStep> dec;
  bool has_decoder = false;  // false: HF joins tokens with spaces
  bool byte_fallback = false, fuse_unk = false, ignore_merges = false;
  int unk_id = -1, bos_id = -1, eos_id = -1;
  bool add_bos = false;
  std::string gguf_pre;  // llama.cpp pre-tokenizer name when byte-level ("" if none fits)
};

std::unique_ptr<Tokenizer> MakeRankBpeTokenizer(BpeSpec spec);

// The llama.cpp tokenizer.ggml.pre name whose fixed pipeline (regex as llama.cpp or
// HF spells it, NFC, ignore_merges) is exactly this spec's, else "".
std::string GgufPreFor(const BpeSpec& spec);

}  // namespace specsweep
