#include "sampling/sampler.h"

#include <cmath>
#include <limits>

#include "base/error.h"

namespace glass {

namespace {

constexpr float kRemoved = -std::numeric_limits<float>::infinity();

[[noreturn]] void nothing_left(size_t vocab) {
  fail("sampler: every one of the ", vocab, " logits is -inf, there is no token to choose");
}

}  // namespace

int32_t argmax(std::span<const float> logits) {
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;
  if (logits.empty() || logits[best] == kRemoved) nothing_left(logits.size());
  return static_cast<int32_t>(best);
}

int32_t sample_categorical(std::span<const float> logits, Rng& rng) {
  float max = kRemoved;
  for (float x : logits) max = std::max(max, x);
  if (max == kRemoved) nothing_left(logits.size());
  double total = 0;
  for (float x : logits)
    if (x != kRemoved) total += std::exp(static_cast<double>(x) - max);
  const double target = rng.next_double() * total;
  double running = 0;
  size_t last = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == kRemoved) continue;
    const double w = std::exp(static_cast<double>(logits[i]) - max);
    if (w == 0) continue;
    running += w;
    last = i;
    if (running > target) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last);
}

Sampler::Sampler(const SamplingParams& params)
    : params_(params), seed_(params.seed ? *params.seed : random_seed()), rng_(seed_) {
  params_.validate();
  chain_ = ProcessorChain::from_params(params_);
}

int32_t Sampler::sample(std::span<float> logits, const TokenHistory& history, ChainTrace* trace) {
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isnan(logits[i]) || logits[i] == -kRemoved) fail("sampler: logit of token ", i, " is ", logits[i]);
  chain_.apply(logits, history, trace);
  return greedy() ? argmax(logits) : sample_categorical(logits, rng_);
}

}  // namespace glass
