// glass serve's request log lines and completion ids (issue 24 item 12: unrounded seconds,
// two formats for streamed and whole requests, sequential ids).
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <vector>

#include "server/completion_id.h"
#include "server/request_log.h"
#include "server_harness.h"
#include "support/test_support.h"
#include "tokenizer/regex.h"

namespace glass::test {
namespace {

using server::CompletionIds;
using server::Endpoint;
using server::format_seconds;
using server::request_log_json;
using server::request_log_text;
using server::RequestLogEntry;

// A request that ran, as the server logs it.
RequestLogEntry generated(std::string path, int status, bool stream, size_t prompt, size_t completion, std::string finish,
                          std::string error, double seconds) {
  RequestLogEntry e;
  e.method = "POST";
  e.path = std::move(path);
  e.status = status;
  e.stream = stream;
  e.prompt_tokens = prompt;
  e.completion_tokens = completion;
  e.finish_reason = std::move(finish);
  e.error = std::move(error);
  e.seconds = seconds;
  return e;
}

// std::regex is avoided here: g++ 12's <regex> trips -Wmaybe-uninitialized under the
// sanitizers with -Werror. glass's own PCRE2 wrapper does the matching.
bool matches_whole(const std::string& text, const std::string& pattern) {
  std::vector<MatchSpan> spans;
  Regex(pattern, "test").find_all(text, spans);
  return spans.size() == 1 && spans[0].begin == 0 && spans[0].end == text.size();
}

bool contains_match(const std::string& text, const std::string& pattern) {
  std::vector<MatchSpan> spans;
  Regex(pattern, "test").find_all(text, spans);
  return !spans.empty();
}

constexpr const char* kChatId = "chatcmpl-[A-Za-z0-9]{29}";

TEST(RequestLog, SecondsHaveThreeSignificantDigitsAndNoExponent) {
  EXPECT_EQ(format_seconds(0.0444395), "0.0444 s");
  EXPECT_EQ(format_seconds(0.000123456), "0.000123 s");
  EXPECT_EQ(format_seconds(1.2), "1.20 s");
  EXPECT_EQ(format_seconds(12.345), "12.3 s");
  EXPECT_EQ(format_seconds(123.456), "123 s");
  EXPECT_EQ(format_seconds(4567.8), "4568 s");  // whole seconds, not 4.57e+03
  EXPECT_EQ(format_seconds(3e-9), "0.000000 s");  // microseconds at most
  EXPECT_EQ(format_seconds(0), "0 s");
}

TEST(RequestLog, StreamedAndWholeRequestsHaveOneFormat) {
  RequestLogEntry e = generated("/v1/chat/completions", 200, false, 31, 8, "eos", "", 0.0444395);
  EXPECT_EQ(request_log_text(e), "POST /v1/chat/completions 200: prompt 31 + 8 tokens, eos, 0.0444 s");
  e.stream = true;
  EXPECT_EQ(request_log_text(e), "POST /v1/chat/completions 200 (stream): prompt 31 + 8 tokens, eos, 0.0444 s");
  EXPECT_EQ(request_log_text(generated("/v1/completions", 499, false, 5, 3, "", "client disconnected", 1.2)),
            "POST /v1/completions 499: prompt 5 + 3 tokens, client disconnected, 1.20 s");
  EXPECT_EQ(request_log_text(generated("/v1/completions", 500, false, 5, 0, "", "generation failed: NaN", 1.2)),
            "POST /v1/completions 500: prompt 5 + 0 tokens, error: generation failed: NaN, 1.20 s");
  // Refused before running: the reason only.
  RequestLogEntry refused;
  refused.method = "GET";
  refused.path = "/metrics";
  refused.status = 401;
  refused.error = "Incorrect API key provided";
  EXPECT_EQ(request_log_text(refused), "GET /metrics 401: Incorrect API key provided");
  refused.status.reset();
  refused.method = refused.path = "-";
  refused.error = "connection closed: broken pipe";
  EXPECT_EQ(request_log_text(refused), "- - connection closed: broken pipe");
}

TEST(RequestLog, JsonLinesHaveEveryKey) {
  EXPECT_EQ(server::iso8601_utc(std::chrono::system_clock::time_point(std::chrono::milliseconds(1746100800123))),
            "2025-05-01T12:00:00.123Z");
  EXPECT_EQ(server::iso8601_utc(std::chrono::system_clock::time_point()), "1970-01-01T00:00:00.000Z");
  const auto time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1746100800123));
  RequestLogEntry e = generated("/v1/chat/completions", 200, true, 31, 8, "eos", "", 0.0444395);
  e.request_id = "chatcmpl-abc";
  e.first_token_seconds = 0.0121;
  EXPECT_EQ(request_log_json(e, time),
            R"({"time":"2025-05-01T12:00:00.123Z","request_id":"chatcmpl-abc","method":"POST","route":"/v1/chat/completions",)"
            R"("status":200,"stream":true,"prompt_tokens":31,"completion_tokens":8,"finish_reason":"eos","error":null,)"
            R"("first_token_seconds":0.0121,"total_seconds":0.0444395})");
  RequestLogEntry refused;
  refused.method = "POST";
  refused.path = "/v1/completions";
  refused.status = 400;
  refused.error = "'prompt' is required \xff";
  const OJson j = OJson::parse(request_log_json(refused, time));
  EXPECT_EQ(j["error"], "'prompt' is required \xEF\xBF\xBD") << "bytes that are not UTF-8 become U+FFFD";
  for (const char* key : {"request_id", "prompt_tokens", "completion_tokens", "finish_reason", "first_token_seconds", "total_seconds"})
    EXPECT_TRUE(j[key].is_null()) << key;
  EXPECT_EQ(server::parse_log_format("json"), server::LogFormat::json);
  EXPECT_EQ(server::parse_log_format("text"), server::LogFormat::text);
  EXPECT_NE(thrown_error([] { server::parse_log_format("xml"); }).find("--log-format: 'xml' is not one of text, json"),
            std::string::npos);
}

