// An in-process glass server on a free loopback port, and small HTTP clients for
// tests: cpp-httplib's, and a raw socket one for what a well-behaved client never does
// (hang up mid-stream).
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "kernels/backend.h"
#include "model/kv_cache.h"
#include "model/decoder_model.h"
#include "server/openai_server.h"
#include "server/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace glass::test {

using OJson = nlohmann::ordered_json;

struct TestServerOptions {
  size_t parallel = 16;
  size_t queue = 64;
  int64_t context = 512;
  int64_t kv_tokens = 0;  // 0: parallel full contexts
  size_t max_body_bytes = size_t{1} << 20;
  std::string model_name = "test-model";
  bool log_requests = false;
  jinja::OrderedJson chat_template_kwargs = jinja::OrderedJson::object();  // the server's defaults
  // HTTP limits (0: the server's defaults).
  int port = 0;  // 0: a free port
  int header_timeout_ms = 0;
  int request_timeout_ms = 0;
  int keep_alive_timeout_ms = 0;
  size_t max_connections = 0;
  std::vector<std::string> allowed_hosts = {};
  bool prefix_cache = true;
  std::optional<std::string> api_key = std::nullopt;
  std::vector<std::string> cors_origins = {};
  server::LogFormat log_format = server::LogFormat::text;
  std::optional<ToolCallFormat> tool_call_format = std::nullopt;  // nullopt: the chat template's
  size_t responses_store = 1000;  // responses kept for /v1/responses
  bool webui = true;    // the page at /
  bool inspect = true;  // POST /inspect
};

// Greedy, with Qwen's eos tokens: what a checkpoint without generation_config.json
// gives, plus the eos ids of config.json.
SamplingParams default_sampling();

class TestServer {
 public:
  TestServer(const std::string& model_dir, TestServerOptions options = {});
  ~TestServer();

  int port() const { return port_; }
  httplib::Client client() const;
  server::SchedulerStats stats() const { return scheduler_->stats(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ChatTemplate& chat_template() const { return *chat_template_; }
  const DecoderModel& model() const { return *model_; }
  Kernels& kernels() { return backend_->kernels(); }
  int64_t context_length() const { return scheduler_->context_length(); }

 private:
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_template_;
  std::unique_ptr<DecoderModel> model_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<KVCache> cache_;
  std::unique_ptr<server::Scheduler> scheduler_;
  std::unique_ptr<server::OpenAIServer> server_;
  std::thread thread_;
  int port_ = 0;
};

struct HttpReply {
  int status = 0;  // 0: no response
  std::string body;
  httplib::Headers headers;
  OJson json() const;
  // The value of a response header; "" when there is none.
  std::string header(const std::string& name) const;
};
HttpReply post_json(const TestServer& server, const std::string& path, const std::string& body);
HttpReply get(const TestServer& server, const std::string& path);
// GET, POST (a JSON body), DELETE or OPTIONS with extra request headers.
HttpReply send(const TestServer& server, const std::string& method, const std::string& path, const httplib::Headers& headers,
               const std::string& body = "");

// The `data:` payloads of a server-sent-event stream, in order ("[DONE]" included).
std::vector<std::string> sse_data(const std::string& body);

// What a stream chunk with generated text contains (the first chunk, sent before the
// request is admitted, has the role and empty content).
inline constexpr const char* kTokenChunk = "\"delta\":{\"content\":";

// A chat completions request with one user message; `fields` (`"name": value, ...`) are
// added to the object.
std::string chat_body(const std::string& user, const std::string& fields = "");

// Polls `condition` every 10 ms until it holds or `timeout` passes.
void wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A raw HTTP/1.1 connection to 127.0.0.1:port.
class RawConnection {
 public:
  explicit RawConnection(int port);
  ~RawConnection();
  void send_all(const std::string& bytes);
  // POST with a JSON body.
  void post(const std::string& path, const std::string& body);
  // Reads until `needle` has arrived (or the peer closes / `timeout_ms` passes); returns
  // everything read so far.
  std::string read_until(const std::string& needle, int timeout_ms = 10000);
  // Reads until the peer closes the connection (true) or `timeout_ms` passes (false).
  bool read_until_closed(int timeout_ms);
  const std::string& received() const { return received_; }
  void close();
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string received_;
};

}  // namespace glass::test
