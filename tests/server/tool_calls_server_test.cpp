// Tool calls in chat completions: the response builder turns hermes blocks in a reply
// into message.tool_calls and stream deltas (fed StreamedTokens, as the scheduler hands
// them over), the request's tools and tool_choice are validated, and an assistant's
// tool_calls go back through the chat template as the template expects them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "runtime/model_files.h"
#include "request_errors.h"
#include "server/openai_response.h"
#include "server_harness.h"
#include "support/test_support.h"

namespace glass::server::test {
namespace {

using glass::test::demo_model_dir;
using glass::test::HttpReply;
using glass::test::post_json;
using glass::test::sse_data;
using glass::test::TempDir;
using glass::test::TestServer;
using glass::test::TestServerOptions;
using glass::test::fixtures_root;
using glass::test::qwen3_tokenizer_dir;

const std::string kTools =
    R"("tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}}}}, {"type": "function", "function": {"name": "get_time"}}])";
const std::string kWeather = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const std::string kTime = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>";

std::string body(const std::string& fields) {
  return R"({"messages": [{"role": "user", "content": "Weather?"}])" + (fields.empty() ? "" : ", " + fields) + "}";
}

// The reply as the scheduler hands it over: `piece` bytes of text per token.
std::vector<StreamedToken> tokens_of(const std::string& reply, size_t piece) {
  std::vector<StreamedToken> tokens;
  for (size_t i = 0; i < reply.size(); i += piece) {
    StreamedToken t;
    t.token = static_cast<int32_t>(tokens.size());
    t.text = reply.substr(i, piece);
    tokens.push_back(std::move(t));
  }
  return tokens;
}

FinishedGeneration finished(FinishReason finish = FinishReason::eos(151645)) { return {finish, 10, 0, 0, 0}; }

struct Served {
  Tokenizer tokenizer;
  CompletionIds ids;
  explicit Served(const std::string& dir) : tokenizer(load_model_tokenizer(dir)) {}

  OJson whole(const CompletionRequest& r, const std::string& reply, FinishReason finish = FinishReason::eos(151645),
              ToolCallFormat format = ToolCallFormat::hermes) {
    ResponseBuilder b(r, tokenizer, "chatcmpl-x", 0, "m", {}, 0, format, &ids);
    return b.response(tokens_of(reply, 5), finished(finish));
  }

  // Every chunk of a stream of `reply`, `piece` bytes a token.
  std::vector<OJson> stream(const CompletionRequest& r, const std::string& reply, size_t piece,
                            FinishReason finish = FinishReason::eos(151645)) {
    ResponseBuilder b(r, tokenizer, "chatcmpl-x", 0, "m", {}, 0, ToolCallFormat::hermes, &ids);
    std::vector<OJson> chunks = {b.first_chunk()};
    for (const StreamedToken& t : tokens_of(reply, piece))
      for (OJson& c : b.token_chunks(t)) chunks.push_back(std::move(c));
    for (OJson& c : b.finish_chunks(finished(finish))) chunks.push_back(std::move(c));
    return chunks;
  }
};

