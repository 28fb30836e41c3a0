#include "server/responses_request.h"

#include <limits>
#include <set>

#include "base/error.h"
#include "base/json_fields.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace glass::server {

namespace {

using OJson = nlohmann::ordered_json;

ApiError required(const std::string& param) {
  return invalid_parameter(param, "'" + param + "' is required", "missing_required_parameter");
}

// A required string field of an item; `non_empty` refuses "".
std::string string_field(const OJson& item, const char* name, const std::string& where, bool non_empty = true) {
  const std::string param = where + "." + name;
  const OJson* v = field(item, name);
  if (v == nullptr) throw required(param);
  if (!v->is_string()) throw wrong_type(param, "a string", *v);
  if (non_empty && v->get_ref<const std::string&>().empty())
    throw invalid_parameter(param, "'" + param + "' must not be empty");
  return v->get<std::string>();
}

// Text parts of a message: a string is one part of `text_type`; parts may be
// input_text, output_text or refusal (kept as output_text, its text).
OJson content_parts(const OJson& content, const std::string& param, const char* text_type) {
  if (content.is_string()) return OJson::array({{{"type", text_type}, {"text", content}}});
  if (!content.is_array()) throw wrong_type(param, "a string or an array of content parts", content);
  OJson parts = OJson::array();
  for (size_t i = 0; i < content.size(); ++i) {
    const OJson& part = content[i];
    const std::string where = str_cat(param, "[", i, "]");
    if (!part.is_object()) throw wrong_type(where, "a content part object", part);
    const std::string type = string_field(part, "type", where);
    if (type == "input_text" || type == "output_text") {
      parts.push_back({{"type", type}, {"text", string_field(part, "text", where, false)}});
    } else if (type == "refusal") {
      parts.push_back({{"type", "output_text"}, {"text", string_field(part, "refusal", where, false)}});
    } else {
      throw invalid_parameter(where + ".type",
                              str_cat("content parts of type '", text_excerpt(type),
                                      "' are not supported: glass's models read text (input_text, output_text)"),
                              "unsupported_value");
    }
  }
  return parts;
}

std::string joined_text(const OJson& parts) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) text += "\n";
    text += parts[i]["text"].get<std::string>();
  }
  return text;
}

