#include "server/http_front.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <system_error>
#include <thread>

#include "base/error.h"
#include "server/openai_response.h"

namespace glass::server {

namespace {

using Clock = std::chrono::steady_clock;
// Waits are cut in slices this long so that a stopping server is noticed.
constexpr std::chrono::milliseconds kSlice{100};

int poll_ms(Clock::duration d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, kSlice.count()));
}

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

ApiError bad_request(const std::string& message, const std::string& code = "invalid_request") {
  return ApiError(400, message, "invalid_request_error", std::nullopt, code);
}

ApiError body_too_large(size_t limit) {
  return ApiError(413, str_cat("The request body is larger than this server accepts (", limit, " bytes)"),
                  "invalid_request_error", std::nullopt, "request_too_large");
}

// The log entry of a request HttpFront answered itself (or of a dropped connection).
RequestLogEntry refused(const std::string& method, const std::string& path, std::optional<int> status, std::string why) {
  RequestLogEntry e;
  e.method = method.empty() ? "-" : method;
  e.path = path.empty() ? "-" : path;
  e.status = status;
  e.error = std::move(why);
  return e;
}

// Set on the accepting thread while it turns away a connection past the limit.
thread_local bool t_over_limit = false;
thread_local Connection* t_connection = nullptr;

// A thread per connection, at most `max`; past that the connection is answered 503 on
// the accepting thread (a small write into a fresh socket's empty buffer) and closed.
class ConnectionThreads final : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t max) : max_(max) {}
  ~ConnectionThreads() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock lock(mutex_);
    // Join the threads whose connections ended.
    for (auto it = workers_.begin(); it != workers_.end();)
      if (it->done) {
        it->thread.join();
        it = workers_.erase(it);
      } else {
        ++it;
      }
    if (workers_.size() < max_) {
      auto it = workers_.emplace(workers_.end());
      try {
        it->thread = std::thread([this, it, fn] {
          fn();
          std::lock_guard done_lock(mutex_);
          it->done = true;
        });
        return;
      } catch (const std::system_error&) {
        workers_.erase(it);  // no thread to be had: refuse this one
      }
    }
    lock.unlock();
    t_over_limit = true;
    fn();
    t_over_limit = false;
  }

  void shutdown() override {
    std::list<Worker> all;
    {
      std::lock_guard lock(mutex_);
      all.swap(workers_);
    }
    for (Worker& w : all) w.thread.join();
  }

 private:
  struct Worker {
    std::thread thread;
    bool done = false;
  };
  const size_t max_;
  std::mutex mutex_;
  std::list<Worker> workers_;
};

}  // namespace

// --- ConnectionStream ---------------------------------------------------------------------

// httplib's Stream over one accepted socket, for all the requests on it: one read buffer
// (pipelined requests wait in it), reads that honour the request's deadlines, the end of
// the head found in what httplib consumes (it reads the head a byte at a time).
class ConnectionStream final : public httplib::Stream {
 public:
  enum class Failure { none, head_timeout, request_timeout, head_too_large, stopping };

  ConnectionStream(int fd, const HttpLimits& limits, std::function<bool()> stopping)
      : fd_(fd), limits_(limits), stopping_(std::move(stopping)) {}

