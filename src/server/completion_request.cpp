#include "server/completion_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/json_fields.h"
#include "grammar/json_schema.h"
#include "runtime/chat_prompt.h"
#include "sampling/rng.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace glass::server {

namespace {

using OJson = nlohmann::ordered_json;

std::vector<std::string> stop_field(const OJson& body) {
  const OJson* v = field(body, "stop");
  if (v == nullptr) return {};
  std::vector<std::string> stops;
  if (v->is_string()) {
    stops.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > 4) throw invalid_parameter("stop", str_cat("'stop' takes at most 4 sequences, got ", v->size()));
    for (const OJson& s : *v) {
      if (!s.is_string()) throw wrong_type("stop", "a string or an array of strings", s);
      stops.push_back(s.get<std::string>());
    }
  } else {
    throw wrong_type("stop", "a string or an array of strings", *v);
  }
  for (const auto& s : stops)
    if (s.empty()) throw invalid_parameter("stop", "'stop' sequences must not be empty");
  return stops;
}

// A message's text: a string, or an array of {"type": "text", "text": ...} parts
// (joined with newlines, as vLLM does).
std::string content_text(const OJson& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw wrong_type(param, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const OJson& part = content[i];
    const std::string where = str_cat(param, "[", i, "]");
    if (!part.is_object()) throw wrong_type(where, "a content part object", part);
    const OJson* type = field(part, "type");
    if (type == nullptr || !type->is_string()) throw invalid_parameter(where + ".type", "'" + where + ".type' must be a string");
    if (type->get<std::string>() != "text")
      throw invalid_parameter(where + ".type", str_cat("content parts of type '", text_excerpt(type->get<std::string>()),
                                                       "' are not supported; only 'text' is"));
    const OJson* t = field(part, "text");
    if (t == nullptr || !t->is_string()) throw invalid_parameter(where + ".text", "'" + where + ".text' must be a string");
    if (i > 0) text += "\n";
    text += t->get<std::string>();
  }
  return text;
}

// An assistant message's tool_calls as the chat templates read them: OpenAI sends each
// call's arguments as a JSON string; Qwen2.5's template writes `arguments | tojson`, so
// they become the object (as vLLM does).
OJson parse_tool_calls_field(const OJson& calls, const std::string& where) {
  if (!calls.is_array()) throw wrong_type(where, "an array", calls);
  OJson out = calls;
  for (size_t j = 0; j < out.size(); ++j) {
    const std::string call = str_cat(where, "[", j, "]");
    if (!out[j].is_object()) throw wrong_type(call, "an object", out[j]);
    const OJson* function = field(out[j], "function");
    if (function == nullptr)
      throw invalid_parameter(call + ".function", "'" + call + ".function' is required", "missing_required_parameter");
    if (!function->is_object()) throw wrong_type(call + ".function", "an object", *function);
    const OJson* name = field(*function, "name");
    if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty())
      throw invalid_parameter(call + ".function.name", "'" + call + ".function.name' must be a non-empty string");
    const std::string param = call + ".function.arguments";
    const OJson* arguments = field(*function, "arguments");
    if (arguments == nullptr) throw invalid_parameter(param, "'" + param + "' is required", "missing_required_parameter");
    if (arguments->is_string()) {
      OJson object;
      try {
        object = parse_ordered_json(arguments->get_ref<const std::string&>(), param);
      } catch (const JsonInputError& e) {
        throw invalid_parameter(param, str_cat("'", param, "' must be a JSON object in a string: it ", e.reason()));
      }
      if (!object.is_object()) throw wrong_type(param, "a JSON object (in a string)", object);
      out[j]["function"]["arguments"] = std::move(object);
    } else if (!arguments->is_object()) {
      throw wrong_type(param, "a string holding a JSON object", *arguments);
    }
  }
  return out;
}

