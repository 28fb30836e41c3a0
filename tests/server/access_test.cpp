// Who may use the server: the API key (--api-key, 401) and CORS (--cors-origin).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "server/api_key.h"
#include "server/cors_policy.h"
#include "server_harness.h"
#include "support/test_support.h"

namespace glass::test {
namespace {

using server::ApiKey;
using server::constant_time_equals;
using server::CorsPolicy;

constexpr const char* kKey = "sk-glass-test-0123456789";

httplib::Headers bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

struct Route {
  std::string method, path, body;
};

// Every route the server has, and one it does not, each with a body it answers 200
// (the unknown one: 404).
std::vector<Route> all_routes() {
  return {{"GET", "/v1/models", ""},
          {"GET", "/v1/models/test-model", ""},
          {"POST", "/v1/chat/completions", chat_body("Hi", R"("max_tokens": 2)")},
          {"POST", "/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})"},
          {"GET", "/metrics", ""},
          {"POST", "/tokenize", R"({"content": "Hello"})"},
          {"POST", "/detokenize", R"({"tokens": [9707]})"},
          {"GET", "/no/such/route", ""}};
}

void expect_401(const HttpReply& r, const std::string& in_message) {
  EXPECT_EQ(r.status, 401) << r.body;
  const OJson j = OJson::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["code"], "invalid_api_key");
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_NE(j["error"]["message"].get<std::string>().find(in_message), std::string::npos) << r.body;
  EXPECT_EQ(r.header("WWW-Authenticate"), "Bearer");
}

TEST(ApiKey, ComparesWholeKeysOnly) {
  EXPECT_TRUE(constant_time_equals("abc", "abc"));
  EXPECT_FALSE(constant_time_equals("abd", "abc"));
  EXPECT_FALSE(constant_time_equals("xbc", "abc"));
  EXPECT_FALSE(constant_time_equals("ab", "abc"));
  EXPECT_FALSE(constant_time_equals("abcabc", "abc")) << "a key repeated reads the key cyclically: still not equal";
  EXPECT_FALSE(constant_time_equals("abcd", "abc"));
  EXPECT_FALSE(constant_time_equals("", "abc"));
  EXPECT_FALSE(constant_time_equals("", ""));
  EXPECT_FALSE(constant_time_equals(std::string("ab\0", 3), "ab"));
}

TEST(ApiKey, TakesBearerInAnyCaseAndNothingElse) {
  const ApiKey key = ApiKey::make(kKey, "--api-key");
  const auto allowed = [&](const std::string& header) { return !key.refusal(&header).has_value(); };
  EXPECT_TRUE(allowed(std::string("Bearer ") + kKey));
  EXPECT_TRUE(allowed(std::string("bearer ") + kKey));
  EXPECT_TRUE(allowed(std::string("BEARER  ") + kKey + " "));
  for (const std::string& bad : {std::string(kKey), std::string("Basic ") + kKey, std::string("Bearer"), std::string("Bearer "),
                                std::string("Bearer ") + kKey + "x", std::string("Bearer x") + kKey,
                                std::string("Bearer ") + std::string(kKey).substr(1), std::string("Bearer:") + kKey,
                                std::string("Bearer ") + kKey + " " + kKey})
    EXPECT_FALSE(allowed(bad)) << bad;
  const auto missing = key.refusal(nullptr);
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->status(), 401);
  EXPECT_NE(std::string(missing->what()).find("didn't provide an API key"), std::string::npos);
  const std::string wrong = "Bearer nope";
  const auto refused = key.refusal(&wrong);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(std::string(refused->what()), "Incorrect API key provided");
  EXPECT_EQ(refused->code(), "invalid_api_key");
}

TEST(ApiKey, EmptyOrUnsendableKeysAreRefusedNamingTheSource) {
  EXPECT_NE(thrown_error([] { ApiKey::make("", "--api-key"); }).find("--api-key: the API key is empty"), std::string::npos);
  EXPECT_NE(thrown_error([] { ApiKey::make("", "GLASS_API_KEY"); }).find("GLASS_API_KEY"), std::string::npos);
  EXPECT_NE(thrown_error([] { ApiKey::make("two words", "--api-key"); }).find("space at byte 3"), std::string::npos);
  EXPECT_NE(thrown_error([] { ApiKey::make("tab\there", "--api-key"); }).find("control character"), std::string::npos);
}

