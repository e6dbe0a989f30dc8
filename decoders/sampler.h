// Turning logits into tokens: greedy argmax, and temperature / top-k / top-p applied
// to give a full probability vector over the vocabulary (speculative sampling needs
// both the target's p and the draft's q as whole vectors).
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "decoders/decoder.h"
#include "decoders/rng.h"

namespace specsweep {

// Index of the largest value; the lowest index wins ties (matches llama.cpp/HF argmax).
int Argmax(std::span<const float> x);
// Index of the first NaN or infinity in x, or -1. Reads the exponent bits without
// branching, so it vectorizes: a 32k-entry logit row costs about a microsecond.
int FirstNonFinite(std::span<const float> x);

// probs[vocab] = softmax(logits / T) restricted to the top-k, then to the smallest
// top-p nucleus, renormalised; zero elsewhere. Greedy params give a one-hot vector at
// the argmax. Candidates are ordered by (logit desc, index asc) so ties are deterministic.
// Throws Error on non-finite logits.
void ComputeProbs(std::span<const float> logits, const SamplingParams& sp, std::vector<float>& probs);

// Draws an index with probability probs[i] / sum(probs) (probs need not be normalised;
// sum must be > 0). Consumes exactly one Uniform().
int SampleFromProbs(std::span<const float> probs, Rng& rng);

// Largest softmax probability of logits at temperature 1 (the draft's confidence used
// by the threshold/adaptive policies in greedy mode).
float MaxSoftmaxProb(std::span<const float> logits);

// Throws Error("<what>: <field>: ...") when temperature/top-k/top-p are out of range.
void ValidateSampling(const SamplingParams& sp, const char* what);

}  // namespace specsweep
