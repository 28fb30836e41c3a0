#include "server/completion_request.h"

#include <gtest/gtest.h>

#include <set>

#include "server/api_error.h"
#include "server/request_errors.h"

namespace glass::server {
namespace {

using test::error_of;

const char* kMessages = R"("messages": [{"role": "user", "content": "Hi"}])";

std::string chat(const std::string& fields) { return str_cat("{", kMessages, fields.empty() ? "" : ", ", fields, "}"); }

TEST(CompletionRequest, ChatFieldsBecomeOverrides) {
  const CompletionRequest r = parse_completion_request(
      chat(R"("model": "m", "temperature": 0.5, "top_p": 0.9, "top_k": 7, "min_p": 0.1, "repetition_penalty": 1.1,
              "presence_penalty": -1, "frequency_penalty": 2, "seed": 42, "max_tokens": 9, "stop": "END",
              "stream": true, "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 3,
              "user": "ignored", "n": 1)"),
      Endpoint::chat_completions);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.sampling.temperature, 0.5);
  EXPECT_EQ(r.sampling.do_sample, true);
  EXPECT_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.sampling.top_k, 7);
  EXPECT_EQ(r.sampling.min_p, 0.1);
  EXPECT_EQ(r.sampling.repetition_penalty, 1.1);
  EXPECT_EQ(r.sampling.presence_penalty, -1);
  EXPECT_EQ(r.sampling.frequency_penalty, 2);
  EXPECT_EQ(r.sampling.seed, 42u);
  EXPECT_EQ(r.sampling.max_new_tokens, 9);
  EXPECT_EQ(r.sampling.stop_strings, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3u);
}

TEST(CompletionRequest, AbsentAndNullFieldsKeepTheDefaults) {
  const CompletionRequest r = parse_completion_request(chat(R"("temperature": null, "stop": null)"), Endpoint::chat_completions);
  EXPECT_FALSE(r.sampling.temperature);
  EXPECT_FALSE(r.sampling.do_sample);
  EXPECT_FALSE(r.sampling.max_new_tokens);  // chat: up to the context
  EXPECT_FALSE(r.sampling.stop_strings);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.model);
}

TEST(CompletionRequest, TemperatureZeroIsGreedyAndMaxCompletionTokensWins) {
  const auto r = parse_completion_request(chat(R"("temperature": 0, "max_tokens": 5, "max_completion_tokens": 7)"),
                                          Endpoint::chat_completions);
  EXPECT_EQ(r.sampling.do_sample, false);
  EXPECT_EQ(r.sampling.max_new_tokens, 7);
}

TEST(CompletionRequest, MessagesAreNormalized) {
  const auto r = parse_completion_request(
      R"({"messages": [{"role": "developer", "content": "Be brief."},
                       {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                       {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function",
                        "function": {"name": "f", "arguments": "{\"b\": 1, \"a\": [2]}"}}]}]})",
      Endpoint::chat_completions);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  // The arguments string becomes the object the chat templates write with tojson.
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"].dump(), R"({"b":1,"a":[2]})");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["id"], "1");
  EXPECT_EQ(r.messages[2]["content"], "") << "null content is text to the templates";
}

TEST(CompletionRequest, CompletionsPromptForms) {
  auto r = parse_completion_request(R"({"prompt": "Hello"})", Endpoint::completions);
  EXPECT_EQ(r.prompt_text, "Hello");
  EXPECT_EQ(r.sampling.max_new_tokens, 16);  // OpenAI's default for the legacy endpoint
  r = parse_completion_request(R"({"prompt": ["Hello"], "logprobs": 2})", Endpoint::completions);
  EXPECT_EQ(r.prompt_text, "Hello");
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2u);
  r = parse_completion_request(R"({"prompt": [9707, 11], "logprobs": 0})", Endpoint::completions);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{9707, 11}));
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 0u);
  r = parse_completion_request(R"({"prompt": [[1, 2]]})", Endpoint::completions);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2}));
}

