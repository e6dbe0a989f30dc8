// Hand-built aggregate records (the flat .json form) for the report tests.
#pragma once
#include <nlohmann/json.hpp>

namespace specsweep::testing {

// The autoregressive baseline "ar" of model "m", 10 ms per token.
inline nlohmann::json ArPointJson() {
  return nlohmann::json{{"key", "ar"},
                        {"name", "ar"},
                        {"model", "m"},
                        {"decoder", "ar"},
                        {"k", 0},
                        {"k_policy", "-"},
                        {"draft", "-"},
                        {"draft_base", "-"},
                        {"draft_quant", "-"},
                        {"acceptance_source", "-"},
                        {"mean_next_token_latency_s", 0.01}};
}

}  // namespace specsweep::testing
