// How the server writes a generation's output, whole or as server-sent events: chat and
// text completions (ChatFormat: OpenAI's completion objects and chunks, `data: [DONE]` at
// the end) or the Responses API (ResponsesFormat: a response object and its semantic
// events, each `event: <type>` and `data: <json>`). The server's delivery (waiting on the
// scheduler, heartbeats, cancelling for a client that left, the request log) is the same
// for both; only these differ.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/openai_response.h"
#include "server/response_events.h"
#include "server/response_store.h"

namespace glass::server {

class OutputFormat {
 public:
  virtual ~OutputFormat() = default;

  // Streams: what goes before any token, each choice's tokens as they come, each choice's
  // end, the end of the stream (every choice ended), or a failure (which ends it).
  virtual std::string stream_start() = 0;
  virtual std::string stream_tokens(size_t choice, const std::vector<StreamedToken>& tokens) = 0;
  virtual std::string stream_finished(size_t choice, const FinishedGeneration& finished) = 0;
  virtual std::string stream_end() = 0;
  virtual std::string stream_failed(const std::string& error) = 0;

  // The body of a whole response, every choice ended; `logged` is the choice whose
  // finish reason the request log names.
  virtual OJson whole(const std::vector<GenerationStream::Update>& all, size_t& logged) = 0;
};

// Chat and text completions: one ResponseBuilder per choice (each reads `request`, which
// the format keeps alive for them: a stream outlives the handler that started it).
class ChatFormat : public OutputFormat {
 public:
  ChatFormat(std::shared_ptr<const CompletionRequest> request, std::vector<std::shared_ptr<ResponseBuilder>> builders)
      : request_(std::move(request)), builders_(std::move(builders)), usages_(builders_.size()) {}

  std::string stream_start() override;
  std::string stream_tokens(size_t choice, const std::vector<StreamedToken>& tokens) override;
  std::string stream_finished(size_t choice, const FinishedGeneration& finished) override;
  std::string stream_end() override;
  std::string stream_failed(const std::string& error) override;
  OJson whole(const std::vector<GenerationStream::Update>& all, size_t& logged) override;

  // The `n` choices with the highest mean log probability per token, best first; all of
  // them in order when every choice is returned (best_of).
  static std::vector<size_t> best_choices(const std::vector<GenerationStream::Update>& all, size_t n);

 private:
  std::shared_ptr<const CompletionRequest> request_;
  std::vector<std::shared_ptr<ResponseBuilder>> builders_;
  std::vector<OJson> usages_;  // of each choice, once it ended
};

// The Responses API: one choice; its response is kept in `store` at the end when the
// request asked (store: true), with its conversation.
class ResponsesFormat : public OutputFormat {
 public:
  // `builder` reads `request`, which the format keeps alive for it.
  ResponsesFormat(std::shared_ptr<const CompletionRequest> request, std::shared_ptr<ResponseBuilder> builder,
                  ResponseEvents events, ResponseStore* store, OJson input_items)
      : request_(std::move(request)),
        builder_(std::move(builder)),
        events_(std::move(events)),
        store_(store),
        input_items_(std::move(input_items)) {}

  std::string stream_start() override;
  std::string stream_tokens(size_t choice, const std::vector<StreamedToken>& tokens) override;
  std::string stream_finished(size_t choice, const FinishedGeneration& finished) override;
  std::string stream_end() override { return ""; }
  std::string stream_failed(const std::string& error) override;
  OJson whole(const std::vector<GenerationStream::Update>& all, size_t& logged) override;

 private:
  // The events of tokens, and of the end (which stores the response when asked).
  std::vector<OJson> token_events(const std::vector<StreamedToken>& tokens);
  std::vector<OJson> finish(const FinishedGeneration& finished);
  static std::string sse(const std::vector<OJson>& events);

  std::shared_ptr<const CompletionRequest> request_;
  std::shared_ptr<ResponseBuilder> builder_;
  ResponseEvents events_;
  ResponseStore* store_;  // null: not stored
  OJson input_items_;
};

}  // namespace glass::server
