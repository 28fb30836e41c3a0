// POST /v1/responses (OpenAI's Responses API) on an in-process server: the response
// object against chat completions of the same conversation, the streamed events and
// their order, stored responses (previous_response_id, GET, DELETE, input_items, the
// store's bound), function calls and their outputs, reasoning items, and bad input named
// by its parameter.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "server_harness.h"
#include "support/test_support.h"

namespace glass::server::test {
namespace {

using glass::test::demo_model_dir;
using glass::test::HttpReply;
using glass::test::OJson;
using glass::test::post_json;
using glass::test::qwen3_tokenizer_dir;
using glass::test::TempDir;
using glass::test::TestServer;
using glass::test::TestServerOptions;

HttpReply respond(const TestServer& s, const OJson& body) { return post_json(s, "/v1/responses", body.dump()); }

OJson respond_ok(const TestServer& s, const OJson& body) {
  const HttpReply r = respond(s, body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.json() : OJson::object();
}

// What the SDKs call output_text: the text parts of every message item, joined.
std::string output_text(const OJson& response) {
  std::string text;
  for (const OJson& item : response["output"])
    if (item["type"] == "message")
      for (const OJson& part : item["content"]) text += part["text"].get<std::string>();
  return text;
}

struct Event {
  std::string name;  // the `event:` line
  OJson data;
};

// The events of a Responses stream: `event: <type>` and `data: <json>` per event.
std::vector<Event> events_of(const std::string& body) {
  std::vector<Event> events;
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find("\n\n", at);
    if (end == std::string::npos) end = body.size();
    const std::string block = body.substr(at, end - at);
    at = end + 2;
    if (block.empty() || block[0] == ':') continue;  // a heartbeat comment
    Event e;
    size_t line_at = 0;
    while (line_at < block.size()) {
      size_t line_end = block.find('\n', line_at);
      if (line_end == std::string::npos) line_end = block.size();
      const std::string line = block.substr(line_at, line_end - line_at);
      if (line.starts_with("event: ")) e.name = line.substr(7);
      if (line.starts_with("data: ")) e.data = OJson::parse(line.substr(6));
      line_at = line_end + 1;
    }
    events.push_back(std::move(e));
  }
  return events;
}

std::vector<Event> stream(const TestServer& s, OJson body) {
  body["stream"] = true;
  const HttpReply r = respond(s, body);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Content-Type"), "text/event-stream");
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos) << "the Responses API ends with response.completed, not [DONE]";
  return events_of(r.body);
}

const OJson kWeatherTool = {{"type", "function"},
                            {"name", "get_weather"},
                            {"description", "The weather in a city"},
                            {"parameters",
                             {{"type", "object"},
                              {"properties", {{"city", {{"type", "string"}, {"maxLength", 12}}}}},
                              {"required", {"city"}},
                              {"additionalProperties", false}}}};

TEST(ResponsesApi, TheTextIsChatCompletionsTextForTheSameSettings) {
  TestServer s(demo_model_dir());
  const OJson chat = post_json(s, "/v1/chat/completions",
                               R"({"messages": [{"role": "system", "content": "Be brief."},
                                                {"role": "user", "content": "Hello there"}],
                                   "seed": 7, "temperature": 0.9, "max_tokens": 12})")
                         .json();
  const OJson r = respond_ok(s, {{"model", "test-model"}, {"instructions", "Be brief."}, {"input", "Hello there"},
                                 {"seed", 7}, {"temperature", 0.9}, {"max_output_tokens", 12}});
  EXPECT_TRUE(r["id"].get<std::string>().starts_with("resp_")) << r["id"];
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["model"], "test-model");
  EXPECT_EQ(r["instructions"], "Be brief.");
  EXPECT_EQ(r["max_output_tokens"], 12);
  EXPECT_EQ(output_text(r), chat["choices"][0]["message"]["content"]);
  EXPECT_EQ(r["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(r["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
  EXPECT_EQ(r["usage"]["total_tokens"], chat["usage"]["total_tokens"]);
  ASSERT_EQ(r["output"].size(), 1u) << r.dump();
  const OJson& message = r["output"][0];
  EXPECT_TRUE(message["id"].get<std::string>().starts_with("msg_"));
  EXPECT_EQ(message["role"], "assistant");
  EXPECT_EQ(message["content"][0]["type"], "output_text");
  EXPECT_EQ(message["content"][0]["annotations"], OJson::array());
  if (chat["choices"][0]["finish_reason"] == "length") {
    EXPECT_EQ(r["status"], "incomplete");
    EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
    EXPECT_EQ(message["status"], "incomplete");
  } else {
    EXPECT_EQ(r["status"], "completed");
    EXPECT_EQ(message["status"], "completed");
  }
}

TEST(ResponsesApi, MaxOutputTokensMakesAnIncompleteResponse) {
  TestServer s(demo_model_dir());
  const OJson r = respond_ok(s, {{"input", "Tell me a long story"}, {"max_output_tokens", 3}, {"seed", 1},
                                 {"ignore_eos", true}});
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"], (OJson{{"reason", "max_output_tokens"}}));
  EXPECT_EQ(r["usage"]["output_tokens"], 3);
}

TEST(ResponsesApi, StreamedEventsArriveInOrderAndBuildTheResponse) {
  TestServer s(demo_model_dir());
  const OJson body = {{"input", "Hello there"}, {"seed", 3}, {"temperature", 1.0}, {"max_output_tokens", 16}};
  const OJson whole = respond_ok(s, body);
  const std::vector<Event> events = stream(s, body);
  ASSERT_GE(events.size(), 8u);
  std::vector<std::string> types;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].data["sequence_number"], i);
    EXPECT_EQ(events[i].data["type"], events[i].name);
    types.push_back(events[i].name);
  }
  EXPECT_EQ(types[0], "response.created");
  EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
  EXPECT_EQ(events[0].data["response"]["output"], OJson::array());
  EXPECT_EQ(types[1], "response.in_progress");
  EXPECT_EQ(types[2], "response.output_item.added");
  EXPECT_EQ(types[3], "response.content_part.added");
  const size_t n = types.size();
  EXPECT_TRUE(types[n - 1] == "response.completed" || types[n - 1] == "response.incomplete") << types[n - 1];
  EXPECT_EQ(types[n - 2], "response.output_item.done");
  EXPECT_EQ(types[n - 3], "response.content_part.done");
  EXPECT_EQ(types[n - 4], "response.output_text.done");
  std::string deltas;
  for (size_t i = 4; i < n - 4; ++i) {
    EXPECT_EQ(types[i], "response.output_text.delta");
    EXPECT_EQ(events[i].data["item_id"], events[2].data["item"]["id"]);
    deltas += events[i].data["delta"].get<std::string>();
  }
  const OJson& final_response = events[n - 1].data["response"];
  EXPECT_EQ(deltas, events[n - 4].data["text"]);
  EXPECT_EQ(deltas, output_text(final_response));
  EXPECT_EQ(deltas, output_text(whole));
  EXPECT_EQ(final_response["status"], whole["status"]);
  // (cached_tokens differ: the second of the two requests finds the first's prompt cached)
  EXPECT_EQ(final_response["usage"]["input_tokens"], whole["usage"]["input_tokens"]);
  EXPECT_EQ(final_response["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
  EXPECT_EQ(events[n - 2].data["item"], final_response["output"][0]);
}

TEST(ResponsesApi, PreviousResponseIdContinuesTheConversation) {
  TestServer s(demo_model_dir());
  const OJson first = respond_ok(s, {{"input", "Hello there"}, {"seed", 5}, {"max_output_tokens", 10}});
  const OJson second = respond_ok(s, {{"input", "And then?"}, {"previous_response_id", first["id"]}, {"seed", 5},
                                      {"max_output_tokens", 10}});
  EXPECT_EQ(second["previous_response_id"], first["id"]);
  EXPECT_GT(second["usage"]["input_tokens"].get<int64_t>(),
            first["usage"]["input_tokens"].get<int64_t>() + first["usage"]["output_tokens"].get<int64_t>());
  // The same conversation as chat messages gives the same prompt and reply.
  const OJson messages = {{{"role", "user"}, {"content", "Hello there"}},
                          {{"role", "assistant"}, {"content", output_text(first)}},
                          {{"role", "user"}, {"content", "And then?"}}};
  const OJson chat =
      post_json(s, "/v1/chat/completions", OJson{{"messages", messages}, {"seed", 5}, {"max_tokens", 10}}.dump()).json();
  EXPECT_EQ(second["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(output_text(second), chat["choices"][0]["message"]["content"]);
  // Its KV blocks from the first turn are reused (the prefix cache).
  EXPECT_GT(second["usage"]["input_tokens_details"]["cached_tokens"].get<int64_t>(), 0);

  const std::string items_path = "/v1/responses/" + second["id"].get<std::string>() + "/input_items";
  const OJson items = glass::test::get(s, items_path + "?order=asc").json();
  EXPECT_EQ(items["object"], "list");
  ASSERT_EQ(items["data"].size(), 3u) << items.dump();
  EXPECT_EQ(items["data"][0]["content"][0]["text"], "Hello there");
  EXPECT_EQ(items["data"][1]["id"], first["output"][0]["id"]);
  EXPECT_EQ(items["data"][2]["content"][0], (OJson{{"type", "input_text"}, {"text", "And then?"}}));
  EXPECT_EQ(items["first_id"], items["data"][0]["id"]);
  EXPECT_EQ(items["last_id"], items["data"][2]["id"]);
  EXPECT_EQ(items["has_more"], false);
  // Newest first by default, as OpenAI lists them; pages with limit and after.
  const OJson newest = glass::test::get(s, items_path + "?limit=2").json();
  ASSERT_EQ(newest["data"].size(), 2u) << newest.dump();
  EXPECT_EQ(newest["data"][0], items["data"][2]);
  EXPECT_EQ(newest["data"][1], items["data"][1]);
  EXPECT_EQ(newest["has_more"], true);
  const OJson rest = glass::test::get(s, items_path + "?limit=2&after=" + newest["last_id"].get<std::string>()).json();
  ASSERT_EQ(rest["data"].size(), 1u) << rest.dump();
  EXPECT_EQ(rest["data"][0], items["data"][0]);
  EXPECT_EQ(rest["has_more"], false);
  for (const char* bad : {"?limit=0", "?limit=101", "?limit=x", "?order=up", "?after=msg_nope"}) {
    const HttpReply r = glass::test::get(s, items_path + bad);
    EXPECT_EQ(r.status, 400) << bad << " -> " << r.body;
  }
}

TEST(ResponsesApi, LogprobsComeWithTheTextWhenIncluded) {
  TestServer s(demo_model_dir());
  const OJson body = {{"input", "Hello there"}, {"seed", 9}, {"max_output_tokens", 10},
                      {"include", {"message.output_text.logprobs"}}, {"top_logprobs", 3}};
  const OJson r = respond_ok(s, body);
  EXPECT_EQ(r["top_logprobs"], 3);
  ASSERT_EQ(r["output"].size(), 1u) << r.dump();
  const OJson& part = r["output"][0]["content"][0];
  const OJson& entries = part["logprobs"];
  // Every generated token (an ending eos too: its text is not in the reply), in order.
  ASSERT_EQ(entries.size(), r["usage"]["output_tokens"].get<size_t>()) << part.dump();
  std::string tokens;
  for (const OJson& e : entries) {
    tokens += e["token"].get<std::string>();
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["logprob"].get<double>() - 1e-6);
  }
  EXPECT_TRUE(tokens.starts_with(part["text"].get<std::string>())) << tokens;

  // Streamed: the deltas' entries add up to the part's.
  OJson streamed = OJson::array();
  OJson done;
  for (const Event& e : stream(s, body)) {
    if (e.name == "response.output_text.delta")
      for (const OJson& entry : e.data["logprobs"]) streamed.push_back(entry);
    if (e.name == "response.output_text.done") done = e.data["logprobs"];
  }
  EXPECT_EQ(done, entries);
  EXPECT_TRUE(std::equal(streamed.begin(), streamed.end(), entries.begin())) << streamed.dump();

  // Without the include entry there are none, and top_logprobs alone is refused.
  const OJson plain = respond_ok(s, {{"input", "Hello there"}, {"max_output_tokens", 4}});
  EXPECT_FALSE(plain["output"][0]["content"][0].contains("logprobs"));
  const HttpReply refused = respond(s, {{"input", "Hi"}, {"top_logprobs", 2}});
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.json()["error"]["param"], "top_logprobs");
}

TEST(ResponsesApi, StoredResponsesCanBeReadAndDeleted) {
  TestServer s(demo_model_dir());
  const OJson first = respond_ok(s, {{"input", "Hello there"}, {"max_output_tokens", 6}});
  const std::string path = "/v1/responses/" + first["id"].get<std::string>();
  const OJson second = respond_ok(s, {{"input", "More"}, {"previous_response_id", first["id"]}, {"max_output_tokens", 6}});
  const HttpReply got = glass::test::get(s, path);
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.json(), first);

  const HttpReply deleted = glass::test::send(s, "DELETE", path, {});
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.json(), (OJson{{"id", first["id"]}, {"object", "response.deleted"}, {"deleted", true}}));
  EXPECT_EQ(glass::test::get(s, path).status, 404);
  EXPECT_EQ(glass::test::send(s, "DELETE", path, {}).status, 404);
  const HttpReply gone = respond(s, {{"input", "Again"}, {"previous_response_id", first["id"]}});
  EXPECT_EQ(gone.status, 404) << gone.body;
  EXPECT_EQ(gone.json()["error"]["param"], "previous_response_id");
  // The second kept the whole conversation, so it continues without the first.
  const OJson third = respond_ok(s, {{"input", "Again"}, {"previous_response_id", second["id"]}, {"max_output_tokens", 4}});
  EXPECT_GT(third["usage"]["input_tokens"].get<int64_t>(), second["usage"]["input_tokens"].get<int64_t>());

  const OJson unstored = respond_ok(s, {{"input", "Hi"}, {"store", false}, {"max_output_tokens", 4}});
  EXPECT_EQ(unstored["store"], false);
  EXPECT_EQ(glass::test::get(s, "/v1/responses/" + unstored["id"].get<std::string>()).status, 404);
}