// An input item as glass keeps it (see the header), with an id.
OJson canonical_item(const OJson& item, const std::string& where, const ResponsesLookup& lookup,
                     const std::function<std::string(const std::string&)>& new_item_id) {
  if (!item.is_object()) throw wrong_type(where, "an input item object", item);
  std::string type = "message";
  if (const OJson* t = field(item, "type")) {
    if (!t->is_string()) throw wrong_type(where + ".type", "a string", *t);
    type = t->get<std::string>();
  }
  std::string id;
  if (const OJson* v = field(item, "id")) {
    if (!v->is_string()) throw wrong_type(where + ".id", "a string", *v);
    id = v->get<std::string>();
  }
  if (type == "item_reference") {
    if (id.empty()) throw required(where + ".id");
    std::optional<OJson> found = lookup.item ? lookup.item(id) : std::nullopt;
    if (!found)
      throw invalid_parameter(where + ".id", str_cat("no stored response has an item with the id '", text_excerpt(id), "'"));
    return *found;
  }
  OJson out;
  if (type == "message") {
    const std::string role = string_field(item, "role", where);
    if (role != "user" && role != "system" && role != "developer" && role != "assistant")
      throw invalid_parameter(where + ".role", str_cat("'", where, ".role' must be one of user, system, developer, ",
                                                       "assistant; got '", text_excerpt(role), "'"));
    const OJson* content = field(item, "content");
    if (content == nullptr) throw required(where + ".content");
    out = {{"type", "message"},
           {"id", id.empty() ? new_item_id("message") : id},
           {"role", role},
           {"content", content_parts(*content, where + ".content", role == "assistant" ? "output_text" : "input_text")}};
  } else if (type == "function_call") {
    const std::string arguments = string_field(item, "arguments", where, false);
    const std::string param = where + ".arguments";
    OJson parsed;
    try {
      parsed = parse_ordered_json(arguments, param);
    } catch (const JsonInputError& e) {
      throw invalid_parameter(param, str_cat("'", param, "' must be a JSON object in a string: it ", e.reason()));
    }
    if (!parsed.is_object()) throw wrong_type(param, "a JSON object (in a string)", parsed);
    out = {{"type", "function_call"},
           {"id", id.empty() ? new_item_id("function_call") : id},
           {"call_id", string_field(item, "call_id", where)},
           {"name", string_field(item, "name", where)},
           {"arguments", arguments},
           {"status", "completed"}};
  } else if (type == "function_call_output") {
    const std::string call_id = string_field(item, "call_id", where);
    const OJson* output = field(item, "output");
    if (output == nullptr) throw required(where + ".output");
    const std::string text = output->is_string() ? output->get<std::string>()
                                                 : joined_text(content_parts(*output, where + ".output", "input_text"));
    out = {{"type", "function_call_output"},
           {"id", id.empty() ? new_item_id("function_call_output") : id},
           {"call_id", call_id},
           {"output", text}};
  } else if (type == "reasoning") {
    // The thinking of an earlier reply: its text (content), or a summary of it.
    OJson content = OJson::array();
    for (const char* name : {"content", "summary"}) {
      const OJson* parts = field(item, name);
      if (parts == nullptr) continue;
      const std::string param = where + "." + name;
      if (!parts->is_array()) throw wrong_type(param, "an array", *parts);
      for (size_t i = 0; i < parts->size(); ++i) {
        const std::string part = str_cat(param, "[", i, "]");
        if (!(*parts)[i].is_object()) throw wrong_type(part, "an object", (*parts)[i]);
        content.push_back({{"type", "reasoning_text"}, {"text", string_field((*parts)[i], "text", part, false)}});
      }
      if (!content.empty()) break;  // the content when there is some, else the summary
    }
    out = {{"type", "reasoning"}, {"id", id.empty() ? new_item_id("reasoning") : id}, {"summary", OJson::array()},
           {"content", std::move(content)}};
  } else {
    throw invalid_parameter(where + ".type",
                            str_cat("input items of type '", text_excerpt(type), "' are not supported; glass takes ",
                                    "message, function_call, function_call_output, reasoning and item_reference"),
                            "unsupported_value");
  }
  return out;
}