TEST(CorsPolicy, MatchesOriginsAsBrowsersSendThem) {
  const CorsPolicy off = CorsPolicy::make({});
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.allows("http://localhost:3000"));
  EXPECT_EQ(off.describe(), "off");

  const CorsPolicy p = CorsPolicy::make({"http://localhost:3000", "HTTPS://App.Example:443/", "http://[::1]:80"});
  EXPECT_TRUE(p.enabled());
  for (const char* o : {"http://localhost:3000", "HTTP://LOCALHOST:3000", "https://app.example", "http://[::1]"})
    EXPECT_TRUE(p.allows(o)) << o;
  for (const char* o : {"http://localhost:3001", "https://localhost:3000", "http://app.example", "https://app.example:8443",
                        "https://app.example.evil", "null", "", "http://localhost:3000/path"})
    EXPECT_FALSE(p.allows(o)) << o;
  EXPECT_EQ(p.describe(), "http://localhost:3000, https://app.example, http://[::1]");

  const CorsPolicy any = CorsPolicy::make({"*"});
  EXPECT_TRUE(any.allows("https://anything.example"));
  EXPECT_TRUE(any.allows("null"));
  EXPECT_EQ(any.describe(), "any");

  for (const std::string bad : {"localhost:3000", "http://", "http://a/b", "http://a?x", "://a", "1http://a", "http://u@a", ""})
    EXPECT_NE(thrown_error([&] { CorsPolicy::make({bad}); }).find("--cors-origin: '" + bad + "' is not an origin"),
              std::string::npos)
        << bad;
}

TEST(CorsPolicy, PreflightAllowsTheRequestedHeaderNames) {
  EXPECT_EQ(CorsPolicy::allowed_headers(""), "Authorization, Content-Type");
  EXPECT_EQ(CorsPolicy::allowed_headers("authorization, content-type"), "Authorization, Content-Type");
  EXPECT_EQ(CorsPolicy::allowed_headers("authorization,x-stainless-os, X-Stainless-Lang ,bad header,x\"y"),
            "Authorization, Content-Type, x-stainless-os, X-Stainless-Lang");
}

TEST(ServerAccess, EveryRouteButHealthNeedsTheKey) {
  std::string log;
  testing::internal::CaptureStderr();
  {
    TestServer s(demo_model_dir(), {.log_requests = true, .api_key = std::string(kKey)});
    for (const Route& r : all_routes()) {
      SCOPED_TRACE(r.method + " " + r.path);
      expect_401(send(s, r.method, r.path, {}, r.body), "didn't provide an API key");
      expect_401(send(s, r.method, r.path, bearer("sk-glass-test-0123456788"), r.body), "Incorrect API key provided");
      expect_401(send(s, r.method, r.path, bearer(std::string(kKey) + "0"), r.body), "Incorrect API key provided");
      expect_401(send(s, r.method, r.path, {{"Authorization", kKey}}, r.body), "Incorrect API key provided");
      expect_401(send(s, r.method, r.path, {{"Authorization", "Bearer " + std::string(kKey)}, {"Authorization", "Bearer x"}}, r.body),
                 "Incorrect API key provided");
      const HttpReply ok = send(s, r.method, r.path, bearer(kKey), r.body);
      EXPECT_EQ(ok.status, r.path == "/no/such/route" ? 404 : 200) << ok.body;
    }
    EXPECT_EQ(s.stats().completed, 2) << "only the two requests with the key ran";
    const HttpReply health = get(s, "/health");
    EXPECT_EQ(health.status, 200) << health.body;
    EXPECT_EQ(health.json()["status"], "ok");
    EXPECT_EQ(send(s, "GET", "/health", bearer("wrong")).status, 200) << "/health ignores the header";
    // No CORS configured: OPTIONS is not a route, but it is not refused for the key either.
    EXPECT_EQ(send(s, "OPTIONS", "/v1/models", {}).status, 404);
  }
  log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("GET /metrics 401: You didn't provide an API key"), std::string::npos) << log;
  EXPECT_NE(log.find("POST /tokenize 401: Incorrect API key provided"), std::string::npos) << log;
  EXPECT_EQ(log.find("sk-glass-test"), std::string::npos) << "the log never shows a key, sent or expected:\n" << log;
}

