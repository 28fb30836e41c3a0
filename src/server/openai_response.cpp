#include "server/openai_response.h"

#include "base/error.h"

namespace glass::server {

namespace {

// Code points in UTF-8 text: the bytes that do not continue a character.
int64_t code_points(std::string_view text) {
  int64_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string dump_json(const OJson& j) { return j.dump(-1, ' ', false, OJson::error_handler_t::replace); }

ResponseBuilder::ResponseBuilder(const CompletionRequest& request, const Tokenizer& tokenizer, std::string id,
                                 int64_t created, std::string model, std::vector<int32_t> prompt, int index,
                                 ToolCallFormat tool_call_format, CompletionIds* tool_call_ids)
    : index_(index),
      request_(request),
      tokenizer_(tokenizer),
      id_(std::move(id)),
      created_(created),
      model_(std::move(model)),
      prompt_(std::move(prompt)),
      tool_call_ids_(tool_call_ids) {
  if (request_.endpoint != Endpoint::chat_completions) return;
  splitter_ = reasoning_splitter_for(tokenizer_, prompt_);
  if (request_.parse_tool_calls && tool_call_format == ToolCallFormat::hermes) {
    if (tool_call_ids_ == nullptr) fail("ResponseBuilder: reading tool calls needs tool_call_ids to name them");
    tool_reader_.emplace();
  }
}

ResponseBuilder::ReplyPieces ResponseBuilder::take_calls(ReasoningPieces pieces, bool last) {
  ReplyPieces out{std::move(pieces.reasoning), std::move(pieces.content), {}};
  if (!tool_reader_) return out;
  ToolCallReading read = tool_reader_->feed(out.content);
  if (last) {
    ToolCallReading rest = tool_reader_->finish();
    read.content += rest.content;
  }
  out.content = std::move(read.content);
  for (ToolCallPart& part : read.parts) {
    if (!request_.parallel_tool_calls && part.call > 0) continue;
    if (part.first) {
      out.calls.push_back({calls_returned_++, true, tool_call_ids_->next_tool_call(), std::move(part.name),
                           std::move(part.arguments)});
    } else {
      out.calls.push_back({calls_returned_ - 1, false, "", "", std::move(part.arguments)});
    }
  }
  return out;
}

ResponseBuilder::ReplyPieces ResponseBuilder::next_pieces(std::string_view text) {
  return take_calls(splitter_ ? splitter_->feed(text) : ReasoningPieces{"", std::string(text)}, false);
}

ResponseBuilder::ReplyPieces ResponseBuilder::last_pieces() {
  return take_calls(splitter_ ? splitter_->finish() : ReasoningPieces{}, true);
}

std::string ResponseBuilder::finish_reason(const FinishedGeneration& finished) const {
  const std::string_view name = finished.finish.openai_name();
  // Cut off by max_tokens, the reply may have meant more: "length" says so.
  if (calls_returned_ > 0 && name == "stop") return "tool_calls";
  return std::string(name);
}

std::vector<OJson> ResponseBuilder::call_chunks(const ReturnedCall& c) const {
  std::vector<OJson> entries;
  if (c.first)
    entries.push_back({{"index", c.index}, {"id", c.id}, {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", ""}}}});
  if (!c.arguments.empty()) entries.push_back({{"index", c.index}, {"function", {{"arguments", c.arguments}}}});
  std::vector<OJson> chunks;
  for (const OJson& entry : entries)
    chunks.push_back(chunk({{"index", index_}, {"delta", {{"tool_calls", OJson::array({entry})}}}, {"logprobs", nullptr},
                            {"finish_reason", nullptr}}));
  return chunks;
}

OJson ResponseBuilder::usage(const FinishedGeneration& f) const {
  OJson u = {{"prompt_tokens", f.prompt_tokens},
             {"completion_tokens", f.completion_tokens},
             {"total_tokens", f.prompt_tokens + f.completion_tokens},
             {"prompt_tokens_details", {{"cached_tokens", f.cached_tokens}}}};
  if (splitter_ && splitter_->found_reasoning())
    u["completion_tokens_details"] = {{"reasoning_tokens", splitter_->reasoning_tokens()}};
  return u;
}

OJson ResponseBuilder::token_entry(int32_t token, float logprob) const {
  const std::string_view bytes = tokenizer_.token_bytes(token);
  OJson byte_list = OJson::array();
  for (unsigned char c : bytes) byte_list.push_back(static_cast<int>(c));
  return {{"token", std::string(bytes)}, {"logprob", logprob}, {"bytes", std::move(byte_list)}};
}

OJson ResponseBuilder::logprobs(const std::vector<StreamedToken>& tokens) {
  if (!request_.logprobs) return nullptr;
  if (request_.endpoint == Endpoint::chat_completions) {
    OJson content = OJson::array();
    for (const StreamedToken& t : tokens) {
      OJson entry = token_entry(t.token, t.logprob);
      OJson top = OJson::array();
      for (const TokenLogprob& alt : t.top) top.push_back(token_entry(alt.token, alt.logprob));
      entry["top_logprobs"] = std::move(top);
      content.push_back(std::move(entry));
    }
    return {{"content", std::move(content)}, {"refusal", nullptr}};
  }
  OJson names = OJson::array(), values = OJson::array(), tops = OJson::array(), offsets = OJson::array();
  for (const StreamedToken& t : tokens) {
    names.push_back(std::string(tokenizer_.token_bytes(t.token)));
    values.push_back(t.logprob);
    OJson top = OJson::object();
    for (const TokenLogprob& alt : t.top) top[std::string(tokenizer_.token_bytes(alt.token))] = alt.logprob;
    tops.push_back(std::move(top));
    offsets.push_back(text_offset_);
    text_offset_ += code_points(t.text);
  }
  return {{"tokens", std::move(names)}, {"token_logprobs", std::move(values)}, {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

OJson ResponseBuilder::response(const std::vector<StreamedToken>& tokens, const FinishedGeneration& finished) {
  std::string text;
  std::vector<int32_t> ids;
  for (const StreamedToken& t : tokens) {
    text += t.text;
    ids.push_back(t.token);
  }
  const bool chat = request_.endpoint == Endpoint::chat_completions;
  OJson choice = {{"index", index_}};
  if (chat) {
    ReplyPieces reply;
    const auto add = [&reply](ReplyPieces p) {
      reply.reasoning += p.reasoning;
      reply.content += p.content;
      for (ReturnedCall& c : p.calls) reply.calls.push_back(std::move(c));
    };
    for (const StreamedToken& t : tokens) add(next_pieces(t.text));
    add(last_pieces());
    OJson message = {{"role", "assistant"}, {"content", reply.content}};
    if (!reply.calls.empty()) {
      // OpenAI's message of a reply that only calls tools has no content.
      if (reply.content.empty()) message["content"] = nullptr;
      OJson calls = OJson::array();
      for (const ReturnedCall& c : reply.calls) {
        if (c.first)
          calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", ""}}}});
        calls[c.index]["function"]["arguments"] =
            calls[c.index]["function"]["arguments"].get<std::string>() + c.arguments;
      }
      message["tool_calls"] = std::move(calls);
    }
    if (splitter_ && splitter_->found_reasoning()) message["reasoning_content"] = reply.reasoning;
    choice["message"] = std::move(message);
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = logprobs(tokens);
  choice["finish_reason"] = finish_reason(finished);
  if (request_.return_token_ids) choice["token_ids"] = ids;
  OJson r = {{"id", id_}, {"object", chat ? "chat.completion" : "text_completion"}, {"created", created_}, {"model", model_}};
  if (request_.return_token_ids) r["prompt_token_ids"] = prompt_;
  r["choices"] = OJson::array({std::move(choice)});
  r["usage"] = usage(finished);
  r["system_fingerprint"] = nullptr;
  return r;
}

OJson ResponseBuilder::chunk(OJson choice) const {
  const bool chat = request_.endpoint == Endpoint::chat_completions;
  OJson c = {{"id", id_}, {"object", chat ? "chat.completion.chunk" : "text_completion"}, {"created", created_},
             {"model", model_}, {"system_fingerprint", nullptr}};
  c["choices"] = OJson::array({std::move(choice)});
  // With include_usage every chunk carries "usage": null until the last one.
  if (request_.include_usage) c["usage"] = nullptr;
  return c;
}

OJson ResponseBuilder::first_chunk() const {
  OJson choice = {{"index", index_}};
  if (request_.endpoint == Endpoint::chat_completions) choice["delta"] = {{"role", "assistant"}, {"content", ""}};
  else choice["text"] = "";
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = nullptr;
  OJson c = chunk(std::move(choice));
  if (request_.return_token_ids) c["prompt_token_ids"] = prompt_;
  return c;
}

OJson ResponseBuilder::delta(const ReasoningPieces& pieces) const {
  OJson d = OJson::object();
  if (!pieces.reasoning.empty()) d["reasoning_content"] = pieces.reasoning;
  if (!pieces.content.empty() || pieces.reasoning.empty()) d["content"] = pieces.content;
  return d;
}

std::vector<OJson> ResponseBuilder::token_chunks(const StreamedToken& token) {
  const bool chat = request_.endpoint == Endpoint::chat_completions;
  const ReplyPieces pieces = next_pieces(token.text);
  const bool has_text = !pieces.reasoning.empty() || !pieces.content.empty();
  std::vector<OJson> chunks;
  // A token's logprobs and id go in its text chunk; with no text, in its first call's.
  if (has_text || ((request_.logprobs || request_.return_token_ids) && pieces.calls.empty())) {
    OJson choice = {{"index", index_}};
    if (chat) choice["delta"] = delta({pieces.reasoning, pieces.content});
    else choice["text"] = pieces.content;
    chunks.push_back(chunk(std::move(choice)));
  }
  for (const ReturnedCall& c : pieces.calls)
    for (OJson& one : call_chunks(c)) chunks.push_back(std::move(one));
  if (!chunks.empty()) {
    OJson& first = chunks.front()["choices"][0];
    first["logprobs"] = logprobs({token});
    first["finish_reason"] = nullptr;
    if (request_.return_token_ids) first["token_ids"] = OJson::array({token.token});
  }
  return chunks;
}

std::vector<OJson> ResponseBuilder::finish_chunks(const FinishedGeneration& finished) {
  std::vector<OJson> chunks;
  const bool chat = request_.endpoint == Endpoint::chat_completions;
  if (chat) {
    const ReplyPieces rest = last_pieces();
    if (!rest.reasoning.empty() || !rest.content.empty())
      chunks.push_back(chunk({{"index", index_}, {"delta", delta({rest.reasoning, rest.content})}, {"logprobs", nullptr},
                              {"finish_reason", nullptr}}));
    for (const ReturnedCall& c : rest.calls)
      for (OJson& one : call_chunks(c)) chunks.push_back(std::move(one));
  }
  OJson choice = {{"index", index_}};
  if (chat) choice["delta"] = OJson::object();
  else choice["text"] = "";
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason(finished);
  chunks.push_back(chunk(std::move(choice)));
  return chunks;
}

OJson ResponseBuilder::usage_chunk(const FinishedGeneration& finished) const { return usage_chunk_of(usage(finished)); }

OJson ResponseBuilder::usage_chunk_of(OJson usage) const {
  const bool chat = request_.endpoint == Endpoint::chat_completions;
  return {{"id", id_},           {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_}, {"model", model_},
          {"system_fingerprint", nullptr}, {"choices", OJson::array()},
          {"usage", std::move(usage)}};
}

OJson combined_usage(const std::vector<OJson>& usages) {
  if (usages.empty()) return nullptr;
  OJson u = usages.front();
  int64_t completion = 0, reasoning = 0;
  bool any_reasoning = false;
  for (const OJson& one : usages) {
    completion += one["completion_tokens"].get<int64_t>();
    if (one.contains("completion_tokens_details")) {
      any_reasoning = true;
      reasoning += one["completion_tokens_details"]["reasoning_tokens"].get<int64_t>();
    }
  }
  u["completion_tokens"] = completion;
  u["total_tokens"] = u["prompt_tokens"].get<int64_t>() + completion;
  if (any_reasoning) u["completion_tokens_details"] = {{"reasoning_tokens", reasoning}};
  return u;
}

OJson combined_response(std::vector<OJson> responses, const std::vector<size_t>& keep) {
  std::vector<OJson> usages;
  for (const OJson& r : responses) usages.push_back(r["usage"]);
  OJson choices = OJson::array();
  for (size_t i = 0; i < keep.size(); ++i) {
    OJson c = responses.at(keep[i])["choices"][0];
    c["index"] = i;
    choices.push_back(std::move(c));
  }
  OJson out = std::move(responses.front());
  out["choices"] = std::move(choices);
  out["usage"] = combined_usage(usages);
  return out;
}

}  // namespace glass::server