// Each tool a function with a name, as OpenAI's API takes them.
void check_tools(const OJson& tools) {
  for (size_t i = 0; i < tools.size(); ++i) {
    const OJson& t = tools[i];
    const std::string where = str_cat("tools[", i, "]");
    if (!t.is_object()) throw wrong_type(where, "an object", t);
    if (const OJson* type = field(t, "type"); type != nullptr && *type != "function")
      throw invalid_parameter(where + ".type", str_cat("'", where, ".type' must be 'function'"));
    const OJson* function = field(t, "function");
    if (function == nullptr)
      throw invalid_parameter(where + ".function", "'" + where + ".function' is required", "missing_required_parameter");
    if (!function->is_object()) throw wrong_type(where + ".function", "an object", *function);
    const OJson* name = field(*function, "name");
    if (name == nullptr)
      throw invalid_parameter(where + ".function.name", "'" + where + ".function.name' is required",
                              "missing_required_parameter");
    if (!name->is_string() || name->get_ref<const std::string&>().empty())
      throw invalid_parameter(where + ".function.name", "'" + where + ".function.name' must be a non-empty string");
  }
}

// tool_choice: "auto" (the default: the model may call), "none" (no calls are read out),
// "required" (the reply is one or more calls, decoding constrained to them) or a named
// function (the reply is a call of it). Sets parse_tool_calls and forced_tools.
void parse_tool_choice(const OJson& body, CompletionRequest& r) {
  const bool have_tools = !r.tools.is_null();
  r.parse_tool_calls = have_tools;
  const OJson* choice = field(body, "tool_choice");
  if (choice == nullptr) return;
  if (choice->is_string()) {
    const std::string& c = choice->get_ref<const std::string&>();
    if (c == "none") {
      r.parse_tool_calls = false;
    } else if (c == "required") {
      if (!have_tools) throw invalid_parameter("tool_choice", "tool_choice 'required' needs 'tools' to call");
      r.forced_tools = std::vector<std::string>{};
    } else if (c != "auto") {
      throw invalid_parameter("tool_choice", str_cat("'tool_choice' must be 'none', 'auto', 'required' or a function; got '",
                                                     text_excerpt(c), "'"));
    }
    return;
  }
  if (!choice->is_object()) throw wrong_type("tool_choice", "a string or an object", *choice);
  const OJson* function = field(*choice, "function");
  const OJson* name = function != nullptr && function->is_object() ? field(*function, "name") : nullptr;
  if (name == nullptr || !name->is_string())
    throw invalid_parameter("tool_choice", "'tool_choice' as an object must be {\"type\": \"function\", \"function\": "
                            "{\"name\": ...}}");
  const std::string& wanted = name->get_ref<const std::string&>();
  bool listed = false;
  if (have_tools)
    for (const OJson& t : r.tools) listed = listed || t["function"]["name"] == wanted;
  if (!listed)
    throw invalid_parameter("tool_choice", str_cat("'tool_choice' names the function '", text_excerpt(wanted),
                                                   "', which is not in 'tools'"));
  r.forced_tools = std::vector<std::string>{wanted};
}

OJson parse_messages(const OJson& body) {
  const OJson* v = field(body, "messages");
  if (v == nullptr) throw invalid_parameter("messages", "'messages' is required", "missing_required_parameter");
  if (!v->is_array()) throw wrong_type("messages", "an array", *v);
  if (v->empty()) throw invalid_parameter("messages", "'messages' must not be empty");
  OJson messages = OJson::array();
  for (size_t i = 0; i < v->size(); ++i) {
    const OJson& m = (*v)[i];
    const std::string where = str_cat("messages[", i, "]");
    if (!m.is_object()) throw wrong_type(where, "an object", m);
    const OJson* role = field(m, "role");
    if (role == nullptr) throw invalid_parameter(where + ".role", "'" + where + ".role' is required", "missing_required_parameter");
    if (!role->is_string()) throw wrong_type(where + ".role", "a string", *role);
    std::string r = role->get<std::string>();
    if (r != "system" && r != "developer" && r != "user" && r != "assistant" && r != "tool")
      throw invalid_parameter(where + ".role", str_cat("'", where, ".role' must be one of system, developer, user, ",
                                                       "assistant, tool; got '", text_excerpt(r), "'"));
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    OJson out = m;
    out["role"] = r;
    const OJson* content = field(m, "content");
    if (content == nullptr) {
      // An assistant turn that only calls tools has no content (OpenAI sends null);
      // templates read it as text (Qwen3's: '</think>' in message.content).
      if (!(r == "assistant" && field(m, "tool_calls") != nullptr))
        throw invalid_parameter(where + ".content", "'" + where + ".content' is required", "missing_required_parameter");
      out["content"] = "";
    } else {
      out["content"] = content_text(*content, where + ".content");
    }
    if (const OJson* calls = field(m, "tool_calls"); calls != nullptr && r == "assistant")
      out["tool_calls"] = parse_tool_calls_field(*calls, where + ".tool_calls");
    messages.push_back(std::move(out));
  }
  return messages;
}