  bool is_readable() const override { return off_ < len_ || wait_for(POLLIN, 0); }
  bool is_writable() const override {
    const auto deadline = Clock::now() + limits_.write_timeout;
    while (!wait_for(POLLOUT, poll_ms(deadline - Clock::now())))
      if (Clock::now() >= deadline || stopping_()) return false;
    return !peer_closed();
  }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ == len_ && !fill()) return failure_ != Failure::none ? -1 : 0;
    size_t n = std::min(size, len_ - off_);
    if (!head_done_) {
      for (size_t i = 0; i < n; ++i) {
        const char c = buffer_[off_ + i];
        head_state_ = c == '\r' ? (head_state_ == 2 ? 3 : 1) : c == '\n' ? (head_state_ == 1 ? 2 : head_state_ == 3 ? 4 : 0) : 0;
        if (head_state_ == 4) {
          head_done_ = true;
          n = i + 1;
          break;
        }
      }
      head_bytes_ += n;
      if (head_bytes_ > limits_.max_header_bytes) {
        failure_ = Failure::head_too_large;
        return -1;
      }
    }
    std::memcpy(ptr, buffer_.data() + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    const auto deadline = Clock::now() + limits_.write_timeout;
    for (;;) {
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (Clock::now() >= deadline || stopping_()) return -1;
      wait_for(POLLOUT, poll_ms(deadline - Clock::now()));
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

  // Waits up to `idle` for the first byte of another request; false when none came,
  // the peer closed, or the server stops.
  bool wait_for_request(std::chrono::milliseconds idle) {
    if (off_ < len_) return true;
    const auto deadline = Clock::now() + idle;
    while (!stopping_()) {
      const auto left = deadline - Clock::now();
      if (left <= Clock::duration::zero()) return false;
      if (!wait_for(POLLIN, poll_ms(left))) continue;
      const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      if (n > 0) {
        off_ = 0;
        len_ = static_cast<size_t>(n);
        return true;
      }
      if (n == 0 || (errno != EINTR && errno != EAGAIN)) return false;
    }
    return false;
  }

  void begin_request() {
    const auto now = Clock::now();
    head_deadline_ = now + limits_.header_timeout;
    request_deadline_ = now + limits_.request_timeout;
    head_done_ = false;
    head_state_ = 0;
    head_bytes_ = 0;
    failure_ = Failure::none;
  }

  Failure failure() const { return failure_; }
  bool head_done() const { return head_done_; }

  // The peer shut its side or reset (data it sent before may still wait unread).
  bool peer_closed() const {
    pollfd p{fd_, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }

  void write_all(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = write(bytes.data() + sent, bytes.size() - sent);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  // Closing with unread input makes the kernel send a reset, which can destroy the
  // response in the client's buffers (a client still sending the body of a refused
  // request reads its 413 only after): half-close, then read what still comes (at most
  // 2 s and 16 MiB, until 300 ms pass without any) before closing.
  void lingering_close() {
    ::shutdown(fd_, SHUT_WR);
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    auto quiet_until = Clock::now() + std::chrono::milliseconds(300);
    size_t drained = 0;
    while (drained < (size_t{16} << 20) && !stopping_()) {
      const auto now = Clock::now();
      if (now >= deadline || now >= quiet_until) break;
      if (!wait_for(POLLIN, poll_ms(std::min(deadline, quiet_until) - now))) continue;
      const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      if (n <= 0) break;
      drained += static_cast<size_t>(n);
      quiet_until = Clock::now() + std::chrono::milliseconds(300);
    }
  }

 private:
  bool wait_for(short events, int timeout_ms) const {
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, timeout_ms) > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }

  // Refills the empty buffer; false at the end of input, on an error or past a deadline.
  bool fill() {
    for (;;) {
      if (stopping_()) {
        failure_ = Failure::stopping;
        return false;
      }
      const auto now = Clock::now();
      const auto deadline = head_done_ ? request_deadline_ : std::min(head_deadline_, request_deadline_);
      if (now >= deadline) {
        failure_ = !head_done_ && head_deadline_ <= request_deadline_ ? Failure::head_timeout : Failure::request_timeout;
        return false;
      }
      if (!wait_for(POLLIN, poll_ms(deadline - now))) continue;
      const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      if (n > 0) {
        off_ = 0;
        len_ = static_cast<size_t>(n);
        return true;
      }
      if (n == 0) return false;
      if (errno != EINTR && errno != EAGAIN) return false;
    }
  }

  template <class F>
  void address(F get, std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ip.clear();
    port = -1;
    if (get(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, serv, sizeof serv,
                      NI_NUMERICHOST | NI_NUMERICSERV) != 0)
      return;
    ip = host;
    port = std::atoi(serv);
  }

  const int fd_;
  const HttpLimits& limits_;
  std::function<bool()> stopping_;
  std::vector<char> buffer_ = std::vector<char>(16 << 10);
  size_t off_ = 0, len_ = 0;
  Clock::time_point head_deadline_{}, request_deadline_{};
  bool head_done_ = false;
  int head_state_ = 0;  // how much of "\r\n\r\n" the head ends with
  size_t head_bytes_ = 0;
  Failure failure_ = Failure::none;
};

bool Connection::client_gone() const { return stream_.peer_closed(); }

Connection* current_connection() { return t_connection; }

// --- HttpFront ----------------------------------------------------------------------------

HttpFront::HttpFront(HttpLimits limits, HttpAccess access, Log log)
    : limits_(limits), access_(std::move(access)), log_(std::move(log)) {
  const size_t max_connections = std::max<size_t>(1, limits_.max_connections);
  new_task_queue = [max_connections] { return new ConnectionThreads(max_connections); };
  // httplib's default sets SO_REUSEPORT, with which a second server binds the same port
  // and takes half the connections. SO_REUSEADDR alone only allows a restart while old
  // connections linger in TIME_WAIT.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  set_payload_max_length(limits_.max_body_bytes);
  set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(limits_.write_timeout));
  // Only for the Keep-Alive header httplib writes; the loop below enforces them.
  set_keep_alive_timeout(std::max<time_t>(1, static_cast<time_t>((limits_.keep_alive_timeout.count() + 999) / 1000)));
  set_keep_alive_max_count(limits_.max_requests_per_connection);

  set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    Connection* c = t_connection;
    if (c != nullptr && c->refusal_) {
      res.status = c->refusal_->status();
      res.set_content(dump_json(c->refusal_->body()), "application/json");
      return HandlerResponse::Handled;
    }
    if (access_.cors.enabled() && req.method == "OPTIONS") {
      // A preflight, on any route: what a cross-origin request may do (the origin itself
      // is added below, with every response's).
      res.status = 204;
      res.set_header("Access-Control-Allow-Methods", CorsPolicy::kAllowedMethods);
      res.set_header("Access-Control-Allow-Headers",
                     CorsPolicy::allowed_headers(req.get_header_value("Access-Control-Request-Headers")));
      res.set_header("Access-Control-Max-Age", std::to_string(CorsPolicy::kMaxAgeSeconds));
      return HandlerResponse::Handled;
    }
    return HandlerResponse::Unhandled;
  });
  // A client that waits for "100 Continue" before sending its body gets the refusal
  // instead (httplib writes it at once).
  set_expect_100_continue_handler([](const httplib::Request&, httplib::Response& res) {
    Connection* c = t_connection;
    if (c == nullptr || !c->refusal_) return 100;
    res.status = c->refusal_->status();
    return res.status;
  });
  set_error_handler(HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) { return on_error(req, res); }));
  set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (access_.cors.enabled()) {
      // The answer depends on Origin: caches must keep one per origin.
      res.set_header("Vary", "Origin");
      if (req.has_header("Origin") && access_.cors.allows(req.get_header_value("Origin")))
        res.set_header("Access-Control-Allow-Origin", req.get_header_value("Origin"));
    }
    if (res.status == 401) res.set_header("WWW-Authenticate", "Bearer");
    // httplib writes "Content-Length: 0" for every empty body; a 204 has none (RFC 9110 8.6).
    if (res.status == 204) res.headers.erase("Content-Length");
    Connection* c = t_connection;
    if (c == nullptr || !c->close_after_) return;
    res.headers.erase("Keep-Alive");
    res.headers.erase("Connection");
    res.set_header("Connection", "close");
  });
  set_logger([](const httplib::Request&, const httplib::Response&) {
    if (Connection* c = t_connection) c->responded_ = true;
  });
}

