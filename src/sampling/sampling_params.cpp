#include "sampling/sampling_params.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "base/error.h"
#include "base/json_fields.h"

namespace glass {

std::string_view chain_order_name(ChainOrder order) {
  switch (order) {
    case ChainOrder::transformers: return "transformers";
    case ChainOrder::llama_cpp: return "llama.cpp";
  }
  return "?";
}

ChainOrder parse_chain_order(std::string_view text, std::string_view parameter) {
  if (text == "transformers") return ChainOrder::transformers;
  if (text == "llama.cpp" || text == "llama_cpp") return ChainOrder::llama_cpp;
  fail(parameter, " must be \"transformers\" or \"llama.cpp\", got \"", text, "\"");
}

void SamplingParams::validate(const std::string& source) const {
  // Written as !(ok) so that NaN is refused too.
  if (!(temperature >= 0 && temperature <= kMaxTemperature))
    fail(source, ": temperature must be between 0 and ", kMaxTemperature, " (below ", kMinSamplingTemperature,
         " means greedy), got ", temperature);
  if (top_k < 0) fail(source, ": top_k must be >= 0 (0 turns it off), got ", top_k);
  if (!(top_p > 0 && top_p <= 1)) fail(source, ": top_p must be in (0, 1] (1 turns it off), got ", top_p);
  if (!(min_p >= 0 && min_p <= 1)) fail(source, ": min_p must be in [0, 1] (0 turns it off), got ", min_p);
  if (!(repetition_penalty >= kMinRepetitionPenalty && repetition_penalty <= kMaxRepetitionPenalty))
    fail(source, ": repetition_penalty must be between ", kMinRepetitionPenalty, " and ", kMaxRepetitionPenalty,
         " (1 turns it off), got ", repetition_penalty);
  if (!(presence_penalty >= -2 && presence_penalty <= 2))
    fail(source, ": presence_penalty must be in [-2, 2] (0 turns it off), got ", presence_penalty);
  if (!(frequency_penalty >= -2 && frequency_penalty <= 2))
    fail(source, ": frequency_penalty must be in [-2, 2] (0 turns it off), got ", frequency_penalty);
  if (max_new_tokens && *max_new_tokens < 0) fail(source, ": max_new_tokens must be >= 0, got ", *max_new_tokens);
  for (int32_t id : eos_token_ids)
    if (id < 0) fail(source, ": eos_token_id must be a token id >= 0, got ", id);
  for (const std::string& s : stop_strings)
    if (s.empty()) fail(source, ": stop_strings must not contain an empty string");
  validate_logit_bias(logit_bias, source);
}

void validate_logit_bias(const std::vector<TokenBias>& biases, const std::string& source) {
  for (size_t i = 0; i < biases.size(); ++i) {
    const TokenBias& b = biases[i];
    if (b.id < 0) fail(source, ": logit_bias token id must be >= 0, got ", b.id);
    if (i > 0 && !(biases[i - 1].id < b.id))
      fail(source, ": logit_bias must list each token id once, in ascending order (token id ", b.id, ")");
    if (!(b.bias >= -kMaxLogitBias && b.bias <= kMaxLogitBias))
      fail(source, ": logit_bias of token ", b.id, " must be between -", kMaxLogitBias, " and ", kMaxLogitBias, ", got ",
           b.bias);
  }
}

std::vector<TokenBias> sorted_logit_bias(std::vector<TokenBias> biases, std::string_view parameter) {
  std::stable_sort(biases.begin(), biases.end(), [](const TokenBias& a, const TokenBias& b) { return a.id < b.id; });
  for (size_t i = 1; i < biases.size(); ++i)
    if (biases[i - 1].id == biases[i].id) fail(parameter, ": token id ", biases[i].id, " is given twice");
  return biases;
}

void check_logit_bias_ids(const std::vector<TokenBias>& biases, int64_t vocab, std::string_view parameter) {
  for (const TokenBias& b : biases)
    if (b.id < 0 || b.id >= vocab)
      fail(parameter, ": token id ", b.id, " is outside the vocabulary of ", vocab, " tokens");
}

namespace {

std::vector<int32_t> read_eos_ids(const Json& j, const std::string& path) {
  auto it = j.find("eos_token_id");
  if (it == j.end() || it->is_null()) return {};
  auto one = [&](const Json& v) -> int32_t {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      fail(path, ": field \"eos_token_id\" must be a token id or a list of token ids, got ", json_excerpt(v));
    return static_cast<int32_t>(v.get<int64_t>());
  };
  if (it->is_array()) {
    std::vector<int32_t> ids;
    for (const Json& v : *it) ids.push_back(one(v));
    return ids;
  }
  return {one(*it)};
}

std::vector<std::string> read_stop_strings(const Json& j, const std::string& path) {
  auto it = j.find("stop_strings");
  if (it == j.end() || it->is_null()) return {};
  auto one = [&](const Json& v) {
    if (!v.is_string()) fail(path, ": field \"stop_strings\" must be a string or a list of strings, got ", json_excerpt(v));
    return v.get<std::string>();
  };
  if (it->is_array()) {
    std::vector<std::string> out;
    for (const Json& v : *it) out.push_back(one(v));
    return out;
  }
  return {one(*it)};
}

}  // namespace

SamplingParams load_generation_config(const std::string& path) {
  SamplingParams p;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return p;
  const Json j = read_json_file(path);
  if (!j.is_object()) fail(path, ": expected a JSON object, got ", json_type_name(j));
  p.do_sample = json_bool_or(j, "do_sample", p.do_sample, path);
  if (auto v = json_number_opt(j, "temperature", path)) p.temperature = *v;
  if (auto v = json_int_opt(j, "top_k", path)) p.top_k = *v;
  if (auto v = json_number_opt(j, "top_p", path)) p.top_p = *v;
  if (auto v = json_number_opt(j, "min_p", path)) p.min_p = *v;
  if (auto v = json_number_opt(j, "repetition_penalty", path)) p.repetition_penalty = *v;
  if (auto v = json_int_opt(j, "max_new_tokens", path)) p.max_new_tokens = *v;
  p.eos_token_ids = read_eos_ids(j, path);
  p.stop_strings = read_stop_strings(j, path);
  // Parameter names are the file's field names, so the message names file and field.
  p.validate(path);
  return p;
}

SamplingParams apply_overrides(SamplingParams p, const SamplingOverrides& o) {
  if (o.do_sample) p.do_sample = *o.do_sample;
  if (o.temperature) p.temperature = *o.temperature;
  if (o.top_k) p.top_k = *o.top_k;
  if (o.top_p) p.top_p = *o.top_p;
  if (o.min_p) p.min_p = *o.min_p;
  if (o.repetition_penalty) p.repetition_penalty = *o.repetition_penalty;
  if (o.presence_penalty) p.presence_penalty = *o.presence_penalty;
  if (o.frequency_penalty) p.frequency_penalty = *o.frequency_penalty;
  if (o.seed) p.seed = *o.seed;
  if (o.max_new_tokens) p.max_new_tokens = *o.max_new_tokens;
  if (o.eos_token_ids) p.eos_token_ids = *o.eos_token_ids;
  if (o.stop_strings) p.stop_strings = *o.stop_strings;
  if (o.chain_order) p.chain_order = *o.chain_order;
  if (o.logit_bias) p.logit_bias = *o.logit_bias;
  return p;
}

}  // namespace glass
