#include "server/response_events.h"

#include <algorithm>

namespace glass::server {

namespace {

bool all_whitespace(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; });
}

}  // namespace

ResponseEvents::ResponseEvents(OJson response, std::function<std::string(const std::string&)> new_item_id, bool logprobs)
    : response_(std::move(response)), new_item_id_(std::move(new_item_id)), logprobs_(logprobs) {
  response_["status"] = "in_progress";
  response_["output"] = OJson::array();
  response_["usage"] = nullptr;
}

ResponseEvents::OJson ResponseEvents::event(const char* type, OJson fields) {
  OJson e = {{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [key, value] : fields.items()) e[key] = std::move(value);
  return e;
}

std::vector<ResponseEvents::OJson> ResponseEvents::start() {
  std::vector<OJson> out;
  out.push_back(event("response.created", {{"response", response_}}));
  out.push_back(event("response.in_progress", {{"response", response_}}));
  return out;
}

void ResponseEvents::add_item(Open kind, OJson item, std::vector<OJson>& out) {
  response_["output"].push_back(std::move(item));
  open_ = kind;
  open_index_ = response_["output"].size() - 1;
  out.push_back(event("response.output_item.added", {{"output_index", open_index_}, {"item", open_item()}}));
}

void ResponseEvents::text(Open kind, const std::string& delta, std::vector<OJson>& out) {
  const bool reasoning = kind == Open::reasoning;
  if (open_ != kind) {
    close("completed", out);
    if (reasoning)
      add_item(kind, {{"id", new_item_id_("reasoning")}, {"type", "reasoning"}, {"status", "in_progress"},
                      {"summary", OJson::array()}, {"content", OJson::array()}}, out);
    else
      add_item(kind, {{"id", new_item_id_("message")}, {"type", "message"}, {"status", "in_progress"},
                      {"role", "assistant"}, {"content", OJson::array()}}, out);
    OJson part = reasoning ? OJson{{"type", "reasoning_text"}, {"text", ""}}
                           : OJson{{"type", "output_text"}, {"text", ""}, {"annotations", OJson::array()}};
    if (!reasoning && logprobs_) part["logprobs"] = OJson::array();
    open_item()["content"].push_back(part);
    out.push_back(event("response.content_part.added", {{"item_id", open_item()["id"]},
                                                        {"output_index", open_index_},
                                                        {"content_index", 0},
                                                        {"part", std::move(part)}}));
  }
  OJson& part = open_item()["content"][0];
  part["text"].get_ref<std::string&>() += delta;
  OJson fields = {{"item_id", open_item()["id"]}, {"output_index", open_index_}, {"content_index", 0}, {"delta", delta}};
  if (!reasoning) {
    fields["logprobs"] = std::exchange(pending_logprobs_, OJson::array());
    if (logprobs_)
      for (const OJson& entry : fields["logprobs"]) part["logprobs"].push_back(entry);
  }
  out.push_back(event(reasoning ? "response.reasoning_text.delta" : "response.output_text.delta", std::move(fields)));
}

void ResponseEvents::close(const char* status, std::vector<OJson>& out) {
  if (open_ == Open::none) return;
  OJson& item = open_item();
  if (open_ == Open::function_call) {
    out.push_back(event("response.function_call_arguments.done", {{"item_id", item["id"]},
                                                                  {"output_index", open_index_},
                                                                  {"name", item["name"]},
                                                                  {"arguments", item["arguments"]}}));
  } else {
    const bool reasoning = open_ == Open::reasoning;
    if (!reasoning && logprobs_) {
      // Tokens after the last text (an eos, the end of a stop string) belong to the text.
      for (const OJson& entry : pending_logprobs_) item["content"][0]["logprobs"].push_back(entry);
      pending_logprobs_ = OJson::array();
    }
    OJson fields = {{"item_id", item["id"]},
                    {"output_index", open_index_},
                    {"content_index", 0},
                    {"text", item["content"][0]["text"]}};
    if (!reasoning) fields["logprobs"] = logprobs_ ? item["content"][0]["logprobs"] : OJson::array();
    out.push_back(event(reasoning ? "response.reasoning_text.done" : "response.output_text.done", std::move(fields)));
    out.push_back(event("response.content_part.done", {{"item_id", item["id"]},
                                                       {"output_index", open_index_},
                                                       {"content_index", 0},
                                                       {"part", item["content"][0]}}));
  }
  item["status"] = status;
  out.push_back(event("response.output_item.done", {{"output_index", open_index_}, {"item", item}}));
  open_ = Open::none;
}

std::vector<ResponseEvents::OJson> ResponseEvents::chunk(const OJson& chat_chunk) {
  std::vector<OJson> out;
  const auto choices = chat_chunk.find("choices");
  if (choices == chat_chunk.end() || choices->empty()) return out;
  const auto delta = choices->front().find("delta");
  if (delta == choices->front().end()) return out;
  // A token's log probabilities ride on its first chunk; they are the answer's only when
  // that token writes answer text (or none yet), not reasoning or a call.
  const bool answer_token = !delta->contains("reasoning_content") && !delta->contains("tool_calls");
  if (const auto lp = choices->front().find("logprobs"); logprobs_ && answer_token && lp != choices->front().end() &&
                                                           lp->is_object() && lp->contains("content"))
    for (const OJson& entry : (*lp)["content"]) pending_logprobs_.push_back(entry);
  if (const auto r = delta->find("reasoning_content"); r != delta->end() && !r->get_ref<const std::string&>().empty())
    text(Open::reasoning, r->get<std::string>(), out);
  if (const auto c = delta->find("content"); c != delta->end() && c->is_string()) {
    const std::string& content = c->get_ref<const std::string&>();
    if (!content.empty() && !(open_ == Open::function_call && all_whitespace(content))) text(Open::message, content, out);
  }
  if (const auto calls = delta->find("tool_calls"); calls != delta->end()) {
    for (const OJson& entry : *calls) {
      const int64_t index = entry["index"].get<int64_t>();
      const OJson& function = entry["function"];
      if (entry.contains("id")) {
        close("completed", out);
        add_item(Open::function_call, {{"id", new_item_id_("function_call")}, {"type", "function_call"},
                                       {"status", "in_progress"}, {"arguments", ""}, {"call_id", entry["id"]},
                                       {"name", function["name"]}}, out);
        calls_[index] = open_index_;
      }
      const std::string& arguments = function["arguments"].get_ref<const std::string&>();
      const auto call = calls_.find(index);
      if (arguments.empty() || call == calls_.end()) continue;
      OJson& item = response_["output"][call->second];
      item["arguments"].get_ref<std::string&>() += arguments;
      out.push_back(event("response.function_call_arguments.delta",
                          {{"item_id", item["id"]}, {"output_index", call->second}, {"delta", arguments}}));
    }
  }
  return out;
}

std::vector<ResponseEvents::OJson> ResponseEvents::finish(const std::string& finish_reason, const OJson& usage) {
  std::vector<OJson> out;
  const bool cut = finish_reason == "length";
  close(cut ? "incomplete" : "completed", out);
  response_["status"] = cut ? "incomplete" : "completed";
  if (cut) response_["incomplete_details"] = {{"reason", "max_output_tokens"}};
  const int64_t input = usage["prompt_tokens"].get<int64_t>();
  const int64_t output = usage["completion_tokens"].get<int64_t>();
  int64_t reasoning = 0;
  if (const auto d = usage.find("completion_tokens_details"); d != usage.end()) reasoning = (*d)["reasoning_tokens"].get<int64_t>();
  int64_t cached = 0;
  if (const auto d = usage.find("prompt_tokens_details"); d != usage.end()) cached = (*d)["cached_tokens"].get<int64_t>();
  response_["usage"] = {{"input_tokens", input},
                        {"input_tokens_details", {{"cached_tokens", cached}}},
                        {"output_tokens", output},
                        {"output_tokens_details", {{"reasoning_tokens", reasoning}}},
                        {"total_tokens", input + output}};
  out.push_back(event(cut ? "response.incomplete" : "response.completed", {{"response", response_}}));
  return out;
}

std::vector<ResponseEvents::OJson> ResponseEvents::fail(const std::string& message) {
  std::vector<OJson> out;
  // An error event first, in OpenAI's flat shape and with the nested "error" that the
  // Vercel AI SDK reads (the openai client throws on it); then the failed response.
  out.push_back(event("error", {{"code", "server_error"},
                                {"message", message},
                                {"param", nullptr},
                                {"error", {{"type", "server_error"}, {"code", "server_error"}, {"message", message},
                                           {"param", nullptr}}}}));
  close("incomplete", out);
  response_["status"] = "failed";
  response_["error"] = {{"type", "server_error"}, {"code", "server_error"}, {"message", message}};
  out.push_back(event("response.failed", {{"response", response_}}));
  return out;
}

}  // namespace glass::server