void parse_prompt(const OJson& body, CompletionRequest& r) {
  const OJson* v = field(body, "prompt");
  if (v == nullptr) throw invalid_parameter("prompt", "'prompt' is required", "missing_required_parameter");
  const OJson* p = v;
  // A list of one prompt is the same as the prompt; several would be several choices.
  if (p->is_array() && !p->empty() && (p->front().is_string() || p->front().is_array())) {
    if (p->size() != 1)
      throw invalid_parameter("prompt", str_cat("'prompt' lists ", p->size(), " prompts; glass takes one per request"));
    p = &p->front();
  }
  if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
    return;
  }
  if (!p->is_array()) throw wrong_type("prompt", "a string or an array of token ids", *v);
  for (const OJson& id : *p) {
    if (!id.is_number_integer()) throw wrong_type("prompt", "a string or an array of token ids", id);
    if (id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw invalid_parameter("prompt", str_cat("'prompt' token id ", id.get<int64_t>(), " is out of range"));
    r.prompt_ids.push_back(id.get<int32_t>());
  }
}

// OpenAI's logit_bias: an object whose keys are token ids (decimal, as JSON keys are
// strings) and whose values are numbers in [-100, 100]. The ids' range is checked against
// the tokenizer by the server (check_logit_bias_ids).
std::optional<std::vector<TokenBias>> logit_bias_field(const OJson& body) {
  const OJson* v = field(body, "logit_bias");
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) throw wrong_type("logit_bias", "an object of token ids to biases", *v);
  std::vector<TokenBias> biases;
  for (const auto& [key, value] : v->items()) {
    const bool digits = !key.empty() && key.size() <= 10 &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int64_t id = digits ? std::stoll(key) : -1;
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      throw invalid_parameter("logit_bias", str_cat("'logit_bias' keys must be token ids (integers from 0 to ",
                                                    std::numeric_limits<int32_t>::max(), "), got \"",
                                                    text_excerpt(key), "\""));
    if (!value.is_number())
      throw wrong_type("logit_bias", str_cat("a number for each token id (token ", id, ")"), value);
    const double bias = value.get<double>();
    if (!(bias >= -kMaxLogitBias && bias <= kMaxLogitBias))
      throw invalid_parameter("logit_bias", str_cat("'logit_bias' of token ", id, " must be between -", kMaxLogitBias,
                                                    " and ", kMaxLogitBias, ", got ", bias));
    biases.push_back({static_cast<int32_t>(id), static_cast<float>(bias)});
  }
  try {
    return sorted_logit_bias(std::move(biases), "'logit_bias'");
  } catch (const Error& e) {
    throw invalid_parameter("logit_bias", e.what());
  }
}

// Fields that ask for something glass does not do: refused rather than ignored.
void refuse_unsupported(const OJson& body, Endpoint endpoint) {
  if (endpoint == Endpoint::completions) {
    if (bool_field(body, "echo").value_or(false))
      throw invalid_parameter("echo", "'echo' is not supported", "unsupported_value");
    if (const OJson* suffix = field(body, "suffix")) {
      if (!suffix->is_string()) throw wrong_type("suffix", "a string", *suffix);
      if (!suffix->get<std::string>().empty())
        throw invalid_parameter("suffix", "'suffix' is not supported", "unsupported_parameter");
    }
  }
}

