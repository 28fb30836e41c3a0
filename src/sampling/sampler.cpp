#include "sampling/sampler.h"

#include <cmath>
#include <limits>

#include "base/error.h"
#include "sampling/row_scan.h"

namespace glass {

namespace {

using detail::kRemoved;

[[noreturn]] void nothing_left(size_t vocab) {
  fail("sampler: every one of the ", vocab, " logits is -inf, there is no token to choose");
}

}  // namespace

int32_t argmax(std::span<const float> logits) {
  // The first index holding the maximum: blocks are scanned only when they hold a value
  // above the best so far, and within a block only a strictly greater value wins.
  size_t best = 0;
  float best_value = detail::kMinusInf;
  size_t i = 0;
  auto offer = [&](size_t j) {
    if (logits[j] > best_value) best_value = logits[j], best = j;
  };
  for (; i + detail::kScanBlock <= logits.size(); i += detail::kScanBlock)
    if (detail::block_has_greater(&logits[i], best_value))
      for (size_t j = i; j < i + detail::kScanBlock; ++j) offer(j);
  for (; i < logits.size(); ++i) offer(i);
  if (best_value == kRemoved) nothing_left(logits.size());
  return static_cast<int32_t>(best);
}

int32_t sample_categorical(std::span<const float> logits, Rng& rng) {
  const float max = detail::row_max(logits);
  if (max == kRemoved) nothing_left(logits.size());
  auto weight = [&](size_t i) { return std::exp(static_cast<double>(logits[i]) - max); };
  // Two passes instead of a stored copy: the total, then the running sum up to the draw.
  double total = 0;
  detail::for_each_finite(logits, [&](size_t i) { total += weight(i); });
  const double target = rng.next_double() * total;
  double running = 0;
  size_t chosen = 0;
  detail::for_each_finite(logits, [&](size_t i) {
    const double w = weight(i);
    if (w == 0) return false;
    running += w;
    chosen = i;  // if rounding leaves running <= target to the end: the last with w > 0
    return running > target;
  });
  return static_cast<int32_t>(chosen);
}

Sampler::Sampler(const SamplingParams& params)
    : params_(params), seed_(params.seed ? *params.seed : random_seed()), rng_(seed_) {
  params_.validate();
  chain_ = ProcessorChain::from_params(params_);
}

int32_t Sampler::sample(std::span<float> logits, const TokenHistory& history, ChainTrace* trace, size_t tokens,
                        const AllowedTokens* allowed) {
  // NaN or +inf would poison every step after; one vectorizable pass finds them.
  if (detail::row_has_nan_or_plus_inf(logits))
    for (size_t i = 0; i < logits.size(); ++i)
      if (!(logits[i] < -kRemoved)) fail("sampler: logit of token ", i, " is ", logits[i]);
  chain_.apply(logits, history, trace, tokens, allowed);
  return greedy() ? argmax(logits) : sample_categorical(logits, rng_);
}

}  // namespace glass