TEST(CompletionRequest, MalformedJson) {
  for (const char* body : {"{", "", "{\"messages\": [}", "not json"}) {
    const ApiError e = error_of(body);
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.code(), "invalid_json");
    EXPECT_NE(std::string(e.what()).find("could not parse the JSON"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
  }
  // Where and what, in the project's own words.
  EXPECT_STREQ(error_of("{\"messages\": [}").what(),
               "We could not parse the JSON body of your request: at line 1, column 15: expected a value (an object, "
               "array, string, number, true, false or null), found '}'");
  const ApiError e = error_of("[1, 2]");
  EXPECT_EQ(e.status(), 400);
  EXPECT_NE(std::string(e.what()).find("must be a JSON object"), std::string::npos);
}

TEST(CompletionRequest, WrongTypesNameTheParameter) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("temperature": "hot")", "temperature"},   {R"("top_p": true)", "top_p"},
      {R"("max_tokens": 1.5)", "max_tokens"},       {R"("max_tokens": "8")", "max_tokens"},
      {R"("stop": 5)", "stop"},                     {R"("stop": ["a", 1])", "stop"},
      {R"("seed": "x")", "seed"},                   {R"("stream": "yes")", "stream"},
      {R"("logprobs": 1)", "logprobs"},             {R"("top_logprobs": "2", "logprobs": true)", "top_logprobs"},
      {R"("model": 3)", "model"},                   {R"("stream_options": 1, "stream": true)", "stream_options"},
      {R"("presence_penalty": [])", "presence_penalty"}, {R"("top_k": 2.5)", "top_k"},
      {R"("tools": {})", "tools"},
  };
  for (const auto& [fields, param] : cases) {
    const ApiError e = error_of(chat(fields));
    EXPECT_EQ(e.status(), 400) << fields;
    EXPECT_EQ(e.param(), param) << fields << ": " << e.what();
    EXPECT_EQ(e.type(), "invalid_request_error");
    EXPECT_NE(std::string(e.what()).find(param), std::string::npos) << e.what();
  }
  ApiError e = error_of(R"({"messages": "hi"})");
  EXPECT_EQ(e.param(), "messages");
  e = error_of(R"({"messages": [{"role": "user", "content": 5}]})");
  EXPECT_EQ(e.param(), "messages[0].content");
  e = error_of(R"({"messages": [{"role": "robot", "content": "x"}]})");
  EXPECT_EQ(e.param(), "messages[0].role");
  e = error_of(R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})");
  EXPECT_EQ(e.param(), "messages[0].content[0].type");
  e = error_of(R"({"prompt": {"a": 1}})", Endpoint::completions);
  EXPECT_EQ(e.param(), "prompt");
  e = error_of(R"({"prompt": "x", "logprobs": true})", Endpoint::completions);
  EXPECT_EQ(e.param(), "logprobs");
}

TEST(CompletionRequest, OutOfRangeValues) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("temperature": 2.5)", "temperature"},        {R"("temperature": -0.1)", "temperature"},
      {R"("top_p": 0)", "top_p"},                      {R"("top_p": 1.01)", "top_p"},
      {R"("presence_penalty": 3)", "presence_penalty"}, {R"("frequency_penalty": -2.5)", "frequency_penalty"},
      {R"("min_p": 2)", "min_p"},                      {R"("repetition_penalty": 0)", "repetition_penalty"},
      {R"("max_tokens": 0)", "max_tokens"},            {R"("max_completion_tokens": -3)", "max_completion_tokens"},
      {R"("top_k": -2)", "top_k"},                     {R"("seed": -2)", "seed"},
      {R"("top_logprobs": 21, "logprobs": true)", "top_logprobs"}, {R"("top_logprobs": 2)", "top_logprobs"},
      {R"("stop": ["a", "b", "c", "d", "e"])", "stop"}, {R"("stop": "")", "stop"},
      {R"("stream_options": {"include_usage": true})", "stream_options"},
      {R"("n": 0)", "n"},                              {R"("n": 129)", "n"},
      {R"("response_format": {"type": "xml"})", "response_format.type"},
  };
  for (const auto& [fields, param] : cases) {
    const ApiError e = error_of(chat(fields));
    EXPECT_EQ(e.status(), 400) << fields;
    EXPECT_EQ(e.param(), param) << fields << ": " << e.what();
  }
  EXPECT_EQ(error_of(R"({"prompt": "x", "logprobs": 6})", Endpoint::completions).param(), "logprobs");
  EXPECT_EQ(error_of(R"({"prompt": "x", "echo": true})", Endpoint::completions).param(), "echo");
  EXPECT_EQ(error_of(R"({"prompt": "x", "n": 3, "best_of": 2})", Endpoint::completions).param(), "best_of");
  EXPECT_EQ(error_of(R"({"prompt": "x", "best_of": 2, "stream": true})", Endpoint::completions).param(), "best_of");
  EXPECT_EQ(error_of(R"({"prompt": ["a", "b"]})", Endpoint::completions).param(), "prompt");
  EXPECT_EQ(error_of(R"({"prompt": [-1]})", Endpoint::completions).param(), "prompt");
  EXPECT_EQ(error_of(R"({"max_tokens": 3})", Endpoint::completions).param(), "prompt");
  EXPECT_EQ(error_of(R"({"max_tokens": 3})").param(), "messages");
  EXPECT_EQ(error_of(R"({"messages": []})").param(), "messages");
}

