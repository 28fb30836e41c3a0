// Request bodies an attacker would send (issue 15): JSON nested far deeper than any
// request needs, hundreds of thousands of keys, numbers past a double's range and
// temperatures that round to zero. Each gets a 400 naming the parameter (or a cheap,
// correct parse), never a crash, a 500 or minutes of CPU.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "runtime/chat_prompt.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/request_errors.h"

namespace glass::server {
namespace {

using test::error_of;

// `depth` nested arrays around a 1: "[[[1]]]" for depth 3.
std::string nested_arrays(size_t depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); }
// `depth` nested objects: {"a":{"a":1}} for depth 2.
std::string nested_objects(size_t depth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s += std::string(depth, '}');
  return s;
}

// Issue 15 item 1: 200,000 levels (390 KB, under the body limit) in a message's content
// or name, or in tools[].function, overflowed the stack when the messages were copied.
TEST(RequestBounds, DeeplyNestedJsonIsRefusedBeforeAnythingCopiesIt) {
  const std::string deep = nested_arrays(200000);
  const std::string deep_objects = nested_objects(100000);
  const std::string bodies[] = {
      R"({"messages": [{"role": "user", "content": )" + deep + "}]}",
      R"({"messages": [{"role": "user", "content": "hi", "name": )" + deep_objects + "}]}",
      R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": )" + deep_objects +
          "}]}",
      R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"x": )" + deep + "}}",
  };
  for (const std::string& body : bodies) {
    const ApiError e = error_of(body);
    EXPECT_EQ(e.status(), 400) << body.substr(0, 80);
    EXPECT_NE(std::string(e.what()).find("levels"), std::string::npos) << e.what();
    ASSERT_TRUE(e.param().has_value()) << e.what();
    // The parameter is where the nesting went too deep, named from the top.
    EXPECT_TRUE(e.param()->starts_with("messages[0].") || e.param()->starts_with("tools[0].function") ||
                e.param()->starts_with("chat_template_kwargs.x"))
        << *e.param();
  }
  // The same for /v1/completions.
  EXPECT_EQ(error_of(R"({"prompt": )" + deep + "}", Endpoint::completions).status(), 400);
  // Nesting that a request plausibly has still parses.
  const CompletionRequest ok = parse_completion_request(
      R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": )" +
          nested_objects(30) + "}}]}",
      Endpoint::chat_completions);
  EXPECT_EQ(ok.tools.size(), 1u);
}

// Issue 15 item 4: each key inserted into an ordered JSON object was compared with every
// key before it, so 300,000 distinct keys (4.4 MB) took 180 s of CPU. 100,000 keys
// took about 20 s that way; parsed in linear time they take milliseconds.
TEST(RequestBounds, ManyDistinctKeysParseInLinearTime) {
  std::string keys;
  for (int i = 0; i < 100000; ++i) keys += str_cat("\"k", i, "\": ", i, ", ");
  const std::string top_level = "{" + keys + R"("messages": [{"role": "user", "content": "hi"}]})";
  const std::string in_a_message = R"({"messages": [{)" + keys + R"("role": "user", "content": "hi"}]})";
  const std::string in_kwargs =
      R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {)" + keys + R"("last": 1}})";
  for (const std::string* body : {&top_level, &in_a_message, &in_kwargs}) {
    const auto start = std::chrono::steady_clock::now();
    const CompletionRequest r = parse_completion_request(*body, Endpoint::chat_completions);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 2.0) << "a body of " << body->size() << " bytes";
    EXPECT_EQ(r.messages[0]["content"], "hi");
  }
  const CompletionRequest r = parse_completion_request(in_a_message, Endpoint::chat_completions);
  // Every key, in the order sent.
  ASSERT_EQ(r.messages[0].size(), 100002u);
  auto it = r.messages[0].begin();
  EXPECT_EQ(it.key(), "k0");
  EXPECT_EQ((++it).key(), "k1");
  EXPECT_EQ(r.messages[0]["k99999"], 99999);
}

