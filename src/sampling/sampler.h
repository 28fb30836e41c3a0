// Choosing the next token from a logit row: the processor chain, then greedy argmax or
// a multinomial draw from the processed distribution with the seeded Rng. The same seed
// and the same logits give the same tokens on every run and machine: the Rng is fixed
// (rng.h) and the draw uses one uniform per token and exp() in double, which glibc
// rounds correctly in practice.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/processor_chain.h"
#include "sampling/rng.h"
#include "sampling/sampling_params.h"
#include "sampling/token_history.h"

namespace glass {

// The index of the largest logit; the lowest index among equal ones, like torch.argmax.
// Fails when every logit is -inf.
int32_t argmax(std::span<const float> logits);

// One draw from softmax(logits), consuming exactly one Rng::next_double() u:
// weights w_i = exp(logit_i - max) in double, in id order; returns the first id whose
// running sum of weights exceeds u * sum(w) (the last id with w > 0 if rounding leaves
// none). Fails when every logit is -inf.
int32_t sample_categorical(std::span<const float> logits, Rng& rng);

class Sampler {
 public:
  // Validates `params`. The seed is params.seed, or random_seed() when it has none.
  explicit Sampler(const SamplingParams& params);

  // The next token for `logits` (one row of vocabulary size, processed in place: on
  // return it holds the processed logits). Greedy when !params.sampling(). Ids from
  // `tokens` on are never chosen (the embedding's padding rows past the tokenizer's
  // vocabulary: removed before the processors); neither are ids `allowed` does not allow
  // (a grammar's mask). NaN or +inf logits and rows with nothing left are errors.
  int32_t sample(std::span<float> logits, const TokenHistory& history, ChainTrace* trace = nullptr,
                 size_t tokens = SIZE_MAX, const AllowedTokens* allowed = nullptr);

  bool greedy() const { return !params_.sampling(); }
  uint64_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }
  const ProcessorChain& chain() const { return chain_; }

 private:
  SamplingParams params_;
  ProcessorChain chain_;
  uint64_t seed_;
  Rng rng_;
};

}  // namespace glass