HttpFront::~HttpFront() = default;

int HttpFront::bind_and_listen(const std::string& host, int port) {
  errno = 0;
  int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    const int err = errno;
    fail("cannot listen on ", host, ":", port, ": ",
         err != 0 ? std::strerror(err) : "no such address here, or the port is in use",
         err == EADDRINUSE ? " (another server has the port)" : "");
  }
  // httplib listens with a backlog of 5: a burst of connects overflows it and the
  // kernel drops SYNs, which clients resend only after a second. listen() again on the
  // listening socket sets the backlog (capped by net.core.somaxconn).
  if (::listen(svr_sock_, limits_.listen_backlog) != 0) fail("cannot listen on ", host, ":", bound, ": ", std::strerror(errno));
  return bound;
}

HttpFront::Handler HttpFront::marked_read(Handler handler) {
  return [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    if (Connection* c = t_connection) c->handler_started_ = true;
    handler(req, res);
  };
}

void HttpFront::get(const std::string& pattern, Handler handler) { Get(pattern, marked_read(std::move(handler))); }

void HttpFront::post(const std::string& pattern, Handler handler) { Post(pattern, marked_read(std::move(handler))); }

void HttpFront::del(const std::string& pattern, Handler handler) { Delete(pattern, marked_read(std::move(handler))); }

