// The server on a model that thinks: reasoning_content in messages and stream deltas,
// chat_template_kwargs, and /v1/completions left raw.
#include <gtest/gtest.h>

#include "server_harness.h"
#include "support/test_support.h"

namespace glass::test {
namespace {

constexpr int32_t kNewline = 198, kTwoNewlines = 271, kThink = 151667, kEndThink = 151668, kImEnd = 151645;
constexpr int32_t kHmm = 80022, kMaybe = 7196, kHi = 13048, kLess = 27;  // "Hmm", " maybe", "Hi", "<"

// After the Qwen3 generation prompt: "<think>Hmm maybe</think>\n\nHi<|im_end|>"; with
// enable_thinking false the prompt ends "</think>\n\n" and the reply is "Hi<|im_end|>".
void write_thinking_model(const std::string& dir) {
  write_successor_model(dir,
                        {{kNewline, kThink}, {kThink, kHmm}, {kHmm, kMaybe}, {kMaybe, kEndThink},
                         {kEndThink, kTwoNewlines}, {kTwoNewlines, kHi}, {kHi, kImEnd}},
                        qwen3_tokenizer_dir());
}

// A request whose one user message is "Hi", with `fields` added.
std::string hi_body(const std::string& fields = "") {
  return R"({"messages": [{"role": "user", "content": "Hi"}])" + (fields.empty() ? "" : ", " + fields) + "}";
}

struct StreamedReply {
  std::string reasoning, content;
  std::vector<OJson> deltas;
  OJson usage;
};

StreamedReply stream(const TestServer& s, const std::string& fields) {
  const HttpReply r = post_json(s, "/v1/chat/completions",
                                hi_body(fields + (fields.empty() ? "" : ", ") +
                                          R"("stream": true, "stream_options": {"include_usage": true})"));
  EXPECT_EQ(r.status, 200) << r.body;
  StreamedReply out;
  for (const std::string& d : sse_data(r.body)) {
    if (d == "[DONE]") continue;
    const OJson c = OJson::parse(d);
    if (c["choices"].empty()) {
      out.usage = c["usage"];
      continue;
    }
    const OJson& delta = c["choices"][0]["delta"];
    if (delta.contains("role")) continue;
    out.deltas.push_back(delta);
    if (delta.contains("reasoning_content")) out.reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content")) out.content += delta["content"].get<std::string>();
  }
  return out;
}

class ReasoningServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    write_thinking_model(dir_->path());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static TempDir* dir_;
};
TempDir* ReasoningServer::dir_ = nullptr;

TEST_F(ReasoningServer, MessageCarriesTheReasoningApart) {
  TestServer s(dir_->path());
  const HttpReply r = post_json(s, "/v1/chat/completions", hi_body(R"("return_token_ids": true)"));
  ASSERT_EQ(r.status, 200) << r.body;
  const OJson j = r.json();
  const OJson& message = j["choices"][0]["message"];
  EXPECT_EQ(message["content"], "Hi");
  EXPECT_EQ(message["reasoning_content"], "Hmm maybe");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["token_ids"].get<std::vector<int32_t>>(),
            (std::vector<int32_t>{kThink, kHmm, kMaybe, kEndThink, kTwoNewlines, kHi, kImEnd}));
  EXPECT_EQ(j["usage"]["completion_tokens"], 7);
  EXPECT_EQ(j["usage"]["completion_tokens_details"]["reasoning_tokens"], 4);

  // Cut off while thinking: reasoning and no answer.
  const OJson cut = post_json(s, "/v1/chat/completions", hi_body(R"("max_tokens": 3)")).json();
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(cut["choices"][0]["message"]["reasoning_content"], "Hmm maybe");
  EXPECT_EQ(cut["choices"][0]["message"]["content"], "");
}

TEST_F(ReasoningServer, StreamedDeltasCarryReasoningThenContent) {
  TestServer s(dir_->path());
  const OJson whole = post_json(s, "/v1/chat/completions", hi_body()).json();
  const StreamedReply st = stream(s, "");
  EXPECT_EQ(st.reasoning, "Hmm maybe");
  EXPECT_EQ(st.content, "Hi");
  EXPECT_EQ(st.usage, whole["usage"]);
  // Reasoning deltas first, then answer deltas; no tags anywhere.
  bool answering = false;
  for (const OJson& d : st.deltas) {
    if (d.contains("reasoning_content")) {
      EXPECT_FALSE(answering) << d.dump();
    }
    if (d.contains("content") && !d["content"].get<std::string>().empty()) answering = true;
    EXPECT_EQ(d.dump().find("think>"), std::string::npos) << d.dump();
  }
  EXPECT_TRUE(answering);

  // With logprobs every token makes a chunk, the tags' too (nothing released for them).
  const StreamedReply lp = stream(s, R"("logprobs": true)");
  EXPECT_EQ(lp.deltas.size(), 8u);  // 7 tokens and the finish
  EXPECT_EQ(lp.reasoning, "Hmm maybe");
  EXPECT_EQ(lp.content, "Hi");
}