TEST(CompletionRequest, LogitBiasIsAnObjectOfTokenIdsToBiases) {
  const CompletionRequest r =
      parse_completion_request(chat(R"("logit_bias": {"151643": -100, "9707": 5.5, "0": 100, "12": -0.25})"),
                               Endpoint::chat_completions);
  // Ascending ids, whatever the object's order.
  const std::vector<TokenBias> expected = {{0, 100.0f}, {12, -0.25f}, {9707, 5.5f}, {151643, -100.0f}};
  EXPECT_EQ(r.sampling.logit_bias, expected);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "x", "logit_bias": {"7": 1}})", Endpoint::completions).sampling.logit_bias,
            (std::vector<TokenBias>{{7, 1.0f}}));
  // An empty object is no bias (it overrides a server default); absent or null leaves the default.
  EXPECT_EQ(parse_completion_request(chat(R"("logit_bias": {})"), Endpoint::chat_completions).sampling.logit_bias,
            std::vector<TokenBias>{});
  EXPECT_FALSE(parse_completion_request(chat(R"("logit_bias": null)"), Endpoint::chat_completions).sampling.logit_bias);
  EXPECT_FALSE(parse_completion_request(chat(""), Endpoint::chat_completions).sampling.logit_bias);
}

TEST(CompletionRequest, LogitBiasRefusesWhatIsNotATokenIdOrABias) {
  const char* cases[] = {
      R"("logit_bias": [1, 2])",                   // not an object
      R"("logit_bias": "5:1")",                    //
      R"("logit_bias": {"-1": 1})",                // negative id
      R"("logit_bias": {"+5": 1})",                // sign
      R"("logit_bias": {" 5": 1})",                // space
      R"("logit_bias": {"5.0": 1})",               // not an integer
      R"("logit_bias": {"0x10": 1})",              // hex
      R"("logit_bias": {"": 1})",                  // empty key
      R"("logit_bias": {"hello": 1})",             // a word, not its id
      R"("logit_bias": {"2147483648": 1})",        // past int32
      R"("logit_bias": {"99999999999999999999": 1})",  // oversized
      R"("logit_bias": {"5": "1"})",               // a string bias
      R"("logit_bias": {"5": true})",              // a boolean
      R"("logit_bias": {"5": null})",              //
      R"("logit_bias": {"5": {"bias": 1}})",       // nested
      R"("logit_bias": {"5": 100.5})",             // out of range
      R"("logit_bias": {"5": -101})",              //
      R"("logit_bias": {"5": 1e400})",             // overflows to infinity
      R"("logit_bias": {"5": 1, "05": 2})",        // the same id twice
  };
  for (const char* fields : cases) {
    const ApiError e = error_of(chat(fields));
    EXPECT_EQ(e.status(), 400) << fields;
    // ("logit_bias.5" for 1e400, which the JSON reader refuses at its path.)
    EXPECT_EQ(e.param().value_or("").rfind("logit_bias", 0), 0u) << fields << ": " << e.what();
  }
  EXPECT_NE(std::string(error_of(chat(R"("logit_bias": {"hello": 1})")).what()).find("\"hello\""), std::string::npos);
  EXPECT_NE(std::string(error_of(chat(R"("logit_bias": {"5": 1, "05": 2})")).what()).find("token id 5 is given twice"),
            std::string::npos);
}