// tools in the Responses shape ({"type": "function", "name", "description", "parameters",
// "strict"}) as chat completions takes them.
OJson chat_tools(const OJson& tools) {
  if (!tools.is_array()) throw wrong_type("tools", "an array", tools);
  OJson out = OJson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const OJson& t = tools[i];
    const std::string where = str_cat("tools[", i, "]");
    if (!t.is_object()) throw wrong_type(where, "an object", t);
    const std::string type = string_field(t, "type", where);
    if (type != "function")
      throw invalid_parameter(where + ".type",
                              str_cat("tools of type '", text_excerpt(type), "' are not supported: glass calls ",
                                      "functions the application runs (type 'function')"),
                              "unsupported_value");
    OJson function = {{"name", string_field(t, "name", where)}};
    if (const OJson* d = field(t, "description")) {
      if (!d->is_string()) throw wrong_type(where + ".description", "a string", *d);
      function["description"] = *d;
    }
    if (const OJson* p = field(t, "parameters")) {
      if (!p->is_object()) throw wrong_type(where + ".parameters", "a JSON Schema object", *p);
      function["parameters"] = *p;
    }
    if (const OJson* s = field(t, "strict"); s != nullptr && !s->is_boolean())
      throw wrong_type(where + ".strict", "a boolean", *s);
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

// tool_choice: "none", "auto", "required" or {"type": "function", "name"}, in the chat shape.
OJson chat_tool_choice(const OJson& choice) {
  if (choice.is_string()) return choice;
  if (!choice.is_object()) throw wrong_type("tool_choice", "a string or an object", choice);
  const OJson* type = field(choice, "type");
  const OJson* name = field(choice, "name");
  if (type == nullptr || *type != "function" || name == nullptr || !name->is_string())
    throw invalid_parameter("tool_choice", "'tool_choice' must be 'none', 'auto', 'required' or {\"type\": \"function\", "
                                           "\"name\": ...}",
                            "unsupported_value");
  return {{"type", "function"}, {"function", {{"name", *name}}}};
}

// text.format: text, json_object or json_schema ({"name", "schema", "strict"}), as the GBNF
// that constrains the output ("" for text).
std::string format_grammar(const OJson& text, OJson& echo) {
  if (!text.is_object()) throw wrong_type("text", "an object", text);
  const OJson* format = field(text, "format");
  if (format == nullptr) return "";
  if (!format->is_object()) throw wrong_type("text.format", "an object", *format);
  const std::string kind = string_field(*format, "type", "text.format");
  echo["text"]["format"] = *format;
  if (kind == "text") return "";
  if (kind == "json_object") return grammar::json_object_gbnf();
  if (kind != "json_schema")
    throw invalid_parameter("text.format.type", str_cat("'text.format.type' must be one of 'text', 'json_object', ",
                                                        "'json_schema'; got '", text_excerpt(kind), "'"),
                            "unsupported_value");
  if (const OJson* strict = field(*format, "strict"); strict != nullptr && !strict->is_boolean())
    throw wrong_type("text.format.strict", "a boolean", *strict);
  const OJson* schema = field(*format, "schema");
  if (schema == nullptr) throw required("text.format.schema");
  if (!schema->is_object() && !schema->is_boolean())
    throw wrong_type("text.format.schema", "a JSON Schema (an object)", *schema);
  try {
    return grammar::json_schema_to_gbnf(*schema);
  } catch (const Error& e) {
    throw invalid_parameter("text.format.schema", e.what());
  }
}

// Fields the Responses API has that ask for what glass does not do.
void refuse_unsupported(const OJson& body) {
  if (bool_field(body, "background").value_or(false))
    throw invalid_parameter("background", "'background' responses are not supported; stream instead",
                            "unsupported_value");
  for (const char* name : {"conversation", "prompt", "max_tool_calls"})
    if (field(body, name) != nullptr)
      throw invalid_parameter(name, str_cat("'", name, "' is not supported by glass"), "unsupported_parameter");
}

// include: "message.output_text.logprobs" (the text's tokens with their log probabilities,
// top_logprobs alternatives each) and "reasoning.encrypted_content" (nothing to add:
// reasoning is kept in the store in the clear). Sets the completion's logprobs.
void parse_include(const OJson& body, CompletionRequest& r) {
  bool logprobs = false;
  if (const OJson* include = field(body, "include")) {
    if (!include->is_array()) throw wrong_type("include", "an array of strings", *include);
    for (size_t i = 0; i < include->size(); ++i) {
      const OJson& v = (*include)[i];
      const std::string param = str_cat("include[", i, "]");
      if (!v.is_string()) throw wrong_type(param, "a string", v);
      if (v == "message.output_text.logprobs") {
        logprobs = true;
      } else if (v != "reasoning.encrypted_content") {
        throw invalid_parameter(param, str_cat("'", param, "' asks for '", text_excerpt(v.get<std::string>()),
                                               "', which glass does not produce"),
                                "unsupported_value");
      }
    }
  }
  const int64_t top = int_field(body, "top_logprobs", 0, 20).value_or(0);
  // OpenAI returns the alternatives only with the include entry; asking for them
  // without it would silently give nothing.
  if (top > 0 && !logprobs)
    throw invalid_parameter("top_logprobs", "'top_logprobs' needs 'include': [\"message.output_text.logprobs\"]");
  r.logprobs = logprobs;
  r.top_logprobs = static_cast<size_t>(top);
}

}  // namespace

ApiError in_responses_terms(const ApiError& e) {
  if (!e.param()) return e;
  std::string param = *e.param();
  if (param == "messages") {
    param = "input";
  } else if (param.starts_with("tools[")) {
    if (const size_t at = param.find("].function"); at != std::string::npos) param.erase(at + 1, 9);
  }
  if (param == *e.param()) return e;
  std::string message = e.what();
  for (size_t at = message.find(*e.param()); at != std::string::npos; at = message.find(*e.param(), at + param.size())) {
    message.replace(at, e.param()->size(), param);
  }
  return ApiError(e.status(), message, e.type(), param, e.code());
}