TEST_F(ReasoningServer, ChatTemplateKwargsGoOverTheServersDefaults) {
  TestServer s(dir_->path());
  const OJson off = post_json(s, "/v1/chat/completions", hi_body(R"("chat_template_kwargs": {"enable_thinking": false})")).json();
  EXPECT_EQ(off["choices"][0]["message"]["content"], "Hi");
  EXPECT_FALSE(off["choices"][0]["message"].contains("reasoning_content")) << off.dump();
  EXPECT_FALSE(off["usage"].contains("completion_tokens_details"));
  EXPECT_EQ(off["usage"]["completion_tokens"], 2);
  const StreamedReply st = stream(s, R"("chat_template_kwargs": {"enable_thinking": false})");
  EXPECT_EQ(st.content, "Hi");
  EXPECT_EQ(st.reasoning, "");

  TestServerOptions defaults;
  defaults.chat_template_kwargs = {{"enable_thinking", false}};
  TestServer no_think(dir_->path(), defaults);
  EXPECT_FALSE(post_json(no_think, "/v1/chat/completions", hi_body()).json()["choices"][0]["message"].contains("reasoning_content"));
  const OJson on =
      post_json(no_think, "/v1/chat/completions", hi_body(R"("chat_template_kwargs": {"enable_thinking": true})")).json();
  EXPECT_EQ(on["choices"][0]["message"]["reasoning_content"], "Hmm maybe");
  // Variables the template does not read change nothing.
  const OJson other = post_json(no_think, "/v1/chat/completions", hi_body(R"("chat_template_kwargs": {"x": 1})")).json();
  EXPECT_EQ(other["choices"][0]["message"]["content"], "Hi");
  EXPECT_FALSE(other["choices"][0]["message"].contains("reasoning_content"));
}

TEST_F(ReasoningServer, BadChatTemplateKwargsAre400NamingTheParameter) {
  TestServer s(dir_->path());
  for (const std::string kwargs : {"[1]", "\"enable_thinking\"", "true", R"({"messages": []})", R"({"add_generation_prompt": false})"}) {
    SCOPED_TRACE(kwargs);
    const HttpReply r = post_json(s, "/v1/chat/completions", hi_body(R"("chat_template_kwargs": )" + kwargs));
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json()["error"]["param"], "chat_template_kwargs") << r.body;
    EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("chat_template_kwargs"), std::string::npos) << r.body;
  }
}

TEST_F(ReasoningServer, CompletionsStayRaw) {
  TestServer s(dir_->path());
  const OJson j =
      post_json(s, "/v1/completions", R"({"prompt": [151644, 77091, 198], "max_tokens": 10})").json();
  EXPECT_EQ(j["choices"][0]["text"], "<think>Hmm maybe</think>\n\nHi");
  EXPECT_FALSE(j["choices"][0].contains("reasoning_content"));
  EXPECT_FALSE(j["usage"].contains("completion_tokens_details"));
}

TEST(ReasoningServerHeldText, TextHeldForATagThatNeverCameEndsTheStream) {
  // "<" may begin <think>: it is held until the reply ends, then sent as the answer.
  TempDir dir;
  write_successor_model(dir.path(), {{kNewline, kLess}, {kLess, kImEnd}}, qwen3_tokenizer_dir());
  TestServer s(dir.path());
  EXPECT_EQ(post_json(s, "/v1/chat/completions", hi_body()).json()["choices"][0]["message"]["content"], "<");
  const StreamedReply st = stream(s, "");
  EXPECT_EQ(st.content, "<");
  EXPECT_EQ(st.reasoning, "");
  EXPECT_FALSE(st.usage.contains("completion_tokens_details"));
}

TEST(ReasoningServerQwen25, NoReasoningFieldsForAModelWithoutThinkTags) {
  TestServer s(demo_model_dir());
  const OJson j = post_json(s, "/v1/chat/completions", hi_body(R"("max_tokens": 6, "chat_template_kwargs": {"enable_thinking": false})")).json();
  EXPECT_TRUE(j["choices"][0]["message"]["content"].is_string()) << j.dump();
  EXPECT_FALSE(j["choices"][0]["message"].contains("reasoning_content"));
  EXPECT_FALSE(j["usage"].contains("completion_tokens_details"));
}

}  // namespace
}  // namespace glass::test
