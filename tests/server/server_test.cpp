// The server over loopback, in-process: formats, errors, admission, disconnects and
// batch invariance.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "runtime/chat_prompt.h"
#include "runtime/generator.h"
#include "server_harness.h"
#include "support/test_support.h"

namespace glass::test {
namespace {

using namespace std::chrono_literals;

// What the Generator alone gives for this chat (greedy unless `params` says otherwise).
GenerationResult generate_alone(TestServer& s, const std::string& user, SamplingParams params) {
  const auto ids = encode_chat(s.chat_template(), s.tokenizer(), single_turn(user)).ids;
  KVCache cache(s.model().config(), KVType::F32, 1024);
  return Generator::run_all(s.model(), s.kernels(), cache, s.tokenizer(), s.context_length(), {{ids, params}})[0];
}

void expect_healthy(const TestServer& s) {
  const HttpReply h = get(s, "/health");
  ASSERT_EQ(h.status, 200) << "the server should still answer";
  EXPECT_EQ(h.json()["status"], "ok");
}

void expect_error(const HttpReply& r, int status, const std::optional<std::string>& param, const std::string& in_message) {
  EXPECT_EQ(r.status, status) << r.body;
  const OJson j = OJson::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  const OJson& e = j["error"];
  ASSERT_TRUE(e["message"].is_string());
  EXPECT_NE(e["message"].get<std::string>().find(in_message), std::string::npos) << e["message"];
  EXPECT_TRUE(e["type"].is_string());
  EXPECT_TRUE(e.contains("param") && e.contains("code"));
  if (param) {
    EXPECT_EQ(e["param"], *param) << r.body;
  }
}

TEST(Server, HealthModelsAndUnknownRoutes) {
  TestServer s(demo_model_dir());
  expect_healthy(s);
  OJson models = get(s, "/v1/models").json();
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "test-model");
  EXPECT_EQ(models["data"][0]["object"], "model");
  EXPECT_EQ(get(s, "/v1/models/test-model").status, 200);
  expect_error(get(s, "/v1/models/other"), 404, "model", "does not exist");
  expect_error(get(s, "/v2/nothing"), 404, std::nullopt, "/v2/nothing");
  expect_error(post_json(s, "/v1/embeddings", "{}"), 404, std::nullopt, "Unknown route");
  expect_error(post_json(s, "/v1/chat/completions", R"({"model": "other-name", "messages": [{"role": "user", "content": "Hi"}]})"),
               404, "model", "other-name");
  expect_healthy(s);
}

TEST(Server, ChatCompletionIsTheGeneratorsOutput) {
  TestServer s(demo_model_dir());
  const HttpReply r = post_json(s, "/v1/chat/completions", chat_body("Hello there", R"("max_tokens": 12, "return_token_ids": true)"));
  ASSERT_EQ(r.status, 200) << r.body;
  const OJson j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "test-model");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_TRUE(j["created"].is_number_integer());
  ASSERT_EQ(j["choices"].size(), 1u);
  const OJson& choice = j["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_TRUE(choice["logprobs"].is_null());

  SamplingParams p = default_sampling();
  p.max_new_tokens = 12;
  const GenerationResult alone = generate_alone(s, "Hello there", p);
  EXPECT_EQ(choice["message"]["content"], alone.text);
  EXPECT_EQ(choice["token_ids"].get<std::vector<int32_t>>(), alone.tokens);
  EXPECT_EQ(choice["finish_reason"], alone.finish.openai_name());
  EXPECT_EQ(j["usage"]["prompt_tokens"], alone.prompt.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], alone.tokens.size());
  EXPECT_EQ(j["usage"]["total_tokens"], alone.prompt.size() + alone.tokens.size());
  EXPECT_EQ(j["prompt_token_ids"].get<std::vector<int32_t>>(), alone.prompt);
}

