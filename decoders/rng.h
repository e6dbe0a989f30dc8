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

// Seed of sequence i of a batch (Decoder::GenerateBatch): `seed` itself for i = 0, so a
// batch of one draws what Generate draws; the others a SplitMix64 mix of (seed, i), so
// the sequences' streams are unrelated (mt19937_64 of seeds seed, seed+1, ... would be
// as well, but a mix keeps batches of neighbouring seeds from sharing streams).
inline uint64_t SequenceSeed(uint64_t seed, int i) {
  if (i == 0) return seed;
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace specsweep