TEST(ResponsesApi, TheStoreKeepsTheMostRecentlyUsed) {
  TestServerOptions options;
  options.responses_store = 2;
  TestServer s(demo_model_dir(), options);
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) ids.push_back(respond_ok(s, {{"input", "Hi"}, {"max_output_tokens", 2}})["id"]);
  ASSERT_EQ(glass::test::get(s, "/v1/responses/" + ids[0]).status, 200);  // now the most recently used
  ids.push_back(respond_ok(s, {{"input", "Hi"}, {"max_output_tokens", 2}})["id"]);
  EXPECT_EQ(glass::test::get(s, "/v1/responses/" + ids[0]).status, 200);
  EXPECT_EQ(glass::test::get(s, "/v1/responses/" + ids[1]).status, 404);
  EXPECT_EQ(glass::test::get(s, "/v1/responses/" + ids[2]).status, 200);
}

TEST(ResponsesApi, AForcedFunctionCallAndItsOutputGoBack) {
  TestServer s(demo_model_dir());
  const OJson r = respond_ok(s, {{"input", "Weather in Paris?"}, {"tools", {kWeatherTool}}, {"tool_choice", "required"},
                                 {"parallel_tool_calls", false}, {"max_output_tokens", 120}, {"seed", 2}});
  EXPECT_EQ(r["status"], "completed") << r.dump();
  EXPECT_EQ(r["tool_choice"], "required");
  EXPECT_EQ(r["tools"][0]["name"], "get_weather");
  ASSERT_EQ(r["output"].size(), 1u) << r.dump();
  const OJson& call = r["output"][0];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_TRUE(call["id"].get<std::string>().starts_with("fc_"));
  EXPECT_TRUE(call["call_id"].get<std::string>().starts_with("call_"));
  EXPECT_EQ(call["name"], "get_weather");
  const OJson arguments = OJson::parse(call["arguments"].get<std::string>());
  ASSERT_TRUE(arguments.is_object());
  ASSERT_TRUE(arguments.contains("city"));
  // maxLength counts characters, not UTF-8 bytes.
  const std::string city = arguments["city"].get<std::string>();
  EXPECT_LE(std::count_if(city.begin(), city.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }),
            12)
      << city;

  // The streamed call: added, argument deltas, done, with the same arguments.
  const std::vector<Event> events = stream(s, {{"input", "Weather in Paris?"}, {"tools", {kWeatherTool}},
                                               {"tool_choice", "required"}, {"parallel_tool_calls", false},
                                               {"max_output_tokens", 120}, {"seed", 2}});
  std::string deltas, done;
  for (const Event& e : events) {
    if (e.name == "response.function_call_arguments.delta") deltas += e.data["delta"].get<std::string>();
    if (e.name == "response.function_call_arguments.done") done = e.data["arguments"];
  }
  EXPECT_EQ(deltas, call["arguments"]);
  EXPECT_EQ(done, call["arguments"]);
  EXPECT_EQ(events[2].data["item"]["type"], "function_call");
  EXPECT_EQ(events[2].data["item"]["arguments"], "");

  // The application runs it and sends the output back.
  const OJson next = respond_ok(s, {{"previous_response_id", r["id"]},
                                    {"input", {{{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "21 C"}}}},
                                    {"tools", {kWeatherTool}}, {"max_output_tokens", 8}});
  EXPECT_GT(next["usage"]["input_tokens"].get<int64_t>(), r["usage"]["input_tokens"].get<int64_t>());
  const HttpReply unmatched = respond(s, {{"previous_response_id", r["id"]},
                                          {"input", {{{"type", "function_call_output"}, {"call_id", "call_other"}, {"output", "1"}}}}});
  EXPECT_EQ(unmatched.status, 400) << unmatched.body;
  EXPECT_EQ(unmatched.json()["error"]["param"], "input[0].call_id");

  // The same conversation given whole, without the store.
  const OJson whole = respond_ok(s, {{"input",
                                      {{{"role", "user"}, {"content", "Weather in Paris?"}},
                                       {{"type", "function_call"}, {"call_id", "c1"}, {"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}},
                                       {{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "21 C"}}}},
                                     {"store", false}, {"max_output_tokens", 4}});
  EXPECT_GT(whole["usage"]["input_tokens"].get<int64_t>(), 0);
}

TEST(ResponsesApi, AJsonSchemaFormatConstrainsTheText) {
  TestServer s(demo_model_dir());
  const OJson schema = {{"type", "object"},
                        {"properties", {{"n", {{"type", "integer"}}}}},
                        {"required", {"n"}},
                        {"additionalProperties", false}};
  const OJson r = respond_ok(s, {{"input", "A number"},
                                 {"text", {{"format", {{"type", "json_schema"}, {"name", "num"}, {"schema", schema}, {"strict", true}}}}},
                                 {"max_output_tokens", 200}, {"seed", 4}});
  ASSERT_EQ(r["status"], "completed") << r.dump();
  EXPECT_EQ(r["text"]["format"]["type"], "json_schema");
  const OJson value = OJson::parse(output_text(r));
  ASSERT_TRUE(value.is_object()) << output_text(r);
  EXPECT_TRUE(value["n"].is_number_integer()) << output_text(r);
  EXPECT_EQ(value.size(), 1u);
}

TEST(ResponsesApi, BadInputIsRefusedNamingTheParameter) {
  TestServer s(demo_model_dir());
  struct Case {
    OJson body;
    int status;
    std::string param;
  };
  const std::vector<Case> cases = {
      {OJson::object(), 400, "input"},
      {{{"input", 42}}, 400, "input"},
      {{{"input", OJson::array()}}, 400, "input"},
      {{{"input", {{{"type", "image_generation_call"}}}}}, 400, "input[0].type"},
      {{{"input", {{{"role", "robot"}, {"content", "x"}}}}}, 400, "input[0].role"},
      {{{"input", {{{"role", "user"}}}}}, 400, "input[0].content"},
      {{{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "x"}}}}}}}}, 400,
       "input[0].content[0].type"},
      {{{"input", {{{"type", "function_call_output"}, {"call_id", "call_x"}, {"output", "1"}}}}}, 400, "input[0].call_id"},
      {{{"input", {{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "[1]"}}}}}, 400,
       "input[0].arguments"},
      {{{"input", {{{"type", "function_call"}, {"call_id", "c"}, {"arguments", "{}"}}}}}, 400, "input[0].name"},
      {{{"input", {{{"type", "item_reference"}, {"id", "msg_nope"}}}}}, 400, "input[0].id"},
      {{{"input", "hi"}, {"tools", {{{"type", "web_search"}}}}}, 400, "tools[0].type"},
      {{{"input", "hi"}, {"tools", {{{"type", "function"}}}}}, 400, "tools[0].name"},
      {{{"input", "hi"}, {"tools", {kWeatherTool}}, {"tool_choice", {{"type", "function"}, {"name", "nope"}}}}, 400,
       "tool_choice"},
      {{{"input", "hi"}, {"tool_choice", {{"type", "web_search_preview"}}}}, 400, "tool_choice"},
      {{{"input", "hi"},
        {"tools", {{{"type", "function"}, {"name", "f"},
                    {"parameters", {{"type", "object"}, {"properties", {{"x", {{"type", "string"}, {"contentEncoding", "base64"}}}}}}}}}},
        {"tool_choice", "required"}},
       400, "tools[0].parameters"},
      {{{"input", "hi"}, {"tools", {{{"type", "web_search"}}}}, {"include", {"web_search_call.action.sources"}}}, 400,
       "tools[0].type"},
      {{{"input", std::string(4000, 'a') + " b c d e f g h i j k l m n o p q r s t u v w x y z"}}, 400, "input"},
      {{{"input", "hi"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}}}}}}, 400, "text.format.schema"},
      {{{"input", "hi"}, {"text", {{"format", {{"type", "xml"}}}}}}, 400, "text.format.type"},
      {{{"input", "hi"}, {"max_output_tokens", 0}}, 400, "max_output_tokens"},
      {{{"input", "hi"}, {"temperature", 3}}, 400, "temperature"},
      {{{"input", "hi"}, {"background", true}}, 400, "background"},
      {{{"input", "hi"}, {"include", {"file_search_call.results"}}}, 400, "include[0]"},
      {{{"input", "hi"}, {"previous_response_id", "resp_nope"}}, 404, "previous_response_id"},
      {{{"input", "hi"}, {"model", "other"}}, 404, "model"},
  };
  for (const Case& c : cases) {
    const HttpReply r = respond(s, c.body);
    EXPECT_EQ(r.status, c.status) << c.body.dump() << " -> " << r.body;
    if (r.status == c.status) {
      EXPECT_EQ(r.json()["error"]["param"], c.param) << c.body.dump() << " -> " << r.body;
    }
  }
  EXPECT_EQ(glass::test::get(s, "/v1/responses/resp_nope").status, 404);
  EXPECT_EQ(glass::test::send(s, "DELETE", "/v1/responses/resp_nope", {}).status, 404);
  EXPECT_EQ(glass::test::get(s, "/v1/responses/resp_nope/input_items").status, 404);
}

