// The OpenAI-compatible HTTP API over a Scheduler:
//   POST /v1/chat/completions, POST /v1/completions (JSON, or server-sent events with
//   "stream": true, ending in `data: [DONE]`), GET /v1/models, GET /v1/models/{id},
//   GET /health.
// Errors are OpenAI-style JSON objects: 400 invalid parameters or a prompt that does
// not fit the context, 404 unknown routes and models, 413 bodies over the limit, 503
// when the wait queue is full, 500 when a generation fails.
//
// cpp-httplib serves each connection on a thread of its pool; a handler tokenizes the
// request, submits it to the scheduler and writes what its GenerationStream delivers.
// A streaming client that disconnects makes a write fail: the request is cancelled and
// its KV blocks freed at once. Streams send an SSE comment after a second of silence
// (queued or in a long prefill), so a client that left is noticed then too.
// Non-streamed requests run to the end even when their client leaves (nothing is
// written before the end).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "chat/chat_template.h"
#include "sampling/sampling_params.h"
#include "server/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace glass::server {

struct ServedModel {
  std::string id;  // the name clients put in "model" and /v1/models lists
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat_template = nullptr;  // null: /v1/chat/completions answers 400
  SamplingParams defaults;  // generation_config.json with the server's flags
  // Chat template variables for every request; a request's chat_template_kwargs go over
  // them, variable by variable.
  jinja::OrderedJson chat_template_kwargs = jinja::OrderedJson::object();
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (bind() says which)
  size_t max_body_bytes = size_t{8} << 20;
  // Connection threads; 0: the scheduler's max_running + max_waiting + 8, so that every
  // request the scheduler could hold (and a few /health calls) has a thread, and one
  // past that gets its 503 instead of waiting for a thread.
  size_t http_threads = 0;
  bool log_requests = true;  // one line per request on stderr
};

class OpenAIServer {
 public:
  OpenAIServer(Scheduler& scheduler, ServedModel model, ServerOptions options);
  ~OpenAIServer();
  OpenAIServer(const OpenAIServer&) = delete;
  OpenAIServer& operator=(const OpenAIServer&) = delete;

  // Binds the listening socket; returns the port. Throws glass::Error when it cannot.
  int bind();
  // Serves until stop() (bind() first).
  void listen();
  // Ends every request (they get an error), then stops listening; listen() returns.
  // Safe from any thread.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace glass::server