TEST(ServerAccess, AnEmptyKeyIsRefusedNotTakenAsNone) {
  EXPECT_NE(thrown_error([] { TestServer s(demo_model_dir(), {.api_key = std::string()}); })
                .find("ServerOptions::api_key: the API key is empty"),
            std::string::npos);
}

TEST(ServerAccess, RefusedRequestsAreNotRead) {
  TestServer s(demo_model_dir(), {.api_key = std::string(kKey)});
  // A body the server would otherwise have to read: refused at the headers.
  RawConnection c(s.port());
  c.send_all("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n");
  const std::string r = c.read_until("invalid_api_key", 5000);
  EXPECT_EQ(r.rfind("HTTP/1.1 401", 0), 0u) << r;
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
}

TEST(ServerCors, AllowedOriginsGetTheirOriginBackAndPassTheOriginCheck) {
  TestServer s(demo_model_dir(), {.cors_origins = {"http://app.example:3000", "http://localhost:5173"}});
  // A configured origin that is not a loopback name: before --cors-origin it got 403.
  HttpReply r = send(s, "GET", "/v1/models", {{"Origin", "http://app.example:3000"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "http://app.example:3000");
  EXPECT_EQ(r.header("Vary"), "Origin");
  r = send(s, "POST", "/v1/completions", {{"Origin", "http://localhost:5173"}}, R"({"prompt": "Hi", "max_tokens": 2})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "http://localhost:5173");
  // Errors carry it too, so that a page can read why.
  r = send(s, "POST", "/v1/completions", {{"Origin", "http://localhost:5173"}}, R"({"prompt": 5})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "http://localhost:5173");

  // A loopback origin not listed still passes the Origin check, without the CORS header.
  r = send(s, "GET", "/v1/models", {{"Origin", "http://localhost:3000"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "");
  EXPECT_EQ(r.header("Vary"), "Origin");
  // Another site is still refused.
  r = send(s, "GET", "/v1/models", {{"Origin", "http://evil.example"}});
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "forbidden_origin");
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "");
  // No Origin (not a browser): no CORS header.
  EXPECT_EQ(get(s, "/v1/models").header("Access-Control-Allow-Origin"), "");
}

TEST(ServerCors, PreflightsAre204OnAnyRouteWithoutTheKey) {
  TestServer s(demo_model_dir(), {.api_key = std::string(kKey), .cors_origins = {"*"}});
  for (const std::string path : {"/v1/chat/completions", "/v1/models", "/metrics", "/anything"}) {
    SCOPED_TRACE(path);
    const HttpReply r = send(s, "OPTIONS", path,
                             {{"Origin", "https://chat.example"},
                              {"Access-Control-Request-Method", "POST"},
                              {"Access-Control-Request-Headers", "authorization, content-type, x-stainless-os"}});
    EXPECT_EQ(r.status, 204) << r.body;
    EXPECT_EQ(r.body, "");
    EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "https://chat.example");
    EXPECT_EQ(r.header("Access-Control-Allow-Methods"), "GET, POST, DELETE, OPTIONS");
    EXPECT_EQ(r.header("Access-Control-Allow-Headers"), "Authorization, Content-Type, x-stainless-os");
    EXPECT_EQ(r.header("Access-Control-Max-Age"), "600");
    EXPECT_EQ(r.header("Content-Length"), "") << "a 204 has no body length";
  }
  // `*`: any origin passes the Origin check and gets itself back; the key is still needed.
  HttpReply r = send(s, "GET", "/v1/models", {{"Origin", "https://chat.example"}});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "https://chat.example") << "the page may read the 401";
  httplib::Headers headers = bearer(kKey);
  headers.emplace("Origin", "https://chat.example");
  r = send(s, "GET", "/v1/models", headers);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "https://chat.example");
}

TEST(ServerCors, WithoutOriginsNothingChanges) {
  TestServer s(demo_model_dir());
  const HttpReply r = send(s, "GET", "/v1/models", {{"Origin", "http://localhost:3000"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "");
  EXPECT_EQ(r.header("Vary"), "");
  EXPECT_EQ(send(s, "OPTIONS", "/v1/models", {{"Origin", "http://localhost:3000"}}).status, 404);
  EXPECT_EQ(send(s, "GET", "/v1/models", {{"Origin", "http://app.example:3000"}}).status, 403);
}

}  // namespace
}  // namespace glass::test