// A stream's deltas put back together as a message, the way OpenAI's clients merge them
// (tool call deltas by index: the id, type and name once, the arguments appended).
struct Reassembled {
  OJson message = {{"role", "assistant"}, {"content", ""}};
  std::string finish_reason;
};
Reassembled reassemble(const std::vector<OJson>& chunks) {
  Reassembled out;
  std::string content;
  std::map<size_t, OJson> calls;
  for (const OJson& c : chunks) {
    const OJson& choice = c["choices"][0];
    const OJson& d = choice["delta"];
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("reasoning_content")) {
      if (!out.message.contains("reasoning_content")) out.message["reasoning_content"] = "";
      out.message["reasoning_content"] = out.message["reasoning_content"].get<std::string>() + d["reasoning_content"].get<std::string>();
    }
    if (d.contains("tool_calls")) {
      EXPECT_EQ(d.size(), 1u) << "a call's delta carries nothing else: " << d.dump();
      for (const OJson& t : d["tool_calls"]) {
        const size_t index = t["index"];
        if (t.contains("id")) {
          // The first delta of a call: {"index", "id", "type", "function": {"name", "arguments": ""}}.
          EXPECT_FALSE(calls.contains(index)) << t.dump();
          EXPECT_EQ(t["type"], "function");
          EXPECT_EQ(t["function"]["arguments"], "");
          calls[index] = {{"id", t["id"]}, {"type", "function"}, {"function", {{"name", t["function"]["name"]}, {"arguments", ""}}}};
        } else {
          // Then {"index", "function": {"arguments"}}.
          EXPECT_EQ(t.size(), 2u) << t.dump();
          EXPECT_EQ(t["function"].size(), 1u) << t.dump();
          EXPECT_TRUE(calls.contains(index)) << "arguments before the call's name: " << t.dump();
          OJson& args = calls[index]["function"]["arguments"];
          args = args.get<std::string>() + t["function"]["arguments"].get<std::string>();
        }
      }
    }
    if (!choice["finish_reason"].is_null()) out.finish_reason = choice["finish_reason"];
  }
  out.message["content"] = content;
  if (!calls.empty()) {
    if (content.empty()) out.message["content"] = nullptr;
    out.message["tool_calls"] = OJson::array();
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_TRUE(calls.contains(i)) << "indices are 0, 1, ...";
      out.message["tool_calls"].push_back(calls[i]);
    }
  }
  return out;
}

void expect_call_id(const OJson& id) {
  ASSERT_TRUE(id.is_string());
  const std::string text = id;
  EXPECT_TRUE(text.starts_with("call_") && text.size() == 29 &&
              std::all_of(text.begin() + 5, text.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }))
      << "call_ and 24 letters and digits: " << text;
}