// A request's chat_template_kwargs go over the server's variable by variable; that merge
// was linear per key too.
TEST(RequestBounds, ManyTemplateVariablesMergeInLinearTime) {
  jinja::OrderedJson overrides = jinja::OrderedJson::object();
  // Appended to the member list (distinct keys by construction), so only the merge is timed.
  auto& members =
      static_cast<jinja::OrderedJson::object_t::Container&>(overrides.get_ref<jinja::OrderedJson::object_t&>());
  for (int i = 0; i < 100000; ++i) members.emplace_back(str_cat("v", i), i);
  members.emplace_back("enable_thinking", true);
  const jinja::OrderedJson defaults = {{"enable_thinking", false}, {"server_only", 1}};
  const auto start = std::chrono::steady_clock::now();
  const jinja::OrderedJson merged = merge_template_vars(defaults, overrides);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  ASSERT_EQ(merged.size(), 100002u);
  auto it = merged.begin();
  EXPECT_EQ(it.key(), "enable_thinking");  // the defaults' order first, the request's value
  EXPECT_EQ(it.value(), true);
  EXPECT_EQ((++it).key(), "server_only");
  EXPECT_EQ((++it).key(), "v0");
  EXPECT_EQ(merged["v99999"], 99999);
}

// What the linear-time parse keeps: keys in the order sent (a tool schema reaches the
// chat template as the client wrote it), and a repeated key keeps its first position
// with the last value, as Python's json.loads does.
TEST(RequestBounds, KeyOrderAndRepeatedKeysAreKept) {
  const CompletionRequest r = parse_completion_request(
      R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function":
            {"name": "f", "parameters": {"type": "object", "properties": {"zeta": {"type": "string"},
             "alpha": {"type": "integer"}, "zeta": {"type": "number"}, "mid": {}}}}}]})",
      Endpoint::chat_completions);
  EXPECT_EQ(r.tools[0]["function"]["parameters"]["properties"].dump(),
            R"({"zeta":{"type":"number"},"alpha":{"type":"integer"},"mid":{}})");
  EXPECT_EQ(r.tools[0].dump(),
            R"({"type":"function","function":{"name":"f","parameters":{"type":"object","properties":)"
            R"({"zeta":{"type":"number"},"alpha":{"type":"integer"},"mid":{}}}}})");
}

// Issue 15 item 5: numbers past a double's range gave HTTP 500 instead of 400.
TEST(RequestBounds, NumbersOutsideADoublesRangeGet400NamingTheParameter) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("temperature": 1e999)", "temperature"},
      {R"("seed": -1e400)", "seed"},
      {R"("top_p": -1e999)", "top_p"},
      {R"("max_tokens": 1e400)", "max_tokens"},
  };
  for (const auto& [fields, param] : cases) {
    const std::string body = std::string(R"({"messages": [{"role": "user", "content": "hi"}], )") + fields + "}";
    const ApiError e = error_of(body);
    EXPECT_EQ(e.status(), 400) << fields;
    EXPECT_EQ(e.param(), param) << fields << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(param), std::string::npos) << e.what();
  }
  const ApiError nested = error_of(R"({"messages": [{"role": "user", "content": "hi", "x": [1, 2e999]}]})");
  EXPECT_EQ(nested.status(), 400);
  EXPECT_EQ(nested.param(), "messages[0].x[1]") << nested.what();
}

// Issue 15 item 5: temperature 1e-300 became 0 as a float and the sampler divided by it.
// Below 1e-5 a temperature means greedy decoding, as vLLM treats it.
TEST(RequestBounds, TemperatureBelowTheSamplingEpsilonIsGreedy) {
  SamplingParams defaults;
  defaults.do_sample = true;
  defaults.temperature = 0.7;
  for (const char* t : {"1e-300", "5e-324", "9.99e-6"}) {
    const CompletionRequest r = parse_completion_request(
        std::string(R"({"messages": [{"role": "user", "content": "hi"}], "temperature": )") + t + "}",
        Endpoint::chat_completions);
    EXPECT_FALSE(resolve_sampling(defaults, r).sampling()) << t;
  }
  const CompletionRequest r = parse_completion_request(
      R"({"messages": [{"role": "user", "content": "hi"}], "temperature": 1e-5})", Endpoint::chat_completions);
  EXPECT_TRUE(resolve_sampling(defaults, r).sampling());
}

}  // namespace
}  // namespace glass::server