// response_format (OpenAI: text, json_object, json_schema) and llama.cpp's `grammar`
// (GBNF text), as the GBNF the output is constrained to. At most one of them.
void parse_constraint(const OJson& body, CompletionRequest& r) {
  if (const OJson* format = field(body, "response_format")) {
    if (!format->is_object()) throw wrong_type("response_format", "an object", *format);
    const OJson* type = field(*format, "type");
    if (type == nullptr || !type->is_string())
      throw invalid_parameter("response_format.type", "'response_format.type' must be one of 'text', 'json_object', 'json_schema'");
    const std::string kind = type->get<std::string>();
    if (kind == "json_object") {
      r.grammar = grammar::json_object_gbnf();
      r.grammar_param = "response_format";
    } else if (kind == "json_schema") {
      const OJson* spec = field(*format, "json_schema");
      if (spec == nullptr) throw invalid_parameter("response_format.json_schema", "'response_format.json_schema' is required with type 'json_schema'");
      if (!spec->is_object()) throw wrong_type("response_format.json_schema", "an object", *spec);
      if (const OJson* name = field(*spec, "name"); name != nullptr && !name->is_string())
        throw wrong_type("response_format.json_schema.name", "a string", *name);
      if (const OJson* strict = field(*spec, "strict"); strict != nullptr && !strict->is_boolean())
        throw wrong_type("response_format.json_schema.strict", "a boolean", *strict);
      const OJson* schema = field(*spec, "schema");
      if (schema == nullptr)
        throw invalid_parameter("response_format.json_schema.schema", "'response_format.json_schema.schema' is required");
      if (!schema->is_object() && !schema->is_boolean())
        throw wrong_type("response_format.json_schema.schema", "a JSON Schema (an object)", *schema);
      try {
        r.grammar = grammar::json_schema_to_gbnf(*schema);
      } catch (const Error& e) {
        throw invalid_parameter("response_format.json_schema.schema", e.what());
      }
      r.grammar_param = "response_format.json_schema.schema";
    } else if (kind != "text") {
      throw invalid_parameter("response_format.type", str_cat("'response_format.type' must be one of 'text', 'json_object', "
                                                               "'json_schema'; got '", text_excerpt(kind), "'"),
                              "unsupported_value");
    }
  }
  if (const OJson* gbnf = field(body, "grammar")) {
    if (!gbnf->is_string()) throw wrong_type("grammar", "a string (a GBNF grammar)", *gbnf);
    if (!r.grammar.empty())
      throw invalid_parameter("grammar", str_cat("'grammar' and '", r.grammar_param, "' both constrain the output; give one"));
    r.grammar = gbnf->get<std::string>();
    r.grammar_param = "grammar";
  }
}

}  // namespace

ChatInput parse_chat_input(const OJson& body) {
  ChatInput input;
  input.messages = parse_messages(body);
  if (const OJson* tools = field(body, "tools")) {
    if (!tools->is_array()) throw wrong_type("tools", "an array", *tools);
    check_tools(*tools);
    if (!tools->empty()) input.tools = *tools;
  }
  if (const OJson* vars = field(body, "chat_template_kwargs")) {
    if (!vars->is_object()) throw wrong_type("chat_template_kwargs", "an object", *vars);
    try {
      check_template_vars(*vars, "chat_template_kwargs");
    } catch (const Error& e) {
      throw invalid_parameter("chat_template_kwargs", e.what());
    }
    input.chat_template_kwargs = *vars;
  }
  return input;
}

void read_processor_fields(const OJson& body, SamplingOverrides& s) {
  s.temperature = number_field(body, "temperature", 0, 2);
  if (s.temperature) s.do_sample = *s.temperature > 0;
  s.top_p = number_field(body, "top_p", 0, 1, /*lo_open=*/true);
  s.presence_penalty = number_field(body, "presence_penalty", -2, 2);
  s.frequency_penalty = number_field(body, "frequency_penalty", -2, 2);
  s.min_p = number_field(body, "min_p", 0, 1);
  s.repetition_penalty = number_field(body, "repetition_penalty", kMinRepetitionPenalty, kMaxRepetitionPenalty);
  // -1 is vLLM's "off"; 0 is glass's.
  if (auto k = int_field(body, "top_k", -1, std::numeric_limits<int64_t>::max())) s.top_k = std::max<int64_t>(*k, 0);
  s.logit_bias = logit_bias_field(body);
}

void check_logit_bias_vocab(const SamplingParams& params, int64_t vocab) {
  try {
    check_logit_bias_ids(params.logit_bias, vocab, "'logit_bias'");
  } catch (const Error& e) {
    throw invalid_parameter("logit_bias", e.what());
  }
}

SamplingParams resolve_overrides(const SamplingParams& defaults, const SamplingOverrides& overrides) {
  SamplingParams params = apply_overrides(defaults, overrides);
  try {
    params.validate("request");
  } catch (const Error& e) {
    throw ApiError(400, e.what(), "invalid_request_error");
  }
  return params;
}

CompletionRequest parse_completion_request(const std::string& text, Endpoint endpoint) {
  return parse_completion_body(parse_request_object(text), endpoint);
}

