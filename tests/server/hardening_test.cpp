// The server against clients that misbehave: slow-loris, requests that are framed
// ambiguously, pipelining, DNS rebinding (Host / Origin), a second server on the same
// port, bursts of connects, clients that leave while their non-streamed request runs.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "server_harness.h"
#include "support/test_support.h"

namespace glass::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The status of the first response in `bytes` (0: none).
int status_of(const std::string& bytes) {
  if (bytes.rfind("HTTP/1.1 ", 0) != 0 || bytes.size() < 12) return 0;
  return std::stoi(bytes.substr(9, 3));
}

size_t count_of(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

// The JSON body of a single response (after the blank line), or null.
OJson body_of(const std::string& bytes) {
  const size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string::npos) return nullptr;
  return OJson::parse(bytes.substr(head_end + 4), nullptr, false);
}

// Sends `request` on a fresh connection and reads until the server closes it.
std::string round_trip(const TestServer& s, const std::string& request, int timeout_ms = 5000) {
  RawConnection c(s.port());
  c.send_all(request);
  c.read_until_closed(timeout_ms);
  return c.received();
}

std::string post_request(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" + body;
}

void expect_api_error(const std::string& response, int status, const std::string& in_message) {
  EXPECT_EQ(status_of(response), status) << response;
  const OJson j = body_of(response);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << response;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(in_message), std::string::npos) << response;
  EXPECT_TRUE(j["error"]["type"].is_string()) << response;
}

// --- Non-streamed requests whose client leaves ------------------------------------------

TEST(ServerHardening, NonStreamedRequestWhoseClientLeavesIsCancelled) {
  TestServer s(demo_model_dir(), {.parallel = 1, .queue = 4, .context = 4096});
  {
    RawConnection c(s.port());
    c.post("/v1/chat/completions", chat_body("go", R"("max_tokens": 4000, "ignore_eos": true)"));
    wait_for([&] { return s.stats().running == 1 && s.stats().forward_passes >= 3; });
    ASSERT_EQ(s.stats().running, 1u);
    c.close();
  }
  const auto left = Clock::now();
  wait_for([&] { return s.stats().running == 0; }, 10s);
  const server::SchedulerStats st = s.stats();
  EXPECT_EQ(st.cancelled, 1) << "the generation should stop when its client goes";
  EXPECT_EQ(st.completed, 0);
  EXPECT_LT(seconds_since(left), 2.0);
  EXPECT_EQ(st.kv_blocks_free, st.kv_blocks_total) << "every block is back";
  EXPECT_EQ(st.kv_blocks_reserved, 0);
  // The slot is free for the next one.
  EXPECT_EQ(post_json(s, "/v1/chat/completions", chat_body("next", R"("max_tokens": 2)")).status, 200);
}

TEST(ServerHardening, QueuedNonStreamedRequestWhoseClientLeavesIsDropped) {
  TestServer s(demo_model_dir(), {.parallel = 1, .queue = 4, .context = 4096});
  RawConnection running(s.port());
  running.post("/v1/chat/completions", chat_body("go", R"("max_tokens": 4000, "ignore_eos": true, "stream": true)"));
  running.read_until("\"delta\":{\"content\":");
  {
    RawConnection queued(s.port());
    queued.post("/v1/chat/completions", chat_body("wait", R"("max_tokens": 5)"));
    wait_for([&] { return s.stats().waiting == 1; });
    ASSERT_EQ(s.stats().waiting, 1u);
  }
  wait_for([&] { return s.stats().waiting == 0; }, 5s);
  EXPECT_EQ(s.stats().waiting, 0u);
  EXPECT_EQ(s.stats().cancelled, 1);
  EXPECT_EQ(s.stats().running, 1u);
}

// --- Deadlines and slow clients ---------------------------------------------------------

// Sends `bytes` one a time, `gap` apart, until the server answers or closes; returns what
// it answered and when.
struct Trickled {
  std::string response;
  double seconds = 0;
};
Trickled trickle(RawConnection& c, const std::string& bytes, std::chrono::milliseconds gap, double give_up_s) {
  const auto start = Clock::now();
  for (size_t i = 0; seconds_since(start) < give_up_s; ++i) {
    try {
      c.send_all(std::string(1, bytes[i % bytes.size()]));
    } catch (const std::exception&) {
      break;  // the server closed the connection
    }
    const std::string got = c.read_until("\r\n\r\n", static_cast<int>(gap.count()));
    if (got.find("\r\n\r\n") != std::string::npos) break;
  }
  return {c.read_until("\"}}", 500), seconds_since(start)};
}

