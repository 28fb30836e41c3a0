// The OpenAI-compatible HTTP API over a Scheduler:
//   POST /v1/chat/completions, POST /v1/completions (JSON, or server-sent events with
//   "stream": true, ending in `data: [DONE]`), POST /v1/responses (OpenAI's Responses
//   API: responses_request.h, response_events.h; stored responses: GET and DELETE
//   /v1/responses/{id}, GET /v1/responses/{id}/input_items), GET /v1/models, GET /v1/models/{id},
//   GET /health, GET /metrics (Prometheus, see serving_metrics.h), POST /tokenize and
//   POST /detokenize (llama.cpp's and vLLM's shapes, see tokenize_endpoints.h), GET /props
//   (the model, its defaults, what the web UI may show), POST /inspect (one step taken
//   apart: inspect_endpoint.h), and the web UI at GET / (web_page.h).
// Errors are OpenAI-style JSON objects: 400 invalid parameters or a prompt that does
// not fit the context, 401 a missing or wrong API key, 404 unknown routes and models,
// 413 bodies over the limit, 503 when the wait queue is full, 500 when a generation
// fails.
//
// cpp-httplib parses requests; HttpFront (server/http_front.h) owns the connections (a
// thread each, deadlines, pipelining, framing, Host/Origin, CORS and API key checks,
// the listening socket). A handler tokenizes the request, submits it to the scheduler
// and writes what its GenerationStream delivers. A streaming client that disconnects
// makes a write fail: the request is cancelled and its KV blocks freed at once. Streams
// send an SSE comment after a second of silence (queued or in a long prefill), so a
// client that left is noticed then too. A non-streamed request looks at its connection
// after every token (and every 100 ms while queued): a client that closed it (or reset
// it) cancels the request the same way (logged as 499).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "runtime/tool_calls.h"
#include "sampling/sampling_params.h"
#include "server/request_log.h"
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
  // How the model writes tool calls, read out of replies to requests with tools;
  // nullopt: the chat template's (hermes when it prompts for <tool_call>).
  std::optional<ToolCallFormat> tool_call_format;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (bind() says which)
  size_t max_body_bytes = size_t{8} << 20;
  // A request's head (request line and headers) must have arrived this long after its
  // first byte, and the whole request (head and body) this long after it: a client that
  // trickles bytes cannot hold its connection longer. Past either: 408, connection closed.
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds request_timeout{60'000};
  // How long a kept-alive connection may wait for its next request.
  std::chrono::milliseconds keep_alive_timeout{5'000};
  // Open connections, each served by its own thread; the next one gets 503 at once.
  size_t max_connections = 512;
  int listen_backlog = 1024;  // the kernel caps it at net.core.somaxconn
  // Host names (optionally name:port, "*.domain", or "*" for any) a request's Host and
  // Origin may name besides the loopback ones. Empty: only loopback names when bound to
  // a loopback address, anything otherwise.
  std::vector<std::string> allowed_hosts;
  // Set: every request but GET /health (and CORS preflights) must carry
  // "Authorization: Bearer <key>"; others get 401. Must not be empty.
  std::optional<std::string> api_key;
  // Origins ("http://localhost:3000", or "*") whose web pages may read the responses
  // (CORS, see cors_policy.h). Empty: no CORS headers.
  std::vector<std::string> cors_origins;
  // Responses the Responses API keeps (store: true) for previous_response_id and GET
  // /v1/responses/{id}; past it the least recently used is dropped. 0: none kept.
  size_t responses_store = 1000;
  // The web UI at `/` (web_page.h), and the folder to read its files from instead of the
  // copies built in (nullopt: built in).
  bool webui = true;
  std::optional<std::string> webui_dir;
  // POST /inspect (inspect_endpoint.h), which the web UI's token inspector calls.
  bool inspect = true;
  bool log_requests = true;  // one line per request on stderr
  LogFormat log_format = LogFormat::text;
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
