// The decoders' seeded random source (sampling, speculative sampling, acceptance replay).
#pragma once
#include <cstdint>
#include <random>

namespace specsweep {

// Caller-owned, seeded random source. Uniform() is built from the raw 64-bit engine
// output (not std::uniform_real_distribution, whose algorithm is library-defined),
// so a seed gives the same tokens with any standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, 1): the top 53 bits of one engine draw.
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace specsweep
