// Logits processors: each rewrites a float32 logit row (one entry per vocabulary id) in
// place, and removes a token by setting its logit to -inf. Semantics are transformers'
// (RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopK/TopP/MinPLogitsWarper
// with min_tokens_to_keep = 1), computed in float32 where transformers computes in
// float32, so the surviving ids match exactly; presence and frequency penalties follow
// OpenAI's definition. Rows must not contain NaN (the Sampler refuses them).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "sampling/sampling_params.h"
#include "sampling/token_history.h"

namespace glass {

// transformers' float32 softmax of a whole row: p(x) = exp(x - max) * (1 / sum), with
// exp and the product in float32 (the sum is accumulated in double). `max` is -inf when
// every entry is -inf; then there is no distribution.
struct RowSoftmax {
  float max = 0;
  float inv_sum = 0;
  bool empty() const;
  float prob(float logit) const;
};
RowSoftmax row_softmax(std::span<const float> logits);

// OpenAI's logit_bias: logit[id] += bias for each listed id, in float32, before every
// other processor (as vLLM and llama.cpp apply it), in greedy decoding too. A removed
// token (-inf) stays removed. Ids outside the row are an error.
class LogitBias {
 public:
  explicit LogitBias(std::vector<TokenBias> biases);
  void apply(std::span<float> logits, const TokenHistory& history = {}) const;
  const std::vector<TokenBias>& biases() const { return biases_; }
  // "logit_bias={9707:+5, 151643:-100}", the first few ids and a count past them.
  std::string describe() const;

 private:
  std::vector<TokenBias> biases_;
};

// Every id seen in prompt and output, once: a negative logit is multiplied by the
// penalty, a positive one divided by it (penalty > 1 discourages repeats, < 1 favours
// them). Ids outside the row are an error.
class RepetitionPenalty {
 public:
  explicit RepetitionPenalty(double penalty);
  void apply(std::span<float> logits, const TokenHistory& history) const;
  double penalty() const { return penalty_; }
  std::string describe() const;

 private:
  double penalty_;
};

// OpenAI: logit[j] -= presence_penalty when j occurs in the output so far.
class PresencePenalty {
 public:
  explicit PresencePenalty(double penalty);
  void apply(std::span<float> logits, const TokenHistory& history) const;
  std::string describe() const;

 private:
  double penalty_;
};

// OpenAI: logit[j] -= frequency_penalty * (number of times j occurs in the output so far).
class FrequencyPenalty {
 public:
  explicit FrequencyPenalty(double penalty);
  void apply(std::span<float> logits, const TokenHistory& history) const;
  std::string describe() const;

 private:
  double penalty_;
};

// logit / temperature (temperature > 0; greedy decoding is the Sampler's job).
class Temperature {
 public:
  explicit Temperature(double temperature);
  void apply(std::span<float> logits, const TokenHistory& history = {}) const;
  std::string describe() const;

 private:
  double temperature_;
};

// Removes every token whose logit is below the k-th largest, so ties at the threshold
// all survive (possibly more than k tokens). k = 0 is off; k >= the row size keeps all.
class TopK {
 public:
  explicit TopK(int64_t k);
  void apply(std::span<float> logits, const TokenHistory& history = {}) const;
  std::string describe() const;

 private:
  int64_t k_;
};

// Nucleus: sorts ascending, takes the float32 softmax and its cumulative sum, and removes
// the tokens whose cumulative probability is <= 1 - top_p; the most probable token always
// survives. top_p = 1 is off.
//
// Among tokens with equal logits the ascending order is the one torch.sort gives on CPU
// (libstdc++'s std::sort, which is not stable; PyTorch builds that sort with x86-simd-sort
// would order ties differently). It decides which of them survive only when equal logits
// straddle the cut; only then is the whole row sorted that way (top_p_by_full_sort).
// Otherwise the row is not sorted: one pass buckets tokens by logit and sums each bucket's
// probability, only the bucket holding the cut is sorted, and the cumulative sum at a rank
// is the total minus the mass above it, in double (it differs from torch's running double
// sum by far less than float32 rounding).
class TopP {
 public:
  explicit TopP(double top_p);
  void apply(std::span<float> logits, const TokenHistory& history = {}) const;
  std::string describe() const;

 private:
  double top_p_;
};

// Removes every token whose probability is below min_p times the highest probability
// (probabilities are the float32 softmax of the row). min_p = 0 is off.
class MinP {
 public:
  explicit MinP(double min_p);
  void apply(std::span<float> logits, const TokenHistory& history = {}) const;
  std::string describe() const;

 private:
  double min_p_;
};

// TopP's reference path, exactly transformers' algorithm: sort the whole row ascending
// with torch's CPU tie order, running cumulative sum in double rounded to float32.
// TopP::apply calls it when ties straddle the cut; tests compare the two.
void top_p_by_full_sort(std::span<float> logits, double top_p);

}  // namespace glass
