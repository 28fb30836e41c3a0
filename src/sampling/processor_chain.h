// The logits processors to run, in order, as data: built from SamplingParams in
// transformers' order (or llama.cpp's), or given step by step.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sampling/logits_processors.h"
#include "sampling/sampling_params.h"

namespace glass {

using LogitsProcessor = std::variant<LogitBias, RepetitionPenalty, PresencePenalty, FrequencyPenalty, Temperature, TopK, TopP, MinP>;

// "logit_bias", "repetition_penalty", "presence_penalty", "frequency_penalty", "temperature",
// "top_k", "top_p", "min_p".
std::string_view processor_name(const LogitsProcessor& step);
// The name with its setting, e.g. "top_k=20".
std::string describe(const LogitsProcessor& step);

// One candidate token for the trace.
struct TokenCandidate {
  int32_t id = 0;
  float logit = 0;
  float prob = 0;  // float32 softmax of the row it was taken from
};

// The `n` highest logits of `logits` (finite ones only), highest first, lowest id first
// among equal logits, with their softmax probabilities.
std::vector<TokenCandidate> top_candidates(std::span<const float> logits, size_t n);

// The ids a constraint (a grammar, json_schema.h / matcher.h) allows this step, as a
// bitset: bit (id % 64) of words[id / 64]; ids from `size` on are not allowed. `name`
// labels its stage in the trace ("grammar").
struct AllowedTokens {
  std::span<const uint64_t> words;
  size_t size = 0;
  std::string_view name = "grammar";
};

// What the chain did to one row, for `--show-top`. Filled only when passed to apply().
struct ChainTrace {
  size_t top_n = 10;  // how many candidates to record, set by the caller
  std::vector<TokenCandidate> top_before;  // raw logits
  struct Step {
    std::string setting;  // describe(step)
    int64_t surviving = 0;  // finite logits after the step
  };
  std::vector<Step> steps;
  std::vector<TokenCandidate> top_after;  // after the chain: the distribution sampled from
  int64_t vocab = 0;
};

class ProcessorChain {
 public:
  ProcessorChain() = default;
  explicit ProcessorChain(std::vector<LogitsProcessor> steps) : steps_(std::move(steps)) {}

  // The steps for `params`, in params.chain_order, leaving out those that are off
  // (no logit_bias, penalty 1 or 0, temperature 1, top_k 0, top_p 1, min_p 0), as
  // transformers does. logit_bias and the penalties run in greedy decoding too;
  // temperature, top-k, top-p and min-p only when params.sampling().
  //   transformers: logit_bias, repetition, presence, frequency, temperature, top_k, top_p, min_p
  //   llama.cpp:    logit_bias, repetition, presence, frequency, top_k, top_p, min_p, temperature
  static ProcessorChain from_params(const SamplingParams& params);

  // Runs every step in order on `logits` (in place). With `trace`, also records the top
  // candidates before and after and the surviving count after each step (extra passes
  // over the row that are skipped without it).
  // Ids from `tokens` on (the embedding's padding rows past the tokenizer) are removed
  // (-inf) after the trace's top_before and before the first step: never drawn. With
  // `allowed`, every id it does not allow is removed next, as a stage of its own in the
  // trace, so the processors (penalties, temperature, top-k/p) see only what the
  // constraint allows.
  void apply(std::span<float> logits, const TokenHistory& history, ChainTrace* trace = nullptr,
             size_t tokens = SIZE_MAX, const AllowedTokens* allowed = nullptr) const;

  const std::vector<LogitsProcessor>& steps() const { return steps_; }
  // "repetition_penalty=1.05 -> temperature=0.7 -> top_k=20 -> top_p=0.8", or "(none)".
  std::string describe() const;

 private:
  std::vector<LogitsProcessor> steps_;
};

}  // namespace glass
