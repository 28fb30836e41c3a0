#include "server_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace glass::test {

SamplingParams default_sampling() {
  SamplingParams p;
  p.eos_token_ids = {151645, 151643};
  return p;
}

TestServer::TestServer(const std::string& model_dir, TestServerOptions options) {
  tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::load(model_dir));
  chat_template_ = std::make_unique<ChatTemplate>(ChatTemplate::from_checkpoint(model_dir));
  model_ = std::make_unique<DecoderModel>(DecoderModel::load(model_dir));
  // Two threads where the machine has them (Backend refuses more than its CPUs).
  backend_ = std::make_unique<Backend>("cpu", std::min(2, ThreadPool::hardware_threads()));
  const int64_t kv_tokens = options.kv_tokens > 0 ? options.kv_tokens : static_cast<int64_t>(options.parallel) * options.context;
  cache_ = std::make_unique<KVCache>(model_->config(), KVType::F32, kv_tokens,
                                     KVCacheOptions{.prefix_cache = options.prefix_cache});
  server::SchedulerOptions sched;
  sched.max_running = options.parallel;
  sched.max_waiting = options.queue;
  scheduler_ = std::make_unique<server::Scheduler>(*model_, backend_->kernels(), *cache_, *tokenizer_, options.context, sched);
  server::ServedModel served{options.model_name, tokenizer_.get(), chat_template_.get(), default_sampling(),
                             options.chat_template_kwargs, options.tool_call_format};
  server::ServerOptions http;
  http.port = options.port;
  http.max_body_bytes = options.max_body_bytes;
  http.log_requests = options.log_requests;
  using std::chrono::milliseconds;
  if (options.header_timeout_ms > 0) http.header_timeout = milliseconds(options.header_timeout_ms);
  if (options.request_timeout_ms > 0) http.request_timeout = milliseconds(options.request_timeout_ms);
  if (options.keep_alive_timeout_ms > 0) http.keep_alive_timeout = milliseconds(options.keep_alive_timeout_ms);
  if (options.max_connections > 0) http.max_connections = options.max_connections;
  http.allowed_hosts = options.allowed_hosts;
  http.api_key = options.api_key;
  http.cors_origins = options.cors_origins;
  http.log_format = options.log_format;
  http.responses_store = options.responses_store;
  http.webui = options.webui;
  http.inspect = options.inspect;
  server_ = std::make_unique<server::OpenAIServer>(*scheduler_, served, http);
  port_ = server_->bind();
  thread_ = std::thread([this] { server_->listen(); });
}

TestServer::~TestServer() {
  server_->stop();
  thread_.join();
}

httplib::Client TestServer::client() const {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(60, 0);
  return c;
}

OJson HttpReply::json() const { return OJson::parse(body); }

std::string HttpReply::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

HttpReply post_json(const TestServer& server, const std::string& path, const std::string& body) {
  return send(server, "POST", path, {}, body);
}

HttpReply get(const TestServer& server, const std::string& path) { return send(server, "GET", path, {}); }

HttpReply send(const TestServer& server, const std::string& method, const std::string& path, const httplib::Headers& headers,
               const std::string& body) {
  httplib::Client c = server.client();
  httplib::Result r = method == "POST"      ? c.Post(path.c_str(), headers, body, "application/json")
                      : method == "OPTIONS" ? c.Options(path.c_str(), headers)
                      : method == "GET"     ? c.Get(path.c_str(), headers)
                      : method == "DELETE"  ? c.Delete(path.c_str(), headers)
                                            : throw std::invalid_argument("send: no method " + method);
  if (!r) return {0, "no response: " + httplib::to_string(r.error()), {}};
  return {r->status, r->body, r->headers};
}

std::string chat_body(const std::string& user, const std::string& fields) {
  OJson body = {{"model", "test-model"}, {"messages", {{{"role", "user"}, {"content", user}}}}};
  std::string text = body.dump();
  if (!fields.empty()) text = text.substr(0, text.size() - 1) + ", " + fields + "}";
  return text;
}

void wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(pos, end - pos);
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
    pos = end + 1;
  }
  return out;
}

RawConnection::RawConnection(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("connect failed");
}

RawConnection::~RawConnection() { close(); }

void RawConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawConnection::read_until_closed(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return true;  // closed (or reset)
    received_.append(buf, static_cast<size_t>(n));
  }
}

void RawConnection::send_all(const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    sent += static_cast<size_t>(n);
  }
}

void RawConnection::post(const std::string& path, const std::string& body) {
  send_all("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body);
}

std::string RawConnection::read_until(const std::string& needle, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (received_.find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) break;
    received_.append(buf, static_cast<size_t>(n));
  }
  return received_;
}

}  // namespace glass::test
