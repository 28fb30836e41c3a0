// The body of POST /v1/responses (OpenAI's Responses API), parsed and validated into the
// chat request it runs as. Errors are ApiError 400 naming the field in the Responses
// shape (input[2].call_id, tools[0].type, text.format.schema, ...); a previous_response_id
// that is not stored is a 404.
//
// The conversation is a list of items. Items as glass keeps them (and GET
// /v1/responses/{id}/input_items lists them), each with an "id":
//   {"type": "message", "role": "user"|"system"|"developer"|"assistant",
//    "content": [{"type": "input_text"|"output_text", "text"}]}
//   {"type": "function_call", "call_id", "name", "arguments"}      (arguments: JSON text)
//   {"type": "function_call_output", "call_id", "output"}          (output: text)
//   {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text"}]}
// A request's `input` is a string (one user message) or such items; a message may give its
// content as a string and leave out "type"; "item_reference" items name an item of a stored
// response by its id. With previous_response_id the stored conversation (its input and
// output items) comes first. Reasoning goes to the assistant turn after it
// (reasoning_content, which templates such as Qwen3's write back only within the
// current turn); `instructions` is a system message before everything and is not carried
// over to later responses (as OpenAI).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/completion_request.h"

namespace glass::server {

struct ResponsesRequest {
  // What runs: a chat request (messages from the items, tools in the chat shape,
  // text.format as the grammar, max_output_tokens as max_new_tokens).
  CompletionRequest completion;
  // The conversation up to this response: the previous response's items, then this
  // request's input, each with an id (a stored response adds its output to them).
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  std::optional<std::string> previous_response_id;
  bool store = true;
  // The fields of the response object that repeat the request: instructions,
  // max_output_tokens, parallel_tool_calls, previous_response_id, reasoning, store,
  // temperature, text, tool_choice, tools (the Responses shape), top_p, truncation,
  // user, metadata; with their defaults when absent.
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();
};

// How the parser reaches stored state: the conversation items of a stored response
// (nullopt: none with that id), and a stored item by its id.
struct ResponsesLookup {
  std::function<std::optional<nlohmann::ordered_json>(const std::string& response_id)> conversation;
  std::function<std::optional<nlohmann::ordered_json>(const std::string& item_id)> item;
};

// `new_item_id(type)` names items that come without an id ("msg_…", "fc_…", ...).
ResponsesRequest parse_responses_request(const std::string& body, const ResponsesLookup& lookup,
                                         const std::function<std::string(const std::string& type)>& new_item_id);

// An error of the chat request it runs as, in the Responses API's names: "messages" is
// "input", "tools[i].function.parameters" is "tools[i].parameters".
ApiError in_responses_terms(const ApiError& e);

// The chat messages of a conversation (items as above), instructions first when given.
// Throws ApiError 400: a function_call_output whose call_id no earlier function_call has
// (`input[i]`, counting from `first_input`, the index of the request's first input item).
nlohmann::ordered_json chat_messages_of(const nlohmann::ordered_json& items, const std::optional<std::string>& instructions,
                                        size_t first_input);

}  // namespace glass::server
