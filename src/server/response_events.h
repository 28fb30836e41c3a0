// The Responses API's output of one generation: the response object and the stream of
// semantic events that builds it. ResponseBuilder (openai_response.h) already reads the
// reply's reasoning, text and tool calls out of the tokens, as chat completion chunks;
// this lays those chunks out as output items:
//   reasoning    {"type": "reasoning", "id": "rs_…", "summary": [],
//                 "content": [{"type": "reasoning_text", "text"}]}
//   message      {"type": "message", "id": "msg_…", "status", "role": "assistant",
//                 "content": [{"type": "output_text", "text", "annotations": []}]}
//                (with "logprobs": [{"token", "logprob", "bytes", "top_logprobs"}] when
//                asked for; reasoning and call tokens have none, as in OpenAI's API)
//   function_call {"type": "function_call", "id": "fc_…", "call_id": "call_…", "name",
//                 "arguments", "status"}
// in the order the reply wrote them. Text after a call begins a new message, except
// whitespace between calls, which is dropped. Events, each with its type and
// sequence_number (0, 1, …): response.created and response.in_progress; per item
// response.output_item.added, then for text response.content_part.added,
// response.output_text.delta (response.reasoning_text.delta) …, response.output_text.done,
// response.content_part.done, for a call response.function_call_arguments.delta …,
// response.function_call_arguments.done, then response.output_item.done; last
// response.completed, or response.incomplete (cut by max_output_tokens or the context:
// incomplete_details.reason "max_output_tokens", the open item "incomplete"), or an
// error event and response.failed.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace glass::server {

class ResponseEvents {
 public:
  using OJson = nlohmann::ordered_json;

  // `response`: the response object before any output (its fields in order; status,
  // output and usage are set here). `new_item_id(type)` names output items. `logprobs`:
  // the chunks carry them (include message.output_text.logprobs), and each output_text
  // part and delta gets the tokens of its text.
  ResponseEvents(OJson response, std::function<std::string(const std::string& type)> new_item_id, bool logprobs = false);

  std::vector<OJson> start();
  // The events of one chat completion chunk (ResponseBuilder's first_chunk, token_chunks
  // and finish_chunks, in order).
  std::vector<OJson> chunk(const OJson& chat_chunk);
  // After the last chunk: `finish_reason` is the chat one ("length": incomplete), `usage`
  // the chat usage object.
  std::vector<OJson> finish(const std::string& finish_reason, const OJson& usage);
  std::vector<OJson> fail(const std::string& message);

  // The response object as far as it goes (whole after finish or fail).
  const OJson& response() const { return response_; }

 private:
  enum class Open { none, reasoning, message, function_call };

  OJson event(const char* type, OJson fields);
  OJson& open_item() { return response_["output"][open_index_]; }
  void add_item(Open kind, OJson item, std::vector<OJson>& out);
  // Text of the reply: reasoning or answer, into the open item of that kind (a new one
  // when another kind is open).
  void text(Open kind, const std::string& delta, std::vector<OJson>& out);
  void close(const char* status, std::vector<OJson>& out);

  OJson response_;
  std::function<std::string(const std::string&)> new_item_id_;
  int64_t sequence_ = 0;
  Open open_ = Open::none;
  size_t open_index_ = 0;
  std::map<int64_t, size_t> calls_;  // a chat tool call's index -> its output index
  bool logprobs_;
  // Token entries not yet sent: a token whose text is held back (or that wrote no text)
  // goes with the next text delta.
  OJson pending_logprobs_ = OJson::array();
};

}  // namespace glass::server