TEST(ServerHardening, HeadersTrickledByteByByteHitTheHeaderDeadline) {
  TestServer s(demo_model_dir(), {.header_timeout_ms = 700, .request_timeout_ms = 5000});
  RawConnection c(s.port());
  c.send_all("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  // A byte every 50 ms: a per-read timeout never fires.
  const Trickled t = trickle(c, "X-Slow-Loris: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 50ms, 4.0);
  expect_api_error(t.response, 408, "headers");
  EXPECT_LT(t.seconds, 2.0);
  EXPECT_NE(t.response.find("Connection: close"), std::string::npos) << t.response;
  EXPECT_TRUE(c.read_until_closed(2000)) << "the connection is closed after a 408";
}

TEST(ServerHardening, BodyTrickledByteByByteHitsTheRequestDeadline) {
  TestServer s(demo_model_dir(), {.header_timeout_ms = 700, .request_timeout_ms = 1500});
  RawConnection c(s.port());
  c.send_all("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n");
  const Trickled t = trickle(c, R"({"prompt": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa)", 50ms, 5.0);
  expect_api_error(t.response, 408, "request");
  EXPECT_GT(t.seconds, 1.2);
  EXPECT_LT(t.seconds, 3.0);
  EXPECT_TRUE(c.read_until_closed(2000));
}

TEST(ServerHardening, RequestLineTrickledHitsTheHeaderDeadline) {
  TestServer s(demo_model_dir(), {.header_timeout_ms = 700, .request_timeout_ms = 5000});
  RawConnection c(s.port());
  const Trickled t = trickle(c, "GET /health?aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 50ms, 4.0);
  expect_api_error(t.response, 408, "headers");
  EXPECT_LT(t.seconds, 2.0);
}

TEST(ServerHardening, HeadersOverTheLimitGet431) {
  TestServer s(demo_model_dir());
  std::string headers;
  for (int i = 0; i < 20; ++i) headers += "X-Big-" + std::to_string(i) + ": " + std::string(4000, 'a') + "\r\n";
  expect_api_error(round_trip(s, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "\r\n"), 431, "larger than");
  EXPECT_EQ(status_of(round_trip(s, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")), 200);
}

TEST(ServerHardening, AnIdleKeptAliveConnectionIsClosed) {
  TestServer s(demo_model_dir(), {.keep_alive_timeout_ms = 500});
  RawConnection c(s.port());
  c.send_all("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(status_of(c.read_until("}")), 200);
  const auto start = Clock::now();
  EXPECT_TRUE(c.read_until_closed(3000));
  EXPECT_LT(seconds_since(start), 1.5);
}

TEST(ServerHardening, SlowLorisConnectionsDoNotStarveHealth) {
  // The default limits: before, 16 + 64 + 8 threads served every connection.
  TestServer s(demo_model_dir());
  std::vector<std::unique_ptr<RawConnection>> lorises;
  for (int i = 0; i < 100; ++i) {
    lorises.push_back(std::make_unique<RawConnection>(s.port()));
    lorises.back()->send_all("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  }
  std::atomic<bool> done{false};
  std::thread trickler([&] {
    while (!done) {
      for (auto& c : lorises) try {
          c->send_all("a");
        } catch (const std::exception&) {
        }
      std::this_thread::sleep_for(100ms);
    }
  });
  for (int i = 0; i < 3; ++i) {
    httplib::Client c("127.0.0.1", s.port());
    c.set_connection_timeout(2, 0);
    c.set_read_timeout(2, 0);
    const auto start = Clock::now();
    const auto r = c.Get("/health");
    EXPECT_TRUE(r) << "/health did not answer: " << (r ? "" : httplib::to_string(r.error()));
    if (r) {
      EXPECT_EQ(r->status, 200);
    }
    EXPECT_LT(seconds_since(start), 1.5);
  }
  done = true;
  trickler.join();
}

TEST(ServerHardening, ConnectionsPastTheLimitGet503AtOnce) {
  TestServer s(demo_model_dir(), {.max_connections = 4});
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawConnection>(s.port()));
    held.back()->send_all("GET /health HTTP/1.1\r\n");
  }
  {
    RawConnection extra(s.port());
    const auto start = Clock::now();
    EXPECT_TRUE(extra.read_until_closed(3000));
    expect_api_error(extra.received(), 503, "connections");
    EXPECT_LT(seconds_since(start), 1.0);
  }
  held.clear();
  std::string health;
  wait_for([&] {
    health = round_trip(s, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    return status_of(health) == 200;
  });
  EXPECT_EQ(status_of(health), 200) << health;
}

// --- Host and Origin ----------------------------------------------------------------------

std::string models_with(const std::string& headers) {
  return "GET /v1/models HTTP/1.1\r\n" + headers + "Connection: close\r\n\r\n";
}

TEST(ServerHardening, HostAndOriginOfAnotherSiteGet403) {
  TestServer s(demo_model_dir());
  for (const std::string host : {"127.0.0.1", "localhost:8080", "LOCALHOST", "[::1]:1234", "127.0.0.1:80"}) {
    SCOPED_TRACE(host);
    EXPECT_EQ(status_of(round_trip(s, models_with("Host: " + host + "\r\n"))), 200);
  }
  for (const std::string host : {"evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io"}) {
    SCOPED_TRACE(host);
    const std::string r = round_trip(s, models_with("Host: " + host + "\r\n"));
    expect_api_error(r, 403, "Host");
    EXPECT_EQ(body_of(r)["error"]["code"], "forbidden_host");
  }
  EXPECT_EQ(status_of(round_trip(s, models_with("Host: 127.0.0.1\r\nOrigin: http://localhost:3000\r\n"))), 200);
  for (const std::string origin : {"http://evil.example", "https://evil.example:8080", "null"}) {
    SCOPED_TRACE(origin);
    const std::string r = round_trip(s, models_with("Host: 127.0.0.1\r\nOrigin: " + origin + "\r\n"));
    expect_api_error(r, 403, "Origin");
    EXPECT_EQ(body_of(r)["error"]["code"], "forbidden_origin");
  }
  // A refused POST never reaches the scheduler.
  const std::string body = R"({"prompt": "Hi", "max_tokens": 2})";
  const std::string r = round_trip(s, post_request("/v1/completions", body, "Origin: http://evil.example\r\n"));
  EXPECT_EQ(status_of(r), 403) << r;
  EXPECT_EQ(s.stats().completed, 0);
  // HTTP/1.1 needs a Host.
  expect_api_error(round_trip(s, "GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n"), 400, "Host");
}

TEST(ServerHardening, AllowedHostsAddNamesToTheLoopbackOnes) {
  TestServer s(demo_model_dir(), {.allowed_hosts = {"glass.lan", "*.corp.example"}});
  EXPECT_EQ(status_of(round_trip(s, models_with("Host: glass.lan:8080\r\n"))), 200);
  EXPECT_EQ(status_of(round_trip(s, models_with("Host: api.corp.example\r\n"))), 200);
  EXPECT_EQ(status_of(round_trip(s, models_with("Host: localhost\r\n"))), 200);
  EXPECT_EQ(status_of(round_trip(s, models_with("Host: 127.0.0.1\r\nOrigin: https://glass.lan\r\n"))), 200);
  EXPECT_EQ(status_of(round_trip(s, models_with("Host: other.lan\r\n"))), 403);
  EXPECT_EQ(status_of(round_trip(s, models_with("Host: glass.lan\r\nOrigin: http://other.lan\r\n"))), 403);
}

// --- Framing ------------------------------------------------------------------------------

TEST(ServerHardening, ConflictingContentLengthsAre400AndClose) {
  TestServer s(demo_model_dir());
  const std::string body = R"({"prompt": "Hi", "max_tokens": 2})";
  const std::string n = std::to_string(body.size());
  auto request = [&](const std::string& framing) {
    return "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + framing + "\r\n" + body;
  };
  {
    const auto start = Clock::now();
    const std::string r = round_trip(s, request("Content-Length: " + n + "\r\nContent-Length: " + std::to_string(body.size() + 10) + "\r\n"));
    expect_api_error(r, 400, "Content-Length");
    EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
    EXPECT_LT(seconds_since(start), 2.0) << "closed at once";
  }
  expect_api_error(round_trip(s, request("Content-Length: " + n + ", 7\r\n")), 400, "Content-Length");
  expect_api_error(round_trip(s, request("Content-Length: +" + n + "\r\n")), 400, "Content-Length");
  expect_api_error(round_trip(s, request("Content-Length: " + n + "\r\nTransfer-Encoding: chunked\r\n")), 400, "Transfer-Encoding");
  expect_api_error(round_trip(s, request("Transfer-Encoding: gzip\r\n")), 400, "Transfer-Encoding");
  // The same length twice is one length (RFC 9110 8.6).
  EXPECT_EQ(status_of(round_trip(s, request("Content-Length: " + n + "\r\nContent-Length: " + n + "\r\nConnection: close\r\n"))), 200);
  EXPECT_EQ(s.stats().completed, 1);
}

TEST(ServerHardening, BodiesWhereNoneBelongsOrTooLargeAreRefusedUnread) {
  TestServer s(demo_model_dir(), {.max_body_bytes = 4096});
  // A GET with a body: the body would be read as the next request.
  expect_api_error(round_trip(s, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 41\r\n\r\n"
                               "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"),
                   400, "body");
  // A length over the limit is refused before its body is read (none is sent here).
  {
    const auto start = Clock::now();
    const std::string r = round_trip(s, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n");
    expect_api_error(r, 413, "larger than");
    EXPECT_LT(seconds_since(start), 2.0);
  }
  // So is one that asks for 100-continue.
  expect_api_error(round_trip(s, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n"
                               "Expect: 100-continue\r\n\r\n"),
                   413, "larger than");
  // No length and not chunked: an empty body (RFC 9112 6.3), not a read until the client closes.
  {
    const auto start = Clock::now();
    expect_api_error(round_trip(s, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"), 400, "JSON");
    EXPECT_LT(seconds_since(start), 2.0);
  }
}

// --- Pipelining ---------------------------------------------------------------------------

TEST(ServerHardening, PipelinedRequestsAreAnsweredInOrder) {
  TestServer s(demo_model_dir());
  RawConnection c(s.port());
  const std::string body = R"({"prompt": "Hi", "max_tokens": 2})";
  c.send_all("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + post_request("/v1/completions", body) +
             "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
             "GET /v1/models/test-model HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(c.read_until_closed(5000));
  const std::string& r = c.received();
  EXPECT_EQ(count_of(r, "HTTP/1.1 200 OK"), 4u) << r;
  const size_t health = r.find("kv_blocks_total"), completion = r.find("text_completion"), list = r.find("\"object\":\"list\""),
               model = r.rfind("\"object\":\"model\"");
  ASSERT_NE(health, std::string::npos) << r;
  ASSERT_NE(completion, std::string::npos) << r;
  ASSERT_NE(list, std::string::npos) << r;
  ASSERT_NE(model, std::string::npos) << r;
  EXPECT_LT(health, completion);
  EXPECT_LT(completion, list);
  EXPECT_LT(list, model);
}

// --- The listening socket -----------------------------------------------------------------

TEST(ServerHardening, ASecondServerOnTheSamePortFailsToBind) {
  TestServer first(demo_model_dir());
  try {
    TestServer second(demo_model_dir(), {.port = first.port()});
    ADD_FAILURE() << "a second server bound port " << first.port();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(first.port())), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
  // The first still serves every request.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(get(first, "/health").status, 200);
}

// This process's listening TCP socket on `port`: its backlog as the kernel has it.
int listen_backlog_of(int port) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (...) {
      continue;
    }
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage addr{};
    len = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.ss_family != AF_INET) continue;
    if (ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port) != port) continue;
    tcp_info info{};
    len = sizeof info;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return -1;
    return static_cast<int>(info.tcpi_sacked);  // a listener's max backlog (Linux)
  }
  return -1;
}

TEST(ServerHardening, TheListenBacklogTakesABurstOfConnects) {
  TestServer s(demo_model_dir());
  EXPECT_GE(listen_backlog_of(s.port()), 128);
  // 64 clients connect at once; none waits for a SYN retransmit (1 s).
  constexpr int kClients = 64;
  std::vector<double> connect_s(kClients, 99), answer_s(kClients, 99);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i)
    threads.emplace_back([&, i] {
      ++ready;
      while (ready < kClients) std::this_thread::yield();
      const auto start = Clock::now();
      try {
        RawConnection c(s.port());
        connect_s[i] = seconds_since(start);
        c.send_all("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        if (c.read_until_closed(5000) && status_of(c.received()) == 200) answer_s[i] = seconds_since(start);
      } catch (const std::exception&) {
      }
    });
  for (auto& t : threads) t.join();
  const double slowest_connect = *std::max_element(connect_s.begin(), connect_s.end());
  const double slowest_answer = *std::max_element(answer_s.begin(), answer_s.end());
  EXPECT_LT(slowest_connect, 0.9);
  EXPECT_LT(slowest_answer, 2.0);
  std::printf("burst of %d connects: slowest connect %.3f s, slowest answer %.3f s\n", kClients, slowest_connect, slowest_answer);
}

}  // namespace
}  // namespace glass::test