TEST(CompletionRequest, LogitBiasIdsAreCheckedAgainstTheVocabulary) {
  SamplingParams params;
  params.logit_bias = {{3, 1.0f}, {9, -1.0f}};
  EXPECT_NO_THROW(check_logit_bias_vocab(params, 10));
  try {
    check_logit_bias_vocab(params, 9);
    ADD_FAILURE() << "token 9 of a vocabulary of 9 was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "logit_bias");
    EXPECT_NE(std::string(e.what()).find("token id 9 is outside the vocabulary of 9"), std::string::npos) << e.what();
  }
}

TEST(CompletionRequest, ErrorBodyIsOpenAIShaped) {
  const ApiError e = error_of(chat(R"("temperature": "hot")"));
  const auto body = e.body();
  ASSERT_TRUE(body.contains("error"));
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "temperature");
  EXPECT_EQ(body["error"]["code"], "invalid_type");
  EXPECT_TRUE(body["error"]["message"].is_string());
  const ApiError plain(503, "busy", "server_error");
  EXPECT_TRUE(plain.body()["error"]["param"].is_null());
  EXPECT_TRUE(plain.body()["error"]["code"].is_null());
}

TEST(CompletionRequest, ResolveSamplingOverridesTheDefaults) {
  SamplingParams defaults;
  defaults.do_sample = true;
  defaults.temperature = 0.7;
  defaults.top_k = 20;
  defaults.eos_token_ids = {151645};
  auto r = parse_completion_request(chat(R"("top_k": -1, "seed": 3)"), Endpoint::chat_completions);
  SamplingParams p = resolve_sampling(defaults, r);
  EXPECT_TRUE(p.sampling());
  EXPECT_EQ(p.temperature, 0.7);
  EXPECT_EQ(p.top_k, 0);
  EXPECT_EQ(p.seed, 3u);
  EXPECT_EQ(p.eos_token_ids, std::vector<int32_t>{151645});
  // -1: a random seed (llama.cpp's server), which also wins over the server's own seed.
  defaults.seed = 3;
  std::set<uint64_t> seeds;
  for (int i = 0; i < 4; ++i)
    seeds.insert(resolve_sampling(defaults, parse_completion_request(chat(R"("seed": -1)"), Endpoint::chat_completions))
                     .seed.value());
  EXPECT_EQ(seeds.size(), 4u);
  EXPECT_FALSE(seeds.contains(3));
  defaults.seed.reset();
  r = parse_completion_request(chat(R"("temperature": 0, "ignore_eos": true)"), Endpoint::chat_completions);
  p = resolve_sampling(defaults, r);
  EXPECT_FALSE(p.sampling());
  EXPECT_TRUE(p.eos_token_ids.empty());
}

TEST(CompletionRequest, ChatTemplateKwargsAreAnObjectOfVariables) {
  const CompletionRequest r =
      parse_completion_request(chat(R"("chat_template_kwargs": {"enable_thinking": false, "x": [1]})"), Endpoint::chat_completions);
  EXPECT_EQ(r.chat_template_kwargs, jinja::OrderedJson({{"enable_thinking", false}, {"x", {1}}}));
  EXPECT_TRUE(parse_completion_request(chat(R"("chat_template_kwargs": null)"), Endpoint::chat_completions)
                  .chat_template_kwargs.empty());
  ApiError e = error_of(chat(R"("chat_template_kwargs": "enable_thinking=false")"));
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "chat_template_kwargs");
  EXPECT_NE(std::string(e.what()).find("must be an object, got a string"), std::string::npos) << e.what();
  e = error_of(chat(R"("chat_template_kwargs": {"tools": []})"));
  EXPECT_EQ(e.param(), "chat_template_kwargs");
  EXPECT_NE(std::string(e.what()).find("\"tools\""), std::string::npos) << e.what();
}

}  // namespace
}  // namespace glass::server