OJson chat_messages_of(const OJson& items, const std::optional<std::string>& instructions, size_t first_input) {
  OJson messages = OJson::array();
  if (instructions) messages.push_back({{"role", "system"}, {"content", *instructions}});
  std::set<std::string> call_ids;
  std::string reasoning;  // for the next assistant turn
  const auto assistant_turn = [&](bool merge) -> OJson& {
    if (!(merge && !messages.empty() && messages.back()["role"] == "assistant")) {
      messages.push_back({{"role", "assistant"}, {"content", ""}});
      if (!reasoning.empty()) messages.back()["reasoning_content"] = std::exchange(reasoning, "");
    }
    return messages.back();
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const OJson& item = items[i];
    const std::string type = item["type"].get<std::string>();
    if (type == "message") {
      const std::string role = item["role"].get<std::string>();
      if (role == "assistant") {
        assistant_turn(false)["content"] = joined_text(item["content"]);
      } else {
        messages.push_back({{"role", role == "developer" ? "system" : role}, {"content", joined_text(item["content"])}});
      }
    } else if (type == "function_call") {
      // The calls of one reply are one assistant turn, after its text if it had any.
      OJson& turn = assistant_turn(true);
      turn["tool_calls"].push_back({{"id", item["call_id"]},
                                    {"type", "function"},
                                    {"function", {{"name", item["name"]},
                                                  {"arguments", parse_ordered_json(item["arguments"].get<std::string>(), "arguments")}}}});
      call_ids.insert(item["call_id"].get<std::string>());
    } else if (type == "function_call_output") {
      const std::string call_id = item["call_id"].get<std::string>();
      if (!call_ids.contains(call_id)) {
        const std::string param = i >= first_input ? str_cat("input[", i - first_input, "].call_id") : "previous_response_id";
        throw invalid_parameter(param, str_cat("'", param, "' is '", text_excerpt(call_id), "', which no function_call ",
                                               "before it in the conversation has"));
      }
      messages.push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", item["output"]}});
    } else if (type == "reasoning") {
      for (const OJson& part : item["content"]) reasoning += part["text"].get<std::string>();
    }
  }
  return messages;
}

