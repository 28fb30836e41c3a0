// Responses in OpenAI's formats: chat.completion / text_completion objects, and the
// chunks of a stream (chat.completion.chunk with deltas, or text_completion pieces).
//
// Logprobs are the model's own distribution: the log-softmax of the raw logits, before
// any penalty, temperature or truncation (as vLLM reports by default), so they do not
// change with the sampling settings. Every generated token is listed, including a
// final eos token and the tokens that made a stop string (their text is not in the
// content), as vLLM does; usage.completion_tokens counts the same tokens.
//
// Chat replies of a model that thinks (its tokenizer has <think> tags, as Qwen3's) carry
// the reasoning apart from the answer in "reasoning_content" (vLLM's field): in the
// message, and in the deltas of a stream (reasoning deltas carry reasoning_content,
// answer deltas content), with usage.completion_tokens_details.reasoning_tokens. It is
// there only when the reply (or the prompt) opened a think block. /v1/completions
// returns the raw text.
//
// Tool calls (a chat request with tools, tool_choice not "none", a model whose calls the
// server reads, see tool_calls.h): the answer's calls become message.tool_calls
// ([{"id": "call_...", "type": "function", "function": {"name", "arguments"}}], only the
// first with parallel_tool_calls false), message.content the rest (null when empty), and
// finish_reason "tool_calls" when the reply ended by itself (eos or a stop string) with a
// call. Streams send a call as OpenAI does: a delta {"index", "id", "type", "function":
// {"name", "arguments": ""}} once its arguments begin, then deltas {"index", "function":
// {"arguments"}} with the arguments as they are generated (the grammar the server applies
// after <tool_call> keeps them valid).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/reasoning.h"
#include "runtime/tool_calls.h"
#include "server/completion_id.h"
#include "server/completion_request.h"
#include "server/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace glass::server {

using OJson = nlohmann::ordered_json;

// JSON text, with bytes that are not UTF-8 (a token that is part of a character)
// replaced by U+FFFD.
std::string dump_json(const OJson& j);

// One choice of a request's response, whole or as a stream of chunks (its `index` in
// "choices"). Keeps what the completions logprobs format needs across chunks (the text
// offset).
class ResponseBuilder {
 public:
  // `tool_call_format`: how the served model writes tool calls (used when the request
  // asks for them); `tool_call_ids` makes their ids, and must be set with a format.
  ResponseBuilder(const CompletionRequest& request, const Tokenizer& tokenizer, std::string id, int64_t created,
                  std::string model, std::vector<int32_t> prompt, int index = 0,
                  ToolCallFormat tool_call_format = ToolCallFormat::none, CompletionIds* tool_call_ids = nullptr);

  // The whole response of a non-streamed request.
  OJson response(const std::vector<StreamedToken>& tokens, const FinishedGeneration& finished);

  // Streams: the first chunk (chat: the assistant role), one per token, the last ones
  // with the finish reason, then the usage chunk (when stream_options.include_usage).
  OJson first_chunk() const;
  // Every token goes through here, in order. The chunks of `token`: one with its text
  // (none when no text is released and neither logprobs nor token ids are asked for),
  // then two per tool call it completes.
  std::vector<OJson> token_chunks(const StreamedToken& token);
  // After the last token: a chunk with the text held back for a tag that never came,
  // if any (or an unclosed tool call block), then the chunk with the finish reason.
  std::vector<OJson> finish_chunks(const FinishedGeneration& finished);
  OJson usage_chunk(const FinishedGeneration& finished) const;
  // The usage chunk of several choices (combined_usage of theirs).
  OJson usage_chunk_of(OJson usage) const;
  // The usage object of this choice alone.
  OJson usage_of(const FinishedGeneration& finished) const { return usage(finished); }

 private:
  // A piece of a call returned: its place in the choice's tool_calls; on its first piece
  // its id and name; a piece of its arguments (joined, the whole arguments).
  struct ReturnedCall {
    size_t index;
    bool first = true;
    std::string id;
    std::string name;
    std::string arguments;
  };
  // What a piece of the reply releases: reasoning, content, and tool call pieces.
  struct ReplyPieces {
    std::string reasoning;
    std::string content;
    std::vector<ReturnedCall> calls;
  };
  // The splitter's pieces with the tool calls taken out of the content (`last`: the
  // reply ended), numbered and given ids; past the first dropped when
  // parallel_tool_calls is false.
  ReplyPieces take_calls(ReasoningPieces pieces, bool last);
  // One token's text, and the end of the reply.
  ReplyPieces next_pieces(std::string_view text);
  ReplyPieces last_pieces();
  // "tool_calls" when the reply ended by itself with a call; OpenAI's name of the finish otherwise.
  std::string finish_reason(const FinishedGeneration& finished) const;
  // The stream chunks of a call piece: the head (id, name, "") on its first, then the
  // arguments piece (see the top of this file).
  std::vector<OJson> call_chunks(const ReturnedCall& call) const;

  OJson chunk(OJson choice) const;
  // A chat delta of released pieces: reasoning_content and content, each when not
  // empty; {"content": ""} when neither has text.
  OJson delta(const ReasoningPieces& pieces) const;
  OJson usage(const FinishedGeneration& finished) const;
  // chat: {"content": [entries]}; completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}.
  OJson logprobs(const std::vector<StreamedToken>& tokens);
  OJson token_entry(int32_t token, float logprob) const;

  int index_;
  const CompletionRequest& request_;
  const Tokenizer& tokenizer_;
  std::string id_;
  int64_t created_;
  std::string model_;
  std::vector<int32_t> prompt_;
  int64_t text_offset_ = 0;  // completions logprobs: bytes of token text so far
  // chat, with a tokenizer that has think tags: reasoning apart from the answer.
  std::optional<ReasoningSplitter> splitter_;
  // chat, when the request reads tool calls: the calls apart from the answer's content.
  std::optional<HermesToolCallReader> tool_reader_;
  CompletionIds* tool_call_ids_;
  size_t calls_returned_ = 0;
};

// The usage of several choices of one prompt: the prompt (and its cached tokens) counted
// once, completion tokens (and reasoning tokens) summed over every choice generated.
OJson combined_usage(const std::vector<OJson>& usages);

// One response of several choices: the choices of `responses` (whole responses of one
// choice each) at the indices `keep`, in that order and numbered from 0, and the
// combined usage of all of them (best_of bills every choice generated).
OJson combined_response(std::vector<OJson> responses, const std::vector<size_t>& keep);

}  // namespace glass::server