TEST(ToolCallResponses, CallsBecomeMessageToolCalls) {
  Served s(demo_model_dir());
  const CompletionRequest r = parse_completion_request(body(kTools), Endpoint::chat_completions);
  ASSERT_TRUE(r.parse_tool_calls);
  const OJson j = s.whole(r, "Let me check.\n" + kWeather + "\n" + kTime);
  const OJson& choice = j["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Let me check.");
  const OJson& calls = choice["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u) << j.dump();
  expect_call_id(calls[0]["id"]);
  expect_call_id(calls[1]["id"]);
  EXPECT_NE(calls[0]["id"], calls[1]["id"]);
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["function"], OJson({{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}));
  EXPECT_EQ(calls[1]["function"], OJson({{"name", "get_time"}, {"arguments", R"({"zone":"CET"})"}}));
  EXPECT_EQ(calls[0].size(), 3u) << "id, type, function: " << calls[0].dump();

  // Only calls: content is null, as OpenAI's.
  const OJson only = s.whole(r, kWeather);
  EXPECT_TRUE(only["choices"][0]["message"]["content"].is_null()) << only.dump();
  EXPECT_EQ(only["choices"][0]["message"]["tool_calls"].size(), 1u);
  // A stop string ended it: still the model's own end.
  EXPECT_EQ(s.whole(r, kWeather, FinishReason::stop("\n\n"))["choices"][0]["finish_reason"], "tool_calls");
  // Cut off by max_tokens after a call: "length" says the reply may have meant more.
  EXPECT_EQ(s.whole(r, kWeather, FinishReason::length())["choices"][0]["finish_reason"], "length");

  // No call: the text as it is, finish "stop", no tool_calls field.
  const OJson plain = s.whole(r, "It is sunny. <tool_call>{broken</tool_call>");
  EXPECT_EQ(plain["choices"][0]["message"]["content"], "It is sunny. <tool_call>{broken</tool_call>");
  EXPECT_FALSE(plain["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(plain["choices"][0]["finish_reason"], "stop");
  // Cut off inside a block: the text, as written.
  const OJson cut = s.whole(r, "Hm.\n<tool_call>\n{\"name\": \"get_", FinishReason::length());
  EXPECT_EQ(cut["choices"][0]["message"]["content"], "Hm.\n<tool_call>\n{\"name\": \"get_");
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "length");
}

TEST(ToolCallResponses, RawTextWithoutToolsOrWithToolChoiceNone) {
  Served s(demo_model_dir());
  const std::string reply = "Sure.\n" + kWeather;
  for (const std::string& fields : {std::string(""), kTools + R"(, "tool_choice": "none")"}) {
    SCOPED_TRACE(fields);
    const CompletionRequest r = parse_completion_request(body(fields), Endpoint::chat_completions);
    EXPECT_FALSE(r.parse_tool_calls);
    const OJson j = s.whole(r, reply);
    EXPECT_EQ(j["choices"][0]["message"]["content"], reply);
    EXPECT_FALSE(j["choices"][0]["message"].contains("tool_calls"));
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  }
  // A model whose calls the server does not read (--tool-call-parser none).
  const CompletionRequest r = parse_completion_request(body(kTools), Endpoint::chat_completions);
  EXPECT_EQ(s.whole(r, reply, FinishReason::eos(151645), ToolCallFormat::none)["choices"][0]["message"]["content"], reply);
  // tool_choice "auto" is the default.
  EXPECT_TRUE(parse_completion_request(body(kTools + R"(, "tool_choice": "auto")"), Endpoint::chat_completions).parse_tool_calls);
}

TEST(ToolCallResponses, ParallelToolCallsFalseReturnsTheFirstCall) {
  Served s(demo_model_dir());
  const CompletionRequest r =
      parse_completion_request(body(kTools + R"(, "parallel_tool_calls": false)"), Endpoint::chat_completions);
  const OJson j = s.whole(r, kWeather + "\n" + kTime);
  ASSERT_EQ(j["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  const Reassembled st = reassemble(s.stream(r, kWeather + "\n" + kTime, 3));
  ASSERT_EQ(st.message["tool_calls"].size(), 1u);
  EXPECT_EQ(st.message["tool_calls"][0]["function"]["name"], "get_weather");
}

// Streams cut a reply into tokens of 1, 2, 3, 7 and 50 bytes; the deltas, merged as
// clients merge them, are the whole response's message (the call ids aside: each
// response makes its own).
TEST(ToolCallResponses, StreamedDeltasReassembleToTheWholeResponse) {
  Served s(demo_model_dir());
  const CompletionRequest r = parse_completion_request(body(kTools), Endpoint::chat_completions);
  const std::vector<std::string> replies = {
      kWeather,
      "Let me check.\n" + kWeather + "\n" + kTime + "\n",
      "Plain text only, with a < and <tool",
      "a <tool_call>{bad}</tool_call>\n" + kTime + "\nDone.",
      "Hm.\n<tool_call>\n{\"name\": \"get_",
  };
  for (const std::string& reply : replies) {
    const OJson whole = s.whole(r, reply)["choices"][0];
    for (size_t piece : {1, 2, 3, 7, 50}) {
      SCOPED_TRACE(reply + " in pieces of " + std::to_string(piece));
      const std::vector<OJson> chunks = s.stream(r, reply, piece);
      for (const OJson& c : chunks) {
        EXPECT_EQ(c["object"], "chat.completion.chunk");
        EXPECT_EQ(c["choices"][0]["index"], 0);
      }
      Reassembled st = reassemble(chunks);
      EXPECT_EQ(st.finish_reason, whole["finish_reason"]);
      OJson message = whole["message"];
      if (message.contains("tool_calls")) {
        ASSERT_EQ(st.message["tool_calls"].size(), message["tool_calls"].size());
        for (size_t i = 0; i < message["tool_calls"].size(); ++i) {
          expect_call_id(st.message["tool_calls"][i]["id"]);
          st.message["tool_calls"][i]["id"] = message["tool_calls"][i]["id"];
        }
      }
      EXPECT_EQ(st.message, message);
    }
  }
}

TEST(ToolCallResponses, ACallChunkCarriesTheTokensLogprobsWhenItHasNoText) {
  Served s(demo_model_dir());
  const CompletionRequest r =
      parse_completion_request(body(kTools + R"(, "logprobs": true, "stream": true)"), Endpoint::chat_completions);
  ResponseBuilder b(r, s.tokenizer, "chatcmpl-x", 0, "m", {}, 0, ToolCallFormat::hermes, &s.ids);
  // Every token makes a chunk with its logprobs: a token with no text, the first of its
  // call chunks. In 10-byte tokens the arguments begin in the 5th ('uments": {': the
  // call's head and "{"), and go on in the 6th and 7th.
  size_t with_logprobs = 0, calls = 0;
  const std::vector<StreamedToken> tokens = tokens_of(kWeather, 10);
  for (const StreamedToken& t : tokens) {
    const std::vector<OJson> chunks = b.token_chunks(t);
    ASSERT_FALSE(chunks.empty());
    for (size_t i = 0; i < chunks.size(); ++i) {
      const OJson& choice = chunks[i]["choices"][0];
      if (!choice["logprobs"].is_null()) ++with_logprobs;
      EXPECT_EQ(choice["logprobs"].is_null(), i > 0) << chunks[i].dump();
      if (choice["delta"].contains("tool_calls")) ++calls;
    }
  }
  EXPECT_EQ(with_logprobs, tokens.size());
  EXPECT_EQ(calls, 4u);
}

TEST(ToolCallResponses, ReasoningThenACall) {
  Served s(qwen3_tokenizer_dir());
  const CompletionRequest r = parse_completion_request(body(kTools), Endpoint::chat_completions);
  const std::string reply = "<think>\nThe user wants weather.\n</think>\n\n" + kWeather;
  const OJson j = s.whole(r, reply);
  const OJson& message = j["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "The user wants weather.");
  EXPECT_TRUE(message["content"].is_null()) << j.dump();
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  // A call written inside the reasoning is reasoning, not a call.
  const OJson inside = s.whole(r, "<think>\n" + kWeather + "\n</think>\n\nNo.");
  EXPECT_FALSE(inside["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(inside["choices"][0]["message"]["reasoning_content"], kWeather);
  EXPECT_EQ(inside["choices"][0]["message"]["content"], "No.");
  for (size_t piece : {1, 4}) {
    Reassembled st = reassemble(s.stream(r, reply, piece));
    ASSERT_EQ(st.message["tool_calls"].size(), 1u);
    st.message["tool_calls"][0]["id"] = message["tool_calls"][0]["id"];
    EXPECT_EQ(Json::parse(st.message.dump()), Json::parse(message.dump())) << "the same fields, in any order";
    EXPECT_EQ(st.finish_reason, "tool_calls");
  }
}

TEST(ToolCallRequests, BadToolsAndToolChoiceAre400NamingTheParameter) {
  const std::pair<std::string, std::string> cases[] = {
      {R"("tools": [{"type": "function", "function": {"description": "no name"}}])", "tools[0].function.name"},
      {R"("tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": ""}}])",
       "tools[1].function.name"},
      {R"("tools": [{"type": "function", "function": {"name": 3}}])", "tools[0].function.name"},
      {R"("tools": [{"type": "function"}])", "tools[0].function"},
      {R"("tools": [{"type": "retrieval", "function": {"name": "f"}}])", "tools[0].type"},
      {R"("tools": [1])", "tools[0]"},
      {kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "absent"}})", "tool_choice"},
      {kTools + R"(, "tool_choice": "required", "response_format": {"type": "json_object"})", "tool_choice"},
      {kTools + R"(, "tool_choice": "sometimes")", "tool_choice"},
      {kTools + R"(, "tool_choice": 1)", "tool_choice"},
      {kTools + R"(, "tool_choice": {"type": "function"})", "tool_choice"},
      {R"("tool_choice": "required")", "tool_choice"},
      {kTools + R"(, "parallel_tool_calls": "no")", "parallel_tool_calls"},
  };
  for (const auto& [fields, param] : cases) {
    SCOPED_TRACE(fields);
    const ApiError e = error_of(body(fields));
    EXPECT_EQ(e.status(), 400) << e.what();
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_EQ(e.type(), "invalid_request_error");
    EXPECT_NE(std::string(e.what()).find(param), std::string::npos) << e.what();
  }
  // What is refused says why.
  EXPECT_NE(std::string(error_of(body(kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "absent"}})"))
                            .what())
                .find("'absent', which is not in 'tools'"),
            std::string::npos);
}

TEST(ToolCallRequests, RequiredAndANamedFunctionForceCalls) {
  const CompletionRequest required = parse_completion_request(body(kTools + R"(, "tool_choice": "required")"),
                                                              Endpoint::chat_completions);
  ASSERT_TRUE(required.forced_tools.has_value());
  EXPECT_TRUE(required.forced_tools->empty());  // any of the tools
  EXPECT_TRUE(required.parse_tool_calls);
  const CompletionRequest named = parse_completion_request(
      body(kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_time"}})"), Endpoint::chat_completions);
  EXPECT_EQ(named.forced_tools, std::vector<std::string>{"get_time"});
  const CompletionRequest automatic = parse_completion_request(body(kTools), Endpoint::chat_completions);
  EXPECT_FALSE(automatic.forced_tools.has_value());
}

TEST(ToolCallRequests, AnAssistantsToolCallsMustBeCalls) {
  const auto with_call = [](const std::string& call) {
    return R"({"messages": [{"role": "user", "content": "Weather?"}, {"role": "assistant", "tool_calls": [)" + call +
           "]}]}";
  };
  const std::pair<std::string, std::string> cases[] = {
      {R"({"type": "function", "function": {"name": "f", "arguments": "{not json"}})", "messages[1].tool_calls[0].function.arguments"},
      {R"({"type": "function", "function": {"name": "f", "arguments": "[1]"}})", "messages[1].tool_calls[0].function.arguments"},
      {R"({"type": "function", "function": {"name": "f", "arguments": 3}})", "messages[1].tool_calls[0].function.arguments"},
      {R"({"type": "function", "function": {"name": "f"}})", "messages[1].tool_calls[0].function.arguments"},
      {R"({"type": "function", "function": {"arguments": "{}"}})", "messages[1].tool_calls[0].function.name"},
      {R"({"id": "call_1"})", "messages[1].tool_calls[0].function"},
      {R"(7)", "messages[1].tool_calls[0]"},
  };
  for (const auto& [call, param] : cases) {
    SCOPED_TRACE(call);
    const ApiError e = error_of(with_call(call));
    EXPECT_EQ(e.status(), 400) << e.what();
    EXPECT_EQ(e.param(), param) << e.what();
  }
  EXPECT_EQ(error_of(R"({"messages": [{"role": "assistant", "tool_calls": {}}]})").param(), "messages[0].tool_calls");
}

// The conversation of the chat template fixtures' tool_call_roundtrip case, sent as an
// OpenAI client sends it (arguments as a JSON string, call ids, content null), renders
// exactly what the template renders from the object form (the fixture's expected text,
// made by Python's jinja2).
TEST(ToolCallRequests, AToolRoundTripRendersAsTheTemplateExpects) {
  const OJson fixture = read_ordered_json_file(fixtures_root() + "/chat-templates/cases.json");
  size_t checked = 0;
  for (const OJson& c : fixture["cases"]) {
    const std::string name = c["template"];
    if (c["conversation"] != "tool_call_roundtrip" || !name.starts_with("Qwen-Qwen")) continue;
    SCOPED_TRACE(name + (c["add_generation_prompt"].get<bool>() ? " with" : " without") + " the generation prompt");
    OJson messages = c["messages"];
    for (OJson& m : messages) {
      if (!m.contains("tool_calls")) continue;
      for (OJson& call : m["tool_calls"]) {
        call["id"] = "call_abc";
        call["function"]["arguments"] = call["function"]["arguments"].dump();  // OpenAI's form
      }
      if (m["content"] == "") m["content"] = nullptr;
    }
    for (OJson& m : messages)
      if (m["role"] == "tool") m["tool_call_id"] = "call_abc";
    const CompletionRequest r = parse_completion_request(
        OJson({{"messages", messages}, {"tools", c["tools"]}}).dump(), Endpoint::chat_completions);
    const ChatTemplate t = ChatTemplate::from_text(fixture["templates"][name], name,
                                                   ChatSpecialTokens{{{"bos_token", c["bos_token"]}, {"eos_token", c["eos_token"]}}, {}});
    EXPECT_EQ(t.render(r.messages, r.tools, c["add_generation_prompt"]), c["expected"].get<std::string>());
    ++checked;
  }
  EXPECT_GE(checked, 8u) << "the fixtures have Qwen2.5's and Qwen3's round trips, with and without tools";

  // The demo model's template is Qwen2.5's: the same prompt through the server's path.
  const ChatTemplate demo = ChatTemplate::from_checkpoint(demo_model_dir());
  const CompletionRequest r = parse_completion_request(
      R"({"messages": [{"role": "user", "content": "Weather?"},
          {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
           "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
          {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 21}"}]})",
      Endpoint::chat_completions);
  EXPECT_EQ(demo.render(r.messages, r.tools, true),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nWeather?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
            "</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n{\"temp_c\": 21}\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

// A Qwen2.5 checkpoint whose greedy reply after the generation prompt ("...assistant\n")
// is kReplyText then <|im_end|>: each token of it distinct, each followed by the next.
const std::string kReplyText = R"(Sure.<tool_call>{"name":"get_weather","arguments":{"city": "Paris"}}</tool_call>)";
void write_calling_model(const std::string& dir, const std::string& reply = kReplyText) {
  const Tokenizer tokenizer = load_model_tokenizer(demo_model_dir());
  std::vector<int32_t> ids = tokenizer.encode(reply);
  ids.insert(ids.begin(), 198);  // the prompt's last token, "\n"
  ids.push_back(151645);         // <|im_end|>, eos
  std::vector<std::pair<int32_t, int32_t>> next;
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    for (const auto& [from, to] : next) ASSERT_NE(from, ids[i]) << "a token twice in the reply: the chain would loop";
    next.emplace_back(ids[i], ids[i + 1]);
  }
  glass::test::write_successor_model(dir, next, demo_model_dir());
}

// End to end: a model that calls a tool, served; the reply's block becomes a call only
// for requests with tools, and the stream says the same as the whole response.
TEST(ToolCallServer, AModelsCallReachesTheClient) {
  TempDir dir;
  write_calling_model(dir.path());
  TestServer s(dir.path());
  const HttpReply r = post_json(s, "/v1/chat/completions", body(kTools));
  ASSERT_EQ(r.status, 200) << r.body;
  const OJson whole = r.json()["choices"][0];
  EXPECT_EQ(whole["finish_reason"], "tool_calls") << r.body;
  EXPECT_EQ(whole["message"]["content"], "Sure.");
  ASSERT_EQ(whole["message"]["tool_calls"].size(), 1u) << r.body;
  expect_call_id(whole["message"]["tool_calls"][0]["id"]);
  EXPECT_EQ(whole["message"]["tool_calls"][0]["function"], OJson({{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}));

  const HttpReply streamed = post_json(s, "/v1/chat/completions", body(kTools + R"(, "stream": true)"));
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  std::vector<OJson> chunks;
  for (const std::string& d : sse_data(streamed.body))
    if (d != "[DONE]") chunks.push_back(OJson::parse(d));
  Reassembled st = reassemble(chunks);
  EXPECT_EQ(st.finish_reason, "tool_calls");
  ASSERT_EQ(st.message["tool_calls"].size(), 1u) << streamed.body;
  expect_call_id(st.message["tool_calls"][0]["id"]);
  st.message["tool_calls"][0]["id"] = whole["message"]["tool_calls"][0]["id"];
  EXPECT_EQ(st.message, whole["message"]);

  // Without tools, or with tool_choice "none": the text as the model wrote it.
  for (const std::string& fields : {std::string(""), kTools + R"(, "tool_choice": "none")"}) {
    const OJson raw = post_json(s, "/v1/chat/completions", body(fields)).json()["choices"][0];
    EXPECT_EQ(raw["message"]["content"], kReplyText) << fields;
    EXPECT_EQ(raw["finish_reason"], "stop");
  }
  // What is refused is refused over HTTP too.
  const HttpReply absent = post_json(
      s, "/v1/chat/completions", body(kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "absent"}})"));
  EXPECT_EQ(absent.status, 400);
  EXPECT_EQ(absent.json()["error"]["param"], "tool_choice");

  // The next step of the conversation: the call and its result go back in.
  const std::string next_step = R"({"tools": [{"type": "function", "function": {"name": "get_weather"}}], "messages": [
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]})";
  const HttpReply next = post_json(s, "/v1/chat/completions", next_step);
  EXPECT_EQ(next.status, 200) << next.body;
}

// A model that begins a call it would get wrong (the city unquoted): under tool_choice
// "auto" the grammar after <tool_call> keeps it a valid call, so it can stream as it is
// generated, its name first and its arguments in pieces.
TEST(ToolCallServer, ACallTheModelBeginsIsAValidCall) {
  TempDir dir;
  write_calling_model(dir.path(), R"(Sure.<tool_call>{"name":"get_weather","arguments":{"city": Paris}}</tool_call>)");
  TestServer s(dir.path());
  const std::string tools =
      R"("tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
          "properties": {"city": {"enum": ["Paris", "Lyon"]}}}}}, {"type": "function", "function": {"name": "get_time"}}])";
  // Greedy: where the mask removes the model's choice, every allowed token has the same
  // logit, so the lowest id is taken.
  const HttpReply r = post_json(s, "/v1/chat/completions", body(tools + R"(, "stream": true, "temperature": 0, "max_tokens": 60)"));
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<OJson> chunks;
  for (const std::string& d : sse_data(r.body))
    if (d != "[DONE]") chunks.push_back(OJson::parse(d));
  size_t argument_pieces = 0;
  for (const OJson& c : chunks)
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("tool_calls") &&
        !c["choices"][0]["delta"]["tool_calls"][0].contains("id"))
      ++argument_pieces;
  const Reassembled st = reassemble(chunks);
  EXPECT_TRUE(st.message["content"].get<std::string>().starts_with("Sure.")) << r.body;
  ASSERT_EQ(st.message["tool_calls"].size(), 1u) << r.body;
  const OJson& function = st.message["tool_calls"][0]["function"];
  EXPECT_EQ(function["name"], "get_weather");
  const OJson arguments = OJson::parse(function["arguments"].get<std::string>());
  EXPECT_EQ(arguments, OJson({{"city", "Lyon"}})) << r.body;  // "L" has a lower id than "P"
  EXPECT_GT(argument_pieces, 1u) << "the arguments in pieces as generated";
}

TEST(ToolCallServer, ToolCallParserNoneLeavesTheTextAlone) {
  TempDir dir;
  write_calling_model(dir.path());
  TestServerOptions options;
  options.tool_call_format = ToolCallFormat::none;
  TestServer s(dir.path(), options);
  const OJson raw = post_json(s, "/v1/chat/completions", body(kTools)).json()["choices"][0];
  EXPECT_EQ(raw["message"]["content"], kReplyText);
  EXPECT_FALSE(raw["message"].contains("tool_calls"));
  EXPECT_EQ(raw["finish_reason"], "stop");
}

}  // namespace
}  // namespace glass::server::test
