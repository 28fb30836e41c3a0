// n choices of one request (chat and completions, whole and streamed) and completions'
// best_of, over HTTP: each choice is the single request with its seed (seed + index).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "server_harness.h"
#include "support/test_support.h"

namespace glass::test {
namespace {

TEST(Choices, NChatChoicesAreTheSingleRequestsWithTheirSeeds) {
  TestServer s(demo_model_dir(), {.parallel = 4});
  const std::string fields = R"("max_tokens": 10, "ignore_eos": true, "temperature": 1.0, "return_token_ids": true)";
  const HttpReply r = post_json(s, "/v1/chat/completions", chat_body("Tell me", fields + R"(, "n": 3, "seed": 20)"));
  ASSERT_EQ(r.status, 200) << r.body;
  const OJson j = r.json();
  ASSERT_EQ(j["choices"].size(), 3u);
  int64_t completion = 0;
  std::set<std::string> distinct;
  for (size_t i = 0; i < 3; ++i) {
    const OJson& c = j["choices"][i];
    EXPECT_EQ(c["index"], i);
    const OJson single =
        post_json(s, "/v1/chat/completions", chat_body("Tell me", fields + str_cat(R"(, "seed": )", 20 + i))).json();
    EXPECT_EQ(c["token_ids"], single["choices"][0]["token_ids"]) << "choice " << i;
    EXPECT_EQ(c["message"], single["choices"][0]["message"]);
    EXPECT_EQ(j["usage"]["prompt_tokens"], single["usage"]["prompt_tokens"]);
    completion += single["usage"]["completion_tokens"].get<int64_t>();
    distinct.insert(c["message"]["content"].get<std::string>());
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], completion) << "every choice's tokens";
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int64_t>() + completion);
  EXPECT_GT(distinct.size(), 1u);
  wait_for([&] { return s.stats().running == 0; });
  EXPECT_EQ(s.stats().kv_blocks_free, s.stats().kv_blocks_total);
}

TEST(Choices, StreamedChoicesCarryTheirIndexAndMatchTheWholeResponse) {
  TestServer s(demo_model_dir(), {.parallel = 4});
  const std::string fields = R"("max_tokens": 12, "ignore_eos": true, "temperature": 0.9, "seed": 4, "n": 2)";
  const OJson whole = post_json(s, "/v1/completions", R"({"prompt": "Once upon a time", )" + fields + "}").json();
  const HttpReply r = post_json(
      s, "/v1/completions",
      R"({"prompt": "Once upon a time", "stream": true, "stream_options": {"include_usage": true}, )" + fields + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto data = sse_data(r.body);
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data.back(), "[DONE]");
  std::map<int, std::string> text;
  std::map<int, std::string> finish;
  for (size_t i = 0; i + 2 < data.size(); ++i) {
    const OJson c = OJson::parse(data[i]);
    ASSERT_EQ(c["choices"].size(), 1u) << data[i];
    const int index = c["choices"][0]["index"];
    text[index] += c["choices"][0]["text"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish[index] = c["choices"][0]["finish_reason"];
  }
  ASSERT_EQ(text.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(text[i], whole["choices"][i]["text"]) << "choice " << i;
    EXPECT_EQ(finish[i], "length");
  }
  const OJson usage = OJson::parse(data[data.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 24);
  EXPECT_EQ(usage["usage"], whole["usage"]);
}

TEST(Choices, BestOfReturnsTheChoicesWithTheHighestMeanLogprob) {
  TestServer s(demo_model_dir(), {.parallel = 4});
  const std::string fields = R"("prompt": "The weather", "max_tokens": 8, "ignore_eos": true, "temperature": 1.0)";
  const HttpReply r = post_json(s, "/v1/completions", str_cat("{", fields, R"(, "seed": 7, "best_of": 4, "n": 2})"));
  ASSERT_EQ(r.status, 200) << r.body;
  const OJson j = r.json();
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null()) << "logprobs were not asked for";
  // The four candidates, one at a time, with their logprobs.
  std::vector<std::pair<double, std::string>> candidates;
  int64_t completion = 0;
  for (int i = 0; i < 4; ++i) {
    const OJson one = post_json(s, "/v1/completions", str_cat("{", fields, R"(, "logprobs": 0, "seed": )", 7 + i, "}")).json();
    double sum = 0;
    for (const auto& lp : one["choices"][0]["logprobs"]["token_logprobs"]) sum += lp.get<double>();
    candidates.emplace_back(sum / 8, one["choices"][0]["text"].get<std::string>());
    completion += one["usage"]["completion_tokens"].get<int64_t>();
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  EXPECT_EQ(j["choices"][0]["text"], candidates[0].second);
  EXPECT_EQ(j["choices"][1]["text"], candidates[1].second);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["usage"]["completion_tokens"], completion) << "best_of bills every candidate";
}

TEST(Choices, MoreChoicesThanRunAtOnceIsRefusedNamingN) {
  TestServer s(demo_model_dir(), {.parallel = 2});
  const HttpReply r = post_json(s, "/v1/chat/completions", chat_body("Hi", R"("n": 3)"));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["param"], "n");
  EXPECT_NE(r.body.find("'n' is 3"), std::string::npos) << r.body;
  const HttpReply b = post_json(s, "/v1/completions", R"({"prompt": "Hi", "best_of": 3})");
  EXPECT_EQ(b.status, 400) << b.body;
  EXPECT_EQ(b.json()["error"]["param"], "best_of");
}

}  // namespace
}  // namespace glass::test