std::optional<ApiError> HttpFront::check_request(httplib::Request& req) const {
  const size_t hosts = req.get_header_value_count("Host");
  if (hosts > 1) return bad_request("The request has more than one Host header");
  if (hosts == 0 && req.version == "HTTP/1.1") return bad_request("An HTTP/1.1 request must have a Host header");

  // Framing: what httplib would read differently from another parser on the way.
  const size_t codings = req.get_header_value_count("Transfer-Encoding");
  const size_t lengths = req.get_header_value_count("Content-Length");
  if (codings > 0 && lengths > 0)
    return bad_request("The request has both Content-Length and Transfer-Encoding headers", "invalid_framing");
  if (codings > 1 || (codings == 1 && !iequals(trim(req.get_header_value("Transfer-Encoding")), "chunked")))
    return bad_request("Transfer-Encoding must be 'chunked', once", "invalid_framing");
  std::optional<uint64_t> length;
  for (size_t i = 0; i < lengths; ++i) {
    const std::string value = req.get_header_value("Content-Length", i);
    std::string_view rest(value);
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view item = trim(rest.substr(0, comma));
      if (item.empty() || item.size() > 18 || !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return bad_request(str_cat("Content-Length '", value, "' is not a length"), "invalid_framing");
      const uint64_t v = std::stoull(std::string(item));
      if (length && *length != v)
        return bad_request(str_cat("The request has conflicting Content-Length values (", *length, " and ", v, ")"),
                           "invalid_framing");
      length = v;
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  const bool has_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE" ||
                        req.method == "PRI";
  if (!has_body && (codings > 0 || length.value_or(0) > 0))
    return bad_request(str_cat("A ", req.method, " request has no body"), "invalid_framing");
  if (has_body && codings == 0) {
    // No length and not chunked: an empty body (RFC 9112 6.3); httplib would read
    // until the client closes. One length for httplib, which reads the first.
    req.headers.erase("Content-Length");
    req.set_header("Content-Length", std::to_string(length.value_or(0)));
  }
  if (length.value_or(0) > limits_.max_body_bytes) return body_too_large(limits_.max_body_bytes);

  if (hosts == 1 && !access_.hosts.allows_host(req.get_header_value("Host")))
    return ApiError(403,
                    str_cat("Host '", req.get_header_value("Host"),
                            "' is not one this server answers to (glass serve --allowed-hosts adds names)"),
                    "invalid_request_error", std::nullopt, "forbidden_host");
  if (req.has_header("Origin") && !access_.hosts.allows_origin(req.get_header_value("Origin")) &&
      !access_.cors.allows(req.get_header_value("Origin")))
    return ApiError(403,
                    str_cat("Origin '", req.get_header_value("Origin"),
                            "' may not use this server (glass serve --allowed-hosts or --cors-origin adds it)"),
                    "invalid_request_error", std::nullopt, "forbidden_origin");
  if (access_.api_key && req.method != "OPTIONS") {
    const bool open = (req.method == "GET" || req.method == "HEAD") &&
                      std::find(access_.open_paths.begin(), access_.open_paths.end(), req.path) != access_.open_paths.end();
    if (!open) {
      // Two Authorization headers present no one key: an empty value, refused like a
      // wrong key.
      const size_t count = req.get_header_value_count("Authorization");
      const std::string authorization = count == 1 ? req.get_header_value("Authorization") : std::string();
      if (auto refusal = access_.api_key->refusal(count == 0 ? nullptr : &authorization)) return refusal;
    }
  }
  return std::nullopt;
}

httplib::Server::HandlerResponse HttpFront::on_error(const httplib::Request& req, httplib::Response& res) {
  Connection* c = t_connection;
  std::optional<ApiError> e;
  if (c != nullptr) {
    switch (c->stream_.failure()) {
      case ConnectionStream::Failure::head_timeout:
        e = ApiError(408, str_cat("The request's headers did not arrive within ", limits_.header_timeout.count(), " ms"),
                     "invalid_request_error", std::nullopt, "request_timeout");
        break;
      case ConnectionStream::Failure::request_timeout:
        e = ApiError(408, str_cat("The request did not arrive within ", limits_.request_timeout.count(), " ms"),
                     "invalid_request_error", std::nullopt, "request_timeout");
        break;
      case ConnectionStream::Failure::head_too_large:
        e = ApiError(431, str_cat("The request's headers are larger than ", limits_.max_header_bytes, " bytes"),
                     "invalid_request_error", std::nullopt, "headers_too_large");
        break;
      case ConnectionStream::Failure::stopping:
        e = ApiError(503, "the server is shutting down", "server_error", std::nullopt, "server_busy");
        break;
      case ConnectionStream::Failure::none:
        if (c->refusal_ && res.body.empty()) e = *c->refusal_;
        break;
    }
    // A request refused before its handler (unreadable, refused, timed out) may have
    // left bytes that are not a next request: close after the answer. Unknown routes
    // (404) had their body read.
    if (!c->handler_started_ && (res.status != 404 || e)) c->close_after_ = true;
  }
  if (!e && !res.body.empty()) {
    if (c != nullptr && c->refusal_)
      log_(refused(req.method, req.path, c->refusal_->status(), c->refusal_->what()));
    return HandlerResponse::Unhandled;
  }
  if (!e) {
    if (res.status == 404)
      e = not_found(str_cat("Unknown route: ", req.method, " ", req.path), std::nullopt, "unknown_url");
    else if (res.status == 413)
      e = body_too_large(limits_.max_body_bytes);
    else
      e = ApiError(res.status, str_cat("The HTTP request could not be handled (status ", res.status, ")"),
                   res.status >= 500 ? "server_error" : "invalid_request_error");
  }
  log_(refused(req.method, req.path, e->status(), e->what()));
  res.status = e->status();
  res.set_content(dump_json(e->body()), "application/json");
  return HandlerResponse::Handled;
}

bool HttpFront::process_and_close_socket(socket_t sock) {
  ConnectionStream stream(sock, limits_, [this] { return stopping(); });
  Connection connection(stream);
  struct Scope {
    explicit Scope(Connection* c) { t_connection = c; }
    ~Scope() { t_connection = nullptr; }
  } scope(&connection);

  auto answer_and_close = [&](const ApiError& e) {
    const std::string body = dump_json(e.body());
    stream.write_all(str_cat("HTTP/1.1 ", e.status(), " ", reason_phrase(e.status()),
                             "\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
                             "\r\nConnection: close\r\n\r\n", body));
    log_(refused("", "", e.status(), e.what()));
    stream.lingering_close();
  };

  bool ok = true;
  if (t_over_limit) {
    // On the accepting thread: no lingering here.
    const std::string body = dump_json(
        ApiError(503, str_cat("The server has too many open connections (", limits_.max_connections, "); retry later"),
                 "server_error", std::nullopt, "too_many_connections")
            .body());
    stream.write_all(str_cat("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ",
                             body.size(), "\r\nConnection: close\r\n\r\n", body));
    ::shutdown(sock, SHUT_WR);
    char discard[4096];
    while (::recv(sock, discard, sizeof discard, MSG_DONTWAIT) > 0) {
    }
    log_(refused("", "", 503, str_cat("too many open connections (", limits_.max_connections, ")")));
  } else {
    for (size_t served = 0; served < limits_.max_requests_per_connection; ++served) {
      if (stopping() || !stream.wait_for_request(limits_.keep_alive_timeout)) break;
      stream.begin_request();
      connection.handler_started_ = connection.responded_ = connection.close_after_ = false;
      connection.refusal_.reset();
      bool client_closes = false;
      const bool last = served + 1 == limits_.max_requests_per_connection;
      try {
        ok = process_request(stream, last, client_closes, [this, &connection](httplib::Request& req) {
          try {
            connection.refusal_ = check_request(req);
          } catch (const std::exception& e) {
            connection.refusal_ = bad_request(str_cat("The request could not be read: ", e.what()));
          }
          if (connection.refusal_) connection.close_after_ = true;
        });
      } catch (const std::exception& e) {
        // Outside the handlers (which httplib guards), e.g. while a response streams:
        // end this connection, not the server.
        log_(refused("", "", std::nullopt, str_cat("connection closed: ", e.what())));
        break;
      }
      if (!connection.responded_) {
        // The request line never came whole: httplib answers nothing then.
        using F = ConnectionStream::Failure;
        if (stream.failure() == F::head_timeout || stream.failure() == F::request_timeout)
          answer_and_close(ApiError(408, str_cat("The request's headers did not arrive within ", limits_.header_timeout.count(), " ms"),
                                    "invalid_request_error", std::nullopt, "request_timeout"));
        else if (stream.failure() == F::head_too_large)
          answer_and_close(ApiError(431, str_cat("The request line is longer than ", limits_.max_header_bytes, " bytes"),
                                    "invalid_request_error", std::nullopt, "headers_too_large"));
        break;
      }
      if (connection.close_after_) {
        stream.lingering_close();
        break;
      }
      if (!ok || client_closes) break;
    }
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace glass::server
