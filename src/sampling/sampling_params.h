// Generation parameters: what the sampler and the stop conditions need, with the
// defaults of transformers' GenerationConfig, read from a checkpoint's
// generation_config.json and overridden by command-line flags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glass {

// The order of the logits processors. Only the order differs; each step keeps the
// semantics documented in logits_processors.h.
enum class ChainOrder {
  // transformers' generate(): penalties, then temperature, top-k, top-p, min-p.
  transformers,
  // llama.cpp's default sampler chain: penalties, top-k, top-p, min-p, then temperature.
  llama_cpp,
};

// "transformers" / "llama.cpp".
std::string_view chain_order_name(ChainOrder order);
// Accepts the names above (and "llama_cpp"); the error names `parameter`.
ChainOrder parse_chain_order(std::string_view text, std::string_view parameter = "chain_order");

// Temperatures below this decode greedily, as vLLM does (its _SAMPLING_EPS): dividing
// logits by a temperature that rounds to 0 in float would give inf and NaN.
inline constexpr double kMinSamplingTemperature = 1e-5;
// The largest temperature and the range of repetition_penalty validate() accepts: past
// them the float arithmetic of the processors overflows or underflows.
inline constexpr double kMaxTemperature = 100;
inline constexpr double kMinRepetitionPenalty = 0.01;
inline constexpr double kMaxRepetitionPenalty = 100;
// OpenAI's range of a logit_bias value: -100 in practice bans a token, 100 forces it.
inline constexpr double kMaxLogitBias = 100;

// logit_bias: `bias` added to token `id`'s logit before every other processor.
struct TokenBias {
  int32_t id = 0;
  float bias = 0;
  bool operator==(const TokenBias&) const = default;
};

struct SamplingParams {
  // Defaults are transformers' GenerationConfig defaults, used when a checkpoint has no
  // generation_config.json (or the file leaves a field out).
  bool do_sample = false;          // false: greedy (argmax)
  double temperature = 1.0;        // 0 to kMaxTemperature; below kMinSamplingTemperature greedy; 1 is off
  int64_t top_k = 50;              // >= 0; 0 is off
  double top_p = 1.0;              // in (0, 1]; 1 is off
  double min_p = 0.0;              // in [0, 1]; 0 is off
  double repetition_penalty = 1.0; // kMinRepetitionPenalty to kMaxRepetitionPenalty; 1 is off; prompt and output ids
  // OpenAI's penalties, in [-2, 2], 0 is off; counted over generated tokens only.
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  // No seed: the sampler draws one (random_seed()) and reports it.
  std::optional<uint64_t> seed;
  // No limit: generate until eos, a stop string or the context length.
  // (generation_config's max_length, whose default of 20 counts the prompt, is not used.)
  std::optional<int64_t> max_new_tokens;
  std::vector<int32_t> eos_token_ids;
  std::vector<std::string> stop_strings;
  ChainOrder chain_order = ChainOrder::transformers;
  // OpenAI's logit_bias, in ascending id order, each id once; empty is off.
  std::vector<TokenBias> logit_bias;

  // True when tokens are drawn at random: do_sample and temperature >= kMinSamplingTemperature.
  bool sampling() const { return do_sample && temperature >= kMinSamplingTemperature; }

  // Refuses invalid values with a message "<source>: <parameter> must be ..., got ...".
  void validate(const std::string& source = "sampling parameters") const;
};

// Reads a generation_config.json. A missing file gives transformers' defaults
// (SamplingParams{}); fields it leaves out (or sets to null) keep them. Reads do_sample,
// temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens, eos_token_id
// (an integer or a list of integers) and stop_strings (a string or a list); other
// fields are ignored. Wrong types and invalid values are errors naming the file and field.
SamplingParams load_generation_config(const std::string& path);

// Values given on the command line (or in a request). Each one that is set replaces
// the value from the file, field by field; nothing else changes (in particular a
// temperature does not switch do_sample on). Lists replace, they do not append.
struct SamplingOverrides {
  std::optional<bool> do_sample;
  std::optional<double> temperature;
  std::optional<int64_t> top_k;
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  std::optional<uint64_t> seed;
  std::optional<int64_t> max_new_tokens;
  std::optional<std::vector<int32_t>> eos_token_ids;
  std::optional<std::vector<std::string>> stop_strings;
  std::optional<ChainOrder> chain_order;
  std::optional<std::vector<TokenBias>> logit_bias;
};

// Fails, naming `source`, unless `biases` lists ids >= 0 in ascending order, each once, with
// biases from -kMaxLogitBias to kMaxLogitBias (SamplingParams::validate's check of logit_bias).
void validate_logit_bias(const std::vector<TokenBias>& biases, const std::string& source);
// `biases` in ascending id order; an id given twice is an error naming `parameter`.
std::vector<TokenBias> sorted_logit_bias(std::vector<TokenBias> biases, std::string_view parameter = "logit_bias");
// Fails, naming `parameter`, when a logit_bias id is not below `vocab` (the tokenizer's).
void check_logit_bias_ids(const std::vector<TokenBias>& biases, int64_t vocab, std::string_view parameter = "logit_bias");

// `base` with every set override applied. Call validate() on the result.
SamplingParams apply_overrides(SamplingParams base, const SamplingOverrides& overrides);

}  // namespace glass