CompletionRequest parse_completion_body(const OJson& body, Endpoint endpoint) {
  CompletionRequest r;
  r.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::chat_completions;
  if (const OJson* model = field(body, "model")) {
    if (!model->is_string()) throw wrong_type("model", "a string", *model);
    r.model = model->get<std::string>();
  }
  if (chat) {
    ChatInput input = parse_chat_input(body);
    r.messages = std::move(input.messages);
    r.tools = std::move(input.tools);
    r.chat_template_kwargs = std::move(input.chat_template_kwargs);
    parse_tool_choice(body, r);
    r.parallel_tool_calls = bool_field(body, "parallel_tool_calls").value_or(true);
  } else {
    parse_prompt(body, r);
  }
  refuse_unsupported(body, endpoint);
  parse_constraint(body, r);
  if (r.forced_tools && !r.grammar.empty())
    throw invalid_parameter("tool_choice", str_cat("a forced tool call (tool_choice '", r.forced_tools->empty() ? "required" : "a function",
                                                   "') and '", r.grammar_param, "' both constrain the reply; give one"));

  SamplingOverrides& s = r.sampling;
  read_processor_fields(body, s);
  if (const OJson* seed = field(body, "seed")) {
    if (!seed->is_number_integer()) throw wrong_type("seed", "an integer", *seed);
    // -1 asks for a random seed, as in llama.cpp's server and glass's --seed: drawn here, so
    // that it also wins over a seed the server was started with.
    if (!seed->is_number_unsigned() && seed->get<int64_t>() < -1)
      throw invalid_parameter("seed", str_cat("'seed' must be -1 (random) or a non-negative integer, got ",
                                              seed->get<int64_t>()));
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : random_seed();
  }
  // max_completion_tokens is the chat endpoint's newer name; it wins over max_tokens.
  const auto max_tokens = int_field(body, "max_tokens", 1, std::numeric_limits<int64_t>::max());
  const auto max_completion = chat ? int_field(body, "max_completion_tokens", 1, std::numeric_limits<int64_t>::max())
                                   : std::nullopt;
  s.max_new_tokens = max_completion ? max_completion : max_tokens;
  if (!chat && !s.max_new_tokens) s.max_new_tokens = 16;
  if (auto stops = stop_field(body); !stops.empty()) s.stop_strings = std::move(stops);
  r.ignore_eos = bool_field(body, "ignore_eos").value_or(false);

  r.stream = bool_field(body, "stream").value_or(false);
  // n choices of the one prompt; completions' best_of generates that many and returns
  // the n with the highest mean log probability per token (OpenAI's legacy rule), whole
  // responses only.
  r.n = static_cast<size_t>(int_field(body, "n", 1, kMaxChoices).value_or(1));
  r.best_of = r.n;
  if (endpoint == Endpoint::completions) {
    if (auto best_of = int_field(body, "best_of", 1, kMaxChoices)) {
      if (static_cast<size_t>(*best_of) < r.n)
        throw invalid_parameter("best_of", str_cat("'best_of' (", *best_of, ") must be at least 'n' (", r.n, ")"));
      r.best_of = static_cast<size_t>(*best_of);
      if (r.best_of > r.n && r.stream)
        throw invalid_parameter("best_of", "'best_of' greater than 'n' cannot be streamed: the best are known at the end",
                                "unsupported_value");
    }
  }
  if (const OJson* options = field(body, "stream_options")) {
    if (!options->is_object()) throw wrong_type("stream_options", "an object", *options);
    if (!r.stream)
      throw invalid_parameter("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (auto usage = bool_field(*options, "include_usage")) r.include_usage = *usage;
  }
  if (chat) {
    r.logprobs = bool_field(body, "logprobs").value_or(false);
    if (auto top = int_field(body, "top_logprobs", 0, 20)) {
      if (!r.logprobs && *top > 0)
        throw invalid_parameter("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
      r.top_logprobs = static_cast<size_t>(*top);
    }
  } else if (auto n = int_field(body, "logprobs", 0, 5)) {
    r.logprobs = true;
    r.top_logprobs = static_cast<size_t>(*n);
  }
  r.return_token_ids = bool_field(body, "return_token_ids").value_or(false);
  return r;
}

SamplingParams resolve_sampling(const SamplingParams& defaults, const CompletionRequest& request) {
  SamplingOverrides o = request.sampling;
  if (request.ignore_eos) o.eos_token_ids = std::vector<int32_t>{};
  return resolve_overrides(defaults, o);
}

}  // namespace glass::server
