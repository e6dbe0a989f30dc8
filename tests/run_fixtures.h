// Options of the tests that run experiments in-process: results under `dir`, no progress.
#pragma once
#include <string>

#include "harness/measure/runner.h"

namespace specsweep::testing {

inline RunOptions QuietRun(const std::string& dir, ResumeMode mode = ResumeMode::None) {
  RunOptions o;
  o.out_dir = dir;
  o.resume = mode;
  o.progress = nullptr;
  return o;
}

}  // namespace specsweep::testing