TEST(Server, StreamedChatMatchesTheWholeResponse) {
  TestServer s(demo_model_dir());
  const std::string fields = R"("max_tokens": 20, "temperature": 1.0, "seed": 11)";
  const OJson whole = post_json(s, "/v1/chat/completions", chat_body("Tell me", fields)).json();
  const HttpReply r = post_json(s, "/v1/chat/completions",
                                chat_body("Tell me", fields + R"(, "stream": true, "stream_options": {"include_usage": true})"));
  ASSERT_EQ(r.status, 200) << r.body;
  const auto data = sse_data(r.body);
  ASSERT_GE(data.size(), 4u) << r.body;
  EXPECT_EQ(data.back(), "[DONE]");
  const OJson first = OJson::parse(data[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string content;
  std::optional<std::string> finish;
  for (size_t i = 0; i + 2 < data.size(); ++i) {
    const OJson c = OJson::parse(data[i]);
    EXPECT_EQ(c["id"], first["id"]);
    EXPECT_TRUE(c.contains("usage") && c["usage"].is_null()) << "include_usage: usage is null until the last chunk";
    const OJson& choice = c["choices"][0];
    EXPECT_FALSE(finish) << "nothing after the chunk with finish_reason but usage";
    if (choice["delta"].contains("content")) content += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"].get<std::string>();
  }
  EXPECT_EQ(content, whole["choices"][0]["message"]["content"]);
  EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
  const OJson usage = OJson::parse(data[data.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  // The same counts; the streamed request found the whole one's full prompt blocks cached.
  OJson counts = usage["usage"];
  OJson whole_counts = whole["usage"];
  EXPECT_EQ(counts["prompt_tokens_details"]["cached_tokens"], 16);
  EXPECT_EQ(whole_counts["prompt_tokens_details"]["cached_tokens"], 0);
  counts.erase("prompt_tokens_details");
  whole_counts.erase("prompt_tokens_details");
  EXPECT_EQ(counts, whole_counts);

  // Without include_usage: no usage anywhere.
  const HttpReply plain = post_json(s, "/v1/chat/completions", chat_body("Tell me", fields + R"(, "stream": true)"));
  for (const auto& d : sse_data(plain.body))
    if (d != "[DONE]") {
      EXPECT_FALSE(OJson::parse(d).contains("usage")) << d;
    }
}

TEST(Server, CompletionsEndpoint) {
  TestServer s(demo_model_dir());
  HttpReply r = post_json(s, "/v1/completions", R"({"model": "test-model", "prompt": "Once upon a time"})");
  ASSERT_EQ(r.status, 200) << r.body;
  OJson j = r.json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_TRUE(j["choices"][0]["text"].is_string());
  EXPECT_LE(j["usage"]["completion_tokens"], 16);  // the legacy default max_tokens
  EXPECT_EQ(j["usage"]["prompt_tokens"], s.tokenizer().encode("Once upon a time").size());

  // Token-id prompts, and the legacy logprobs format.
  r = post_json(s, "/v1/completions", R"({"prompt": [9707, 11, 1879], "max_tokens": 5, "logprobs": 3, "ignore_eos": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  j = r.json();
  const OJson& lp = j["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 5u);
  ASSERT_EQ(lp["token_logprobs"].size(), 5u);
  ASSERT_EQ(lp["top_logprobs"].size(), 5u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 3u);
  EXPECT_EQ(lp["text_offset"][0], 0);
  for (const auto& x : lp["token_logprobs"]) EXPECT_LE(x.get<double>(), 0.0);

  r = post_json(s, "/v1/completions", R"({"prompt": "Hi", "max_tokens": 4, "stream": true})");
  const auto data = sse_data(r.body);
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data.back(), "[DONE]");
  EXPECT_EQ(OJson::parse(data[0])["object"], "text_completion");
  EXPECT_EQ(OJson::parse(data[data.size() - 2])["choices"][0]["finish_reason"], "length");
}

// logit_bias is the Generator's: +100 forces a token, -100 bans the greedy one; ids past
// the tokenizer are a 400 naming it.
TEST(Server, LogitBiasSteersTheTokensAsTheGeneratorDoes) {
  TestServer s(demo_model_dir());
  SamplingParams greedy;
  greedy.max_new_tokens = 4;
  greedy.eos_token_ids = {};
  const GenerationResult plain = generate_alone(s, "Hi", greedy);
  ASSERT_EQ(plain.tokens.size(), 4u);
  const int32_t first = plain.tokens[0];
  const OJson base = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}, {"temperature", 0},
                      {"ignore_eos", true}, {"return_token_ids", true}};
  OJson body = base;
  body["logit_bias"] = {{std::to_string(first), -100}, {"100", 0.5}};
  HttpReply r = post_json(s, "/v1/chat/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  greedy.logit_bias = {{100, 0.5f}, {first, -100.0f}};
  std::sort(greedy.logit_bias.begin(), greedy.logit_bias.end(), [](auto& a, auto& b) { return a.id < b.id; });
  const GenerationResult biased = generate_alone(s, "Hi", greedy);
  EXPECT_NE(biased.tokens[0], first);
  EXPECT_EQ(r.json()["choices"][0]["token_ids"].get<std::vector<int32_t>>(), biased.tokens) << r.body;

  body = base;
  body["logit_bias"] = {{"100", 100}};
  r = post_json(s, "/v1/chat/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["token_ids"], OJson::parse("[100, 100, 100, 100]")) << r.body;
  r = post_json(s, "/v1/completions", R"({"prompt": [9707], "max_tokens": 2, "logit_bias": {"100": 100}, "return_token_ids": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["token_ids"], OJson::parse("[100, 100]")) << r.body;

  const std::string vocab = std::to_string(s.tokenizer().vocab_size());
  expect_error(post_json(s, "/v1/chat/completions", OJson{{"messages", base["messages"]}, {"logit_bias", {{vocab, 1}}}}.dump()),
               400, "logit_bias", "token id " + vocab + " is outside the vocabulary");
  expect_error(post_json(s, "/v1/completions", R"({"prompt": "x", "logit_bias": {"5": 101}})"), 400, "logit_bias", "between");
  expect_healthy(s);
}

// Logprobs are the model's own log-softmax: the raw logits, whatever the sampling does.
TEST(Server, LogprobsAreTheModelsLogSoftmax) {
  TestServer s(demo_model_dir());
  const HttpReply r = post_json(
      s, "/v1/chat/completions",
      chat_body("Numbers", R"("max_tokens": 3, "logprobs": true, "top_logprobs": 5, "temperature": 1.7, "top_k": 3,
                              "seed": 5, "return_token_ids": true)"));
  ASSERT_EQ(r.status, 200) << r.body;
  const OJson j = r.json();
  const auto prompt = j["prompt_token_ids"].get<std::vector<int32_t>>();
  const auto tokens = j["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  const OJson& content = j["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), tokens.size());
  ASSERT_EQ(tokens.size(), 3u);

  // Logits of every position of prompt + output, in one pass.
  std::vector<int32_t> ids = prompt;
  ids.insert(ids.end(), tokens.begin(), tokens.end() - 1);
  KVCache cache(s.model().config(), KVType::F32, 1024);
  const int32_t seq = cache.add_sequence();
  std::vector<float> logits;
  s.model().forward(Batch::prompt(ids, seq, 0, true), cache, s.kernels(), logits);
  const auto vocab = static_cast<size_t>(s.model().config().vocab_size);
  for (size_t step = 0; step < tokens.size(); ++step) {
    const float* row = logits.data() + (prompt.size() - 1 + step) * vocab;
    double max = row[0], sum = 0;
    for (size_t i = 0; i < vocab; ++i) max = std::max<double>(max, row[i]);
    for (size_t i = 0; i < vocab; ++i) sum += std::exp(row[i] - max);
    auto logprob = [&](int32_t id) { return row[id] - max - std::log(sum); };
    const OJson& entry = content[step];
    EXPECT_NEAR(entry["logprob"].get<double>(), logprob(tokens[step]), 1e-4) << "step " << step;
    const std::string bytes(s.tokenizer().token_bytes(tokens[step]));
    EXPECT_EQ(entry["bytes"].size(), bytes.size());
    // The five best of the raw distribution, best first (the sampled token need not be one).
    std::vector<int32_t> order(vocab);
    for (size_t i = 0; i < vocab; ++i) order[i] = static_cast<int32_t>(i);
    std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                      [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    ASSERT_EQ(entry["top_logprobs"].size(), 5u);
    for (size_t k = 0; k < 5; ++k) {
      const OJson& alt = entry["top_logprobs"][k];
      EXPECT_EQ(alt["token"], OJson(std::string(s.tokenizer().token_bytes(order[k]))).get<std::string>());
      EXPECT_NEAR(alt["logprob"].get<double>(), logprob(order[k]), 1e-4);
    }
  }
}

TEST(Server, StopStringsEndTheTextAndAreNotReturned) {
  TempDir dir;
  write_constant_token_model(dir.path(), 9707);  // always "Hello"
  TestServer s(dir.path());
  HttpReply r = post_json(s, "/v1/chat/completions", chat_body("x", R"("max_tokens": 10, "stop": ["loHel", "zzz"])"));
  ASSERT_EQ(r.status, 200) << r.body;
  OJson j = r.json();
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hel");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);

  r = post_json(s, "/v1/chat/completions", chat_body("x", R"("max_tokens": 10, "stop": "lo", "stream": true)"));
  std::string content;
  for (const auto& d : sse_data(r.body)) {
    if (d == "[DONE]") continue;
    const OJson chunk = OJson::parse(d);
    const OJson& delta = chunk["choices"][0]["delta"];
    if (delta.contains("content")) content += delta["content"].get<std::string>();
  }
  EXPECT_EQ(content, "Hel") << r.body;

  r = post_json(s, "/v1/chat/completions", chat_body("x", R"("max_tokens": 3)"));
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "HelloHelloHello");
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "length");
}

TEST(Server, BadRequestsGetTheirStatusAndTheServerStaysUp) {
  TestServer s(demo_model_dir(), {.context = 64, .max_body_bytes = 4096});
  expect_error(post_json(s, "/v1/chat/completions", R"({"messages": [)"), 400, std::nullopt, "could not parse the JSON");
  expect_healthy(s);
  expect_error(post_json(s, "/v1/chat/completions", chat_body("x", R"("temperature": "hot")")), 400, "temperature",
               "temperature");
  expect_healthy(s);
  expect_error(post_json(s, "/v1/chat/completions", chat_body("x", R"("max_tokens": "many")")), 400, "max_tokens",
               "integer");
  expect_error(post_json(s, "/v1/chat/completions", chat_body("x", R"("top_p": 7)")), 400, "top_p", "between");
  expect_healthy(s);
  const std::string big(8000, 'a');
  expect_error(post_json(s, "/v1/chat/completions", chat_body(big)), 413, std::nullopt, "larger than");
  expect_healthy(s);
  std::string long_prompt;
  for (int i = 0; i < 200; ++i) long_prompt += " word";
  expect_error(post_json(s, "/v1/chat/completions", chat_body(long_prompt)), 400, "messages", "context length");
  EXPECT_EQ(OJson::parse(post_json(s, "/v1/chat/completions", chat_body(long_prompt)).body)["error"]["code"],
            "context_length_exceeded");
  expect_error(post_json(s, "/v1/completions", R"({"prompt": [999999999]})"), 400, "prompt", "vocabulary");
  expect_error(post_json(s, "/v1/completions", R"({"prompt": ""})"), 400, "prompt", "empty");
  expect_healthy(s);
  // And it still generates.
  EXPECT_EQ(post_json(s, "/v1/chat/completions", chat_body("ok", R"("max_tokens": 2)")).status, 200);
  EXPECT_EQ(s.stats().running, 0u);
}

// A request that will not finish soon: no eos, a long budget, streamed to a raw socket.
std::string endless_body(int max_tokens) {
  return chat_body("go", str_cat(R"("max_tokens": )", max_tokens, R"(, "ignore_eos": true, "stream": true)"));
}

TEST(Server, DisconnectMidStreamFreesTheSlot) {
  // One sequence at a time: the next request only runs once the first is gone.
  TestServer s(demo_model_dir(), {.parallel = 1, .queue = 4, .context = 4096});
  {
    RawConnection c(s.port());
    c.post("/v1/chat/completions", endless_body(100000));
    const std::string got = c.read_until(kTokenChunk, 20000);
    ASSERT_NE(got.find("200 OK"), std::string::npos) << got;
    EXPECT_EQ(s.stats().running, 1u);
    c.close();  // mid-stream
  }
  // Without the cancel, this would wait for the first to fill the 4096-token context.
  const auto start = std::chrono::steady_clock::now();
  const HttpReply r = post_json(s, "/v1/chat/completions", chat_body("next", R"("max_tokens": 4)"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  wait_for([&] { return s.stats().running == 0; });
  const server::SchedulerStats st = s.stats();
  EXPECT_EQ(st.cancelled, 1);
  EXPECT_EQ(st.completed, 1);
  EXPECT_EQ(st.running, 0u);
  EXPECT_EQ(st.kv_blocks_free, st.kv_blocks_total) << "every block is back";
  EXPECT_EQ(st.kv_blocks_reserved, 0);
}

TEST(Server, QueuedClientThatLeavesIsDropped) {
  TestServer s(demo_model_dir(), {.parallel = 1, .queue = 4, .context = 4096});
  RawConnection running(s.port());
  running.post("/v1/chat/completions", endless_body(100000));
  running.read_until(kTokenChunk);
  {
    RawConnection queued(s.port());
    queued.post("/v1/chat/completions", endless_body(10));
    queued.read_until("\"role\":\"assistant\"");  // the stream starts before admission
    wait_for([&] { return s.stats().waiting == 1; });
    EXPECT_EQ(s.stats().waiting, 1u);
  }
  // The heartbeat (an SSE comment after 1 s of silence) finds it gone.
  wait_for([&] { return s.stats().waiting == 0; }, 10s);
  EXPECT_EQ(s.stats().waiting, 0u);
  EXPECT_EQ(s.stats().cancelled, 1);
  EXPECT_EQ(s.stats().running, 1u);
}

TEST(Server, FullQueueGets503) {
  TestServer s(demo_model_dir(), {.parallel = 1, .queue = 1, .context = 4096});
  RawConnection running(s.port());
  running.post("/v1/chat/completions", endless_body(100000));
  running.read_until(kTokenChunk);
  RawConnection queued(s.port());
  queued.post("/v1/chat/completions", chat_body("wait", R"("max_tokens": 3, "ignore_eos": true, "stream": true)"));
  wait_for([&] { return s.stats().waiting == 1; });
  ASSERT_EQ(s.stats().waiting, 1u);
  expect_error(post_json(s, "/v1/chat/completions", chat_body("one too many", R"("max_tokens": 3)")), 503, std::nullopt,
               "busy");
  EXPECT_EQ(s.stats().rejected, 1);
  expect_healthy(s);
  running.close();
  // The queued one runs once the first is gone.
  const std::string rest = queued.read_until("[DONE]", 20000);
  EXPECT_NE(rest.find("\"finish_reason\":\"length\""), std::string::npos) << rest;
}

TEST(Server, RequestsWaitForKVSpaceInsteadOfFailing) {
  // Room for one worst case (prompt + 40 tokens) at a time, though 4 could run.
  TestServer s(demo_model_dir(), {.parallel = 4, .context = 256, .kv_tokens = 96});
  std::vector<std::thread> threads;
  std::vector<HttpReply> replies(3);
  for (size_t i = 0; i < replies.size(); ++i)
    threads.emplace_back([&, i] {
      replies[i] = post_json(s, "/v1/chat/completions", chat_body(str_cat("q", i), R"("max_tokens": 40, "ignore_eos": true)"));
    });
  for (auto& t : threads) t.join();
  for (const auto& r : replies) {
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["usage"]["completion_tokens"], 40);
  }
  EXPECT_EQ(s.stats().peak_running, 1u);
  EXPECT_EQ(s.stats().kv_blocks_free, s.stats().kv_blocks_total);
}

// The acceptance test of batch invariance: each of 16 concurrent requests (greedy and
// seeded sampling, different prompts and lengths) gets exactly the tokens it gets alone.
TEST(Server, SixteenConcurrentRequestsGetTheTokensTheyGetAlone) {
  TestServer s(demo_model_dir(), {.parallel = 16, .context = 512});
  std::vector<std::string> bodies;
  for (int i = 0; i < 16; ++i) {
    std::string fields = str_cat(R"("max_tokens": )", 24 + 3 * i, R"(, "return_token_ids": true)");
    if (i % 2 == 1) fields += str_cat(R"(, "temperature": 0.9, "top_p": 0.95, "seed": )", 1000 + i);
    if (i % 4 == 3) fields += R"(, "presence_penalty": 0.5, "frequency_penalty": 0.3)";
    std::string user = str_cat("Request number ", i, ":");
    for (int w = 0; w < i; ++w) user += " more";
    bodies.push_back(chat_body(user, fields));
  }
  std::vector<OJson> alone;
  for (const auto& b : bodies) {
    const HttpReply r = post_json(s, "/v1/chat/completions", b);
    ASSERT_EQ(r.status, 200) << r.body;
    alone.push_back(r.json());
  }
  EXPECT_EQ(s.stats().peak_running, 1u);

  std::vector<HttpReply> together(bodies.size());
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < bodies.size(); ++i)
    threads.emplace_back([&, i] {
      ++ready;
      while (ready < static_cast<int>(bodies.size())) std::this_thread::yield();
      together[i] = post_json(s, "/v1/chat/completions", bodies[i]);
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < bodies.size(); ++i) {
    ASSERT_EQ(together[i].status, 200) << together[i].body;
    const OJson t = together[i].json();
    EXPECT_EQ(t["choices"][0]["token_ids"], alone[i]["choices"][0]["token_ids"]) << "request " << i;
    EXPECT_EQ(t["choices"][0]["message"]["content"], alone[i]["choices"][0]["message"]["content"]) << "request " << i;
    // Equal counts; how much of each prompt was cached depends on who came first.
    for (const char* field : {"prompt_tokens", "completion_tokens", "total_tokens"})
      EXPECT_EQ(t["usage"][field], alone[i]["usage"][field]) << field;
  }
  // They did share passes (how many at once depends on arrival times).
  EXPECT_GE(s.stats().peak_running, 8u);
  std::printf("peak sequences in one pass: %zu\n", s.stats().peak_running);
}

}  // namespace
}  // namespace glass::test
