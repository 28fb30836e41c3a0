// cpp-httplib 0.11 (Debian 12's) with the connection handling a public server needs.
//
// httplib parses requests and writes responses; this subclass owns what it does with
// connections, through the hooks 0.11 has (the private virtual process_and_close_socket,
// the protected process_request, a Stream of our own, new_task_queue, set_socket_options,
// the setup-request, pre-routing, post-routing, 100-continue and error handlers):
//   - a thread per connection (at most max_connections; the next gets 503 at once), so
//     slow clients never hold the thread /health needs;
//   - deadlines: a request's head must arrive within header_timeout of its first byte,
//     the whole request within request_timeout; past either 408 and the connection is
//     closed, however steadily the client trickles bytes; idle kept-alive connections
//     close after keep_alive_timeout;
//   - one read buffer per connection, so pipelined requests are answered in order;
//   - framing httplib would misread is refused before the body is read, and the
//     connection closed: conflicting or malformed Content-Length (400), Content-Length
//     with Transfer-Encoding or a coding other than chunked (400), a body on a GET
//     (400), a length over the limit (413); a POST with neither is an empty body;
//   - Host and Origin checked against a HostPolicy and the CORS origins (403), then the
//     API key when there is one (401), all before the body is read;
//   - CORS: the allowed origin and Vary: Origin on every response, and OPTIONS preflights
//     answered 204 on any route (cors_policy.h);
//   - no SO_REUSEPORT (a second server on the port fails to bind) and a listen backlog
//     for bursts (httplib's listen() uses 5).
// Every refusal has an OpenAI-style error body.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/api_key.h"
#include "server/cors_policy.h"
#include "server/host_policy.h"
#include "server/request_log.h"

namespace glass::server {

struct HttpLimits {
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds request_timeout{60'000};
  std::chrono::milliseconds keep_alive_timeout{5'000};
  std::chrono::milliseconds write_timeout{5'000};  // one write's progress
  size_t max_connections = 512;
  size_t max_requests_per_connection = 1000;
  size_t max_header_bytes = 64 << 10;  // request line and headers; more: 431
  size_t max_body_bytes = size_t{8} << 20;
  int listen_backlog = 1024;
};

// Who may use the server, checked before a request's body is read.
struct HttpAccess {
  HostPolicy hosts;
  CorsPolicy cors;
  // Set: every request needs it but OPTIONS and GET (or HEAD) on `open_paths`.
  std::optional<ApiKey> api_key;
  std::vector<std::string> open_paths;
};

class ConnectionStream;

// The connection a handler's request came on; handlers run on its thread.
class Connection {
 public:
  explicit Connection(ConnectionStream& stream) : stream_(stream) {}
  // The client closed its end of the connection or reset it (it may still have sent
  // requests not read yet). A non-streamed request checks this while it generates.
  bool client_gone() const;
  // Ends the connection after this response ("Connection: close").
  void close_after_response() { close_after_ = true; }

 private:
  friend class HttpFront;
  ConnectionStream& stream_;
  bool handler_started_ = false;
  bool responded_ = false;
  bool close_after_ = false;
  std::optional<ApiError> refusal_;
};

// The connection the calling thread serves; null off connection threads.
Connection* current_connection();

class HttpFront : public httplib::Server {
 public:
  // Requests it answers itself (refused, timed out, unknown routes) and connections it
  // drops, for the request log.
  using Log = std::function<void(const RequestLogEntry&)>;
  HttpFront(HttpLimits limits, HttpAccess access, Log log);
  ~HttpFront() override;

  // Binds and listens; returns the port (`port` 0: a free one). Throws glass::Error,
  // naming the reason (e.g. "Address already in use"), when it cannot.
  int bind_and_listen(const std::string& host, int port);

  // Routes whose handlers mark the request as read (the connection can be kept).
  void get(const std::string& pattern, Handler handler);
  void post(const std::string& pattern, Handler handler);
  void del(const std::string& pattern, Handler handler);

  const HttpLimits& limits() const { return limits_; }

 private:
  // The route's handler, first marking the request as read (the connection can be kept).
  static Handler marked_read(Handler handler);
  bool process_and_close_socket(socket_t sock) override;
  std::optional<ApiError> check_request(httplib::Request& req) const;
  HandlerResponse on_error(const httplib::Request& req, httplib::Response& res);
  bool stopping() const { return svr_sock_ == INVALID_SOCKET; }

  HttpLimits limits_;
  HttpAccess access_;
  Log log_;
};

}  // namespace glass::server