ResponsesRequest parse_responses_request(const std::string& text, const ResponsesLookup& lookup,
                                         const std::function<std::string(const std::string&)>& new_item_id) {
  const OJson body = parse_request_object(text);
  ResponsesRequest r;

  // The conversation: the previous response's, then the input.
  std::optional<std::string> instructions;
  if (const OJson* v = field(body, "instructions")) {
    if (!v->is_string()) throw wrong_type("instructions", "a string", *v);
    instructions = v->get<std::string>();
  }
  if (const OJson* v = field(body, "previous_response_id")) {
    if (!v->is_string()) throw wrong_type("previous_response_id", "a string", *v);
    r.previous_response_id = v->get<std::string>();
    std::optional<OJson> earlier = lookup.conversation ? lookup.conversation(*r.previous_response_id) : std::nullopt;
    if (!earlier)
      throw not_found(str_cat("No stored response has the id '", text_excerpt(*r.previous_response_id),
                              "' (it was never stored, was deleted, or was dropped from the store)"),
                      "previous_response_id");
    r.items = std::move(*earlier);
  }
  const size_t first_input = r.items.size();
  const OJson* input = field(body, "input");
  if (input == nullptr && !r.previous_response_id && !instructions) throw required("input");
  if (input != nullptr) {
    if (input->is_string()) {
      r.items.push_back(canonical_item({{"role", "user"}, {"content", *input}}, "input", lookup, new_item_id));
    } else if (input->is_array()) {
      for (size_t i = 0; i < input->size(); ++i)
        r.items.push_back(canonical_item((*input)[i], str_cat("input[", i, "]"), lookup, new_item_id));
    } else {
      throw wrong_type("input", "a string or an array of input items", *input);
    }
  }
  if (r.items.empty() && !instructions) throw invalid_parameter("input", "'input' must not be empty");

  // The chat request it runs as; the fields of both APIs pass as they are.
  OJson chat = {{"messages", chat_messages_of(r.items, instructions, first_input)}};
  for (const char* name : {"model", "temperature", "top_p", "seed", "stream", "parallel_tool_calls", "top_k", "min_p",
                           "repetition_penalty", "presence_penalty", "frequency_penalty", "ignore_eos",
                           "chat_template_kwargs", "stop", "logit_bias"})
    if (const OJson* v = field(body, name)) chat[name] = *v;
  if (const OJson* tools = field(body, "tools")) chat["tools"] = chat_tools(*tools);
  if (const OJson* choice = field(body, "tool_choice")) chat["tool_choice"] = chat_tool_choice(*choice);
  r.completion = parse_completion_body(chat, Endpoint::chat_completions);
  // After the tools: a tool glass does not have is the clearer refusal than the include
  // entry an SDK adds for it.
  refuse_unsupported(body);
  parse_include(body, r.completion);
  r.completion.sampling.max_new_tokens = int_field(body, "max_output_tokens", 1, std::numeric_limits<int64_t>::max());

  r.echo = {{"instructions", instructions ? OJson(*instructions) : OJson(nullptr)},
            {"max_output_tokens", r.completion.sampling.max_new_tokens ? OJson(*r.completion.sampling.max_new_tokens)
                                                                       : OJson(nullptr)},
            {"parallel_tool_calls", r.completion.parallel_tool_calls},
            {"previous_response_id", r.previous_response_id ? OJson(*r.previous_response_id) : OJson(nullptr)},
            {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
            {"store", true},
            {"temperature", nullptr},
            {"text", {{"format", {{"type", "text"}}}}},
            {"tool_choice", "auto"},
            {"tools", OJson::array()},
            {"top_p", nullptr},
            {"truncation", "disabled"},
            {"user", nullptr},
            {"metadata", OJson::object()}};
  if (const OJson* v = field(body, "text")) {
    r.completion.grammar = format_grammar(*v, r.echo);
    if (!r.completion.grammar.empty()) {
      r.completion.grammar_param = "text.format.schema";
      if (r.completion.forced_tools)
        throw invalid_parameter("tool_choice", "a forced tool call (tool_choice 'required' or a function) and a JSON "
                                               "'text.format' both constrain the reply; give one");
    }
  }
  r.store = bool_field(body, "store").value_or(true);
  r.echo["store"] = r.store;
  if (const OJson* v = field(body, "reasoning")) {
    if (!v->is_object()) throw wrong_type("reasoning", "an object", *v);
    r.echo["reasoning"].update(*v);
  }
  if (const OJson* v = field(body, "truncation")) {
    if (*v != "disabled" && *v != "auto")
      throw invalid_parameter("truncation", "'truncation' must be 'disabled' or 'auto'", "unsupported_value");
    // "auto" would drop items from the start of a conversation that does not fit; glass
    // answers 400 for such a prompt either way, which is what "disabled" promises.
    if (*v == "auto")
      throw invalid_parameter("truncation", "'truncation' 'auto' is not supported; a conversation that does not fit is a 400",
                              "unsupported_value");
  }
  if (const OJson* v = field(body, "metadata")) {
    if (!v->is_object()) throw wrong_type("metadata", "an object", *v);
    if (v->size() > 16) throw invalid_parameter("metadata", "'metadata' takes at most 16 keys");
    for (const auto& [key, value] : v->items())
      if (!value.is_string()) throw wrong_type(str_cat("metadata.", key), "a string", value);
    r.echo["metadata"] = *v;
  }
  r.echo["top_logprobs"] = r.completion.top_logprobs;
  for (const char* name : {"temperature", "top_p", "tool_choice", "user"})
    if (const OJson* v = field(body, name)) r.echo[name] = *v;
  if (const OJson* tools = field(body, "tools")) r.echo["tools"] = *tools;
  return r;
}

}  // namespace glass::server