TEST(CompletionIds, AreRandomLettersAndDigitsLikeOpenAIs) {
  CompletionIds ids, other;
  std::set<std::string> seen;
  std::string previous = ids.next(Endpoint::chat_completions);
  EXPECT_NE(previous, other.next(Endpoint::chat_completions)) << "two servers";
  for (int i = 0; i < 2000; ++i) {
    const std::string id = ids.next(Endpoint::chat_completions);
    ASSERT_TRUE(matches_whole(id, kChatId)) << id;
    EXPECT_TRUE(seen.insert(id).second) << "repeated: " << id;
    // Not a counter: consecutive ids share neither a long head nor a long tail (a counter
    // keeps all but its last characters; random ones share 5 with odds of 62^-5).
    const std::string a = previous.substr(9), b = id.substr(9);
    size_t head = 0, tail = 0;
    while (head < a.size() && a[head] == b[head]) ++head;
    while (tail < a.size() && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) ++tail;
    EXPECT_LT(head, 5u) << previous << " then " << id;
    EXPECT_LT(tail, 5u) << previous << " then " << id;
    previous = id;
  }
  EXPECT_TRUE(matches_whole(ids.next(Endpoint::completions), "cmpl-[A-Za-z0-9]{29}"));
}

// The server logs both kinds of request in that format and hands out those ids.
TEST(RequestLog, TheServerLogsStreamedAndWholeRequestsAlike) {
  const std::string body = R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4)";
  std::string whole, streamed;
  testing::internal::CaptureStderr();
  {
    TestServerOptions options;
    options.log_requests = true;
    TestServer s(demo_model_dir(), options);
    whole = post_json(s, "/v1/chat/completions", body + "}").body;
    streamed = post_json(s, "/v1/chat/completions", body + R"(, "stream": true})").body;
  }  // stopped: every request has logged its line
  const std::string log = testing::internal::GetCapturedStderr();
  const std::string line = R"(glass serve: POST /v1/chat/completions 200%s: prompt \d+ \+ \d+ tokens, [a-z_]+, )"
                           R"(\d+\.\d{1,6} s\n)";
  const auto with = [&](const char* stream) {
    std::string l = line;
    l.replace(l.find("%s"), 2, stream);
    return l;
  };
  EXPECT_TRUE(contains_match(log, with(""))) << log;
  EXPECT_TRUE(contains_match(log, with(R"( \(stream\))"))) << log;
  const std::string whole_id = OJson::parse(whole)["id"];
  const std::string stream_id = OJson::parse(sse_data(streamed).front())["id"];
  EXPECT_TRUE(matches_whole(whole_id, kChatId)) << whole_id;
  EXPECT_TRUE(matches_whole(stream_id, kChatId)) << stream_id;
  EXPECT_NE(whole_id.substr(0, 30), stream_id.substr(0, 30));
}

}  // namespace
}  // namespace glass::test

