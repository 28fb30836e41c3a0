// glass serve's request log lines and completion ids (issue 24 item 12: unrounded seconds,
// two formats for streamed and whole requests, sequential ids).
#include <gtest/gtest.h>

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
using server::request_log_line;
using server::RequestLogEntry;

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
  RequestLogEntry e{"POST /v1/chat/completions", 200, false, 31, 8, "eos", 0.0444395};
  EXPECT_EQ(request_log_line(e), "POST /v1/chat/completions 200: prompt 31 + 8 tokens, eos, 0.0444 s");
  e.stream = true;
  EXPECT_EQ(request_log_line(e), "POST /v1/chat/completions 200 (stream): prompt 31 + 8 tokens, eos, 0.0444 s");
  EXPECT_EQ(request_log_line({"POST /v1/completions", 499, false, 5, 3, "client disconnected", 1.2}),
            "POST /v1/completions 499: prompt 5 + 3 tokens, client disconnected, 1.20 s");
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
