// Shared by the acceptance replay tests (chains and token trees): one thread, a tiny
// synthetic target, and prompts of a few ids that differ per prompt.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "decoders/decoder.h"
#include "models/forward.h"
#include "models/synthetic.h"

namespace specsweep::testing {

inline LoadedModel Tiny() {
  return LoadedModel{"synthetic", std::make_shared<const Model>(MakeSyntheticModel(TinyTestConfig(), 1)), nullptr};
}

// Prompt i: BOS and a few ids that differ per prompt.
inline std::vector<int> PromptIds(int i, int vocab) {
  std::vector<int> p{1};
  for (int j = 0; j < 6; ++j) p.push_back(3 + (i * 7 + j * 13) % (vocab - 3));
  return p;
}

}  // namespace specsweep::testing