namespace glass::test {
namespace {

// --log-format json: every line on stderr is one JSON object with every key, for whole,
// streamed and refused requests alike.
TEST(RequestLog, TheServerWritesOneJsonObjectPerRequest) {
  std::string whole, streamed;
  testing::internal::CaptureStderr();
  {
    TestServerOptions options;
    options.log_requests = true;
    options.log_format = server::LogFormat::json;
    options.api_key = "k";
    TestServer s(demo_model_dir(), options);
    const httplib::Headers key = {{"Authorization", "Bearer k"}};
    whole = send(s, "POST", "/v1/chat/completions", key, chat_body("Hi", R"("max_tokens": 3, "ignore_eos": true)")).body;
    streamed =
        send(s, "POST", "/v1/completions", key, R"({"prompt": "Hi", "max_tokens": 2, "ignore_eos": true, "stream": true})").body;
    send(s, "POST", "/v1/completions", key, R"({"prompt": 5})");
    send(s, "GET", "/v1/models", {});
  }
  const std::string log = testing::internal::GetCapturedStderr();
  std::vector<OJson> lines;
  for (size_t pos = 0; pos < log.size();) {
    const size_t end = log.find('\n', pos);
    ASSERT_NE(end, std::string::npos) << "every line ends";
    lines.push_back(OJson::parse(log.substr(pos, end - pos), nullptr, false));
    ASSERT_TRUE(lines.back().is_object()) << log.substr(pos, end - pos);
    EXPECT_EQ(lines.back().size(), 12u) << lines.back();
    EXPECT_TRUE(matches_whole(lines.back()["time"].get<std::string>(), R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"))
        << lines.back();
    pos = end + 1;
  }
  ASSERT_EQ(lines.size(), 4u) << log;
  const auto find = [&](const std::string& route, int status) {
    for (const OJson& l : lines)
      if (l["route"] == route && l["status"] == status) return l;
    ADD_FAILURE() << route << " " << status << " not in\n" << log;
    return OJson();
  };
  const OJson chat = find("/v1/chat/completions", 200);
  EXPECT_EQ(chat["request_id"], OJson::parse(whole)["id"]);
  EXPECT_EQ(chat["method"], "POST");
  EXPECT_EQ(chat["stream"], false);
  EXPECT_EQ(chat["prompt_tokens"], OJson::parse(whole)["usage"]["prompt_tokens"]);
  EXPECT_EQ(chat["completion_tokens"], 3);
  EXPECT_EQ(chat["finish_reason"], "length");
  EXPECT_TRUE(chat["error"].is_null());
  EXPECT_GT(chat["first_token_seconds"].get<double>(), 0);
  EXPECT_LE(chat["first_token_seconds"].get<double>(), chat["total_seconds"].get<double>());

  const OJson stream = find("/v1/completions", 200);
  EXPECT_EQ(stream["request_id"], OJson::parse(sse_data(streamed).front())["id"]);
  EXPECT_EQ(stream["stream"], true);
  EXPECT_EQ(stream["completion_tokens"], 2);
  EXPECT_EQ(stream["finish_reason"], "length");

  const OJson bad = find("/v1/completions", 400);
  EXPECT_TRUE(bad["request_id"].get<std::string>().starts_with("cmpl-"));
  EXPECT_NE(bad["error"].get<std::string>().find("'prompt'"), std::string::npos);
  EXPECT_TRUE(bad["prompt_tokens"].is_null());
  EXPECT_TRUE(bad["finish_reason"].is_null());

  const OJson refused = find("/v1/models", 401);
  EXPECT_EQ(refused["method"], "GET");
  EXPECT_TRUE(refused["request_id"].is_null());
  EXPECT_EQ(refused["error"], "You didn't provide an API key. You need to provide your API key in an Authorization header "
                              "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)");
}

}  // namespace
}  // namespace glass::test
