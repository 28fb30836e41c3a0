// The body of POST /v1/chat/completions and /v1/completions, parsed and validated.
// Every field is checked for type and range before anything runs; errors are
// ApiError 400 naming the parameter. Fields glass does not use (user, metadata, ...)
// are accepted and ignored; fields whose requested behaviour glass
// does not have (echo, a non-empty suffix) are refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/jinja_json.h"
#include "sampling/sampling_params.h"

namespace glass::server {

enum class Endpoint { chat_completions, completions };

// The most choices (n, best_of) one request may ask for; the server also needs that many
// running slots (--parallel).
inline constexpr int64_t kMaxChoices = 128;

struct CompletionRequest {
  Endpoint endpoint = Endpoint::chat_completions;
  std::optional<std::string> model;

  // chat: the messages as the chat template takes them (text content parts joined,
  // "developer" as "system") and the tools (null or an array).
  jinja::OrderedJson messages;
  jinja::OrderedJson tools;
  // chat: extra chat template variables (vLLM's extension), e.g. {"enable_thinking": false}.
  jinja::OrderedJson chat_template_kwargs = jinja::OrderedJson::object();
  // chat: whether tool calls are read out of the reply (tools given, tool_choice not
  // "none"), and whether more than the first is returned (parallel_tool_calls).
  bool parse_tool_calls = false;
  bool parallel_tool_calls = true;
  // chat: tool_choice "required" (empty: any of the tools) or a named function: the reply
  // is constrained to calls of these (the server builds the grammar for its model's
  // tool-call format).
  std::optional<std::vector<std::string>> forced_tools;
  // completions: the prompt as text, or as token ids.
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_ids;

  // Request fields over the server's defaults. A temperature also sets do_sample
  // (temperature 0: greedy). /v1/completions without max_tokens generates 16 tokens,
  // as OpenAI's legacy endpoint does.
  SamplingOverrides sampling;
  bool ignore_eos = false;  // extension (vLLM's): keep generating past eos tokens

  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // chat: logprobs true with top_logprobs 0..20; completions: logprobs 0..5 (the count
  // of alternatives, and logprobs on).
  bool logprobs = false;
  size_t top_logprobs = 0;
  bool return_token_ids = false;  // extension: token_ids of the prompt and the choice
  size_t n = 1;        // choices returned (1..kMaxChoices)
  size_t best_of = 1;  // completions: choices generated, >= n (chat: n)

  // Constrained decoding, as GBNF to compile ("" for none): from response_format
  // (json_object, json_schema), llama.cpp's `grammar` field, or a forced tool call;
  // `grammar_param` names the field it came from, for errors while compiling it.
  std::string grammar;
  std::string grammar_param;
};

// The chat fields of a request body (chat completions, and /tokenize given messages):
// "messages" (required; text content parts joined, "developer" as "system", the
// arguments of an assistant's tool_calls parsed from OpenAI's JSON string into an object,
// as the chat templates take them), "tools" (null when absent or empty; each a function
// with a name) and "chat_template_kwargs". Throws ApiError 400 naming the field at fault.
struct ChatInput {
  jinja::OrderedJson messages;
  jinja::OrderedJson tools;
  jinja::OrderedJson chat_template_kwargs = jinja::OrderedJson::object();
};
ChatInput parse_chat_input(const nlohmann::ordered_json& body);

// Parses a request body. Throws ApiError 400: malformed JSON, a body that is not an
// object, a field of the wrong type or out of range (param names it).
CompletionRequest parse_completion_request(const std::string& body, Endpoint endpoint);
// The same, of a body already parsed (the Responses API builds a chat body).
CompletionRequest parse_completion_body(const nlohmann::ordered_json& body, Endpoint endpoint);

// `defaults` (the checkpoint's generation_config.json with the server's flags) with the
// request's fields applied. Throws ApiError 400 when the combination is invalid.
SamplingParams resolve_sampling(const SamplingParams& defaults, const CompletionRequest& request);

// The logits processors' fields of a request body (temperature, which also sets
// do_sample, top_k, top_p, min_p, the three penalties and logit_bias), range-checked;
// shared by the completions endpoints and POST /inspect.
void read_processor_fields(const nlohmann::ordered_json& body, SamplingOverrides& overrides);
// ApiError 400 naming logit_bias when one of its token ids is not below `vocab` (the
// tokenizer's): the ranges read_processor_fields cannot know.
void check_logit_bias_vocab(const SamplingParams& params, int64_t vocab);
// `defaults` with `overrides` applied and validated (ApiError 400).
SamplingParams resolve_overrides(const SamplingParams& defaults, const SamplingOverrides& overrides);

}  // namespace glass::server