TEST(ResponsesApi, TruncatedDeepAndOversizedBodiesAreRefused) {
  TestServer s(demo_model_dir());
  HttpReply r = post_json(s, "/v1/responses", R"({"input": [{"role": "user", "content": "Hi")");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "invalid_json");
  // Nesting past the bound, inside an input item where the parser looks.
  const std::string deep = R"({"input": [{"role": "user", "content": )" + std::string(200, '[') + std::string(200, ']') + "}]}";
  r = post_json(s, "/v1/responses", deep);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "nested_too_deeply");
  // Deep but within the bound, in a function call's arguments (a JSON text in a string).
  const std::string args = std::string(100, '[') + std::string(100, ']');
  r = respond(s, {{"input", {{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", args}}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["param"], "input[0].arguments");
  r = post_json(s, "/v1/responses", R"({"input": ")" + std::string(size_t{2} << 20, 'a') + R"("})");
  EXPECT_EQ(r.status, 413) << r.body.substr(0, 200);
  // A lying item: an id that claims to be a stored message.
  r = respond(s, {{"input", {{{"type", "item_reference"}, {"id", "msg_" + std::string(29, 'A')}}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["param"], "input[0].id");
}

// A Qwen3-shaped model that thinks: "<think>Hmm maybe</think>\n\nHi<|im_end|>" after the
// generation prompt.
constexpr int32_t kNewline = 198, kTwoNewlines = 271, kThink = 151667, kEndThink = 151668, kImEnd = 151645;
constexpr int32_t kHmm = 80022, kMaybe = 7196, kHi = 13048;

TEST(ResponsesApi, ReasoningIsAnItemBeforeTheMessage) {
  TempDir dir;
  glass::test::write_successor_model(dir.path(),
                                     {{kNewline, kThink}, {kThink, kHmm}, {kHmm, kMaybe}, {kMaybe, kEndThink},
                                      {kEndThink, kTwoNewlines}, {kTwoNewlines, kHi}, {kHi, kImEnd}},
                                     qwen3_tokenizer_dir());
  TestServer s(dir.path());
  const OJson r = respond_ok(s, {{"input", "Hi"}});
  ASSERT_EQ(r["output"].size(), 2u) << r.dump();
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_TRUE(r["output"][0]["id"].get<std::string>().starts_with("rs_"));
  EXPECT_EQ(r["output"][0]["content"], (OJson::array({{{"type", "reasoning_text"}, {"text", "Hmm maybe"}}})));
  EXPECT_EQ(output_text(r), "Hi");
  EXPECT_GT(r["usage"]["output_tokens_details"]["reasoning_tokens"].get<int64_t>(), 0);

  const std::vector<Event> events = stream(s, {{"input", "Hi"}});
  std::string reasoning, text;
  size_t last_reasoning = 0, first_text = events.size();
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].name == "response.reasoning_text.delta") {
      reasoning += events[i].data["delta"].get<std::string>();
      last_reasoning = i;
    }
    if (events[i].name == "response.output_text.delta") {
      text += events[i].data["delta"].get<std::string>();
      first_text = std::min(first_text, i);
    }
  }
  EXPECT_EQ(reasoning, "Hmm maybe");
  EXPECT_EQ(text, "Hi");
  EXPECT_LT(last_reasoning, first_text);
  const OJson& streamed = events.back().data["response"];
  ASSERT_EQ(streamed["output"].size(), 2u) << streamed.dump();
  EXPECT_EQ(streamed["output"][0]["content"], r["output"][0]["content"]);
  EXPECT_EQ(output_text(streamed), "Hi");

  // The conversation goes on; the template leaves the earlier turn's thinking out.
  const OJson next = respond_ok(s, {{"input", "Again"}, {"previous_response_id", r["id"]}});
  EXPECT_EQ(next["status"], "completed");
}

}  // namespace
}  // namespace glass::server::test
