// The server's prefix cache: a request that shares a long prefix with an earlier one
// computes only what is new and returns exactly the tokens of a cold run; a client that
// leaves while its blocks are shared takes only its own references with it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "base/error.h"
#include "server_harness.h"
#include "support/test_support.h"

namespace glass::test {
namespace {

// About 1,100 tokens of system prompt: the same for every request below.
std::string long_system_prompt() {
  std::string s = "You are the assistant of a library. Rules follow.";
  for (int i = 0; i < 110; ++i) s += str_cat(" Rule ", i, ": answer in at most ", i + 3, " words.");
  return s;
}

std::string chat_with_system(const std::string& user, const std::string& fields) {
  const OJson body = {{"messages", {{{"role", "system"}, {"content", long_system_prompt()}}, {{"role", "user"}, {"content", user}}}}};
  std::string text = body.dump();
  text.pop_back();  // the closing brace: the fields go in before it
  return text + ", " + fields + "}";
}

const std::string kFields = R"("max_tokens": 12, "ignore_eos": true, "temperature": 0.9, "seed": 5, "return_token_ids": true)";

TEST(PrefixCacheServer, ASharedPrefixIsNotComputedAgainAndGivesTheColdTokens) {
  TestServer warm(demo_model_dir(), {.parallel = 2, .context = 2048});
  TestServer cold(demo_model_dir(), {.parallel = 2, .context = 2048, .prefix_cache = false});

  const OJson first = post_json(warm, "/v1/chat/completions", chat_with_system("Who are you?", kFields)).json();
  ASSERT_TRUE(first.contains("usage")) << first.dump();
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const int64_t prompt_tokens = first["usage"]["prompt_tokens"];
  ASSERT_GT(prompt_tokens, 1000);

  for (const char* question : {"What time is it?", "Name three rivers."}) {
    const HttpReply r = post_json(warm, "/v1/chat/completions", chat_with_system(question, kFields));
    ASSERT_EQ(r.status, 200) << r.body;
    const OJson j = r.json();
    const int64_t prompt = j["usage"]["prompt_tokens"];
    const int64_t cached = j["usage"]["prompt_tokens_details"]["cached_tokens"];
    // Everything up to the last full block before the question is reused.
    EXPECT_GE(cached, 1000);
    EXPECT_EQ(cached % 16, 0);
    EXPECT_LT(prompt - cached, 40) << "only the question and the block it starts in are computed";

    const OJson c = post_json(cold, "/v1/chat/completions", chat_with_system(question, kFields)).json();
    EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    EXPECT_EQ(j["choices"][0]["token_ids"], c["choices"][0]["token_ids"]) << question;
    EXPECT_EQ(j["choices"][0]["message"]["content"], c["choices"][0]["message"]["content"]);
  }
  const HttpReply h = get(warm, "/health");
  const OJson health = h.json();
  EXPECT_GT(health["prefix_cache_hits"].get<int64_t>(), 2000);
  EXPECT_GT(health["prefix_cache_queries"].get<int64_t>(), 3 * 1000);
  EXPECT_GT(health["kv_blocks_cached"].get<int64_t>(), 60) << "the blocks stay cached after the requests end";
  EXPECT_EQ(health["kv_blocks_free"], health["kv_blocks_total"]) << "and are free to be evicted";
  EXPECT_EQ(get(cold, "/health").json()["kv_blocks_cached"], 0);
}

TEST(PrefixCacheServer, AClientThatLeavesFreesOnlyItsOwnReferences) {
  TestServer s(demo_model_dir(), {.parallel = 4, .context = 2048});
  TestServer cold(demo_model_dir(), {.parallel = 4, .context = 2048, .prefix_cache = false});
  const std::string long_fields = R"("max_tokens": 900, "ignore_eos": true, "seed": 3, "temperature": 0.7, "stream": true)";
  // A publishes the system prompt's blocks and keeps generating; B attaches them, then leaves.
  RawConnection a(s.port());
  a.post("/v1/chat/completions", chat_with_system("Tell a long story.", long_fields));
  a.read_until(kTokenChunk, 20000);
  {
    RawConnection b(s.port());
    b.post("/v1/chat/completions", chat_with_system("Another long story.", long_fields));
    b.read_until(kTokenChunk, 20000);
    EXPECT_EQ(s.stats().running, 2u);
  }
  wait_for([&] { return s.stats().running == 1; });
  EXPECT_EQ(s.stats().cancelled, 1);
  const std::string rest = a.read_until("[DONE]", 60000);
  ASSERT_NE(rest.find("[DONE]"), std::string::npos) << rest;

  // A's reply is the cold run's.
  std::string text;
  for (const std::string& d : sse_data(rest.substr(rest.find("\r\n\r\n") + 4)))
    if (d != "[DONE]") {
      const OJson c = OJson::parse(d, nullptr, false);
      if (c.is_object() && !c["choices"].empty() && c["choices"][0]["delta"].contains("content"))
        text += c["choices"][0]["delta"]["content"].get<std::string>();
    }
  const std::string whole_fields = R"("max_tokens": 900, "ignore_eos": true, "seed": 3, "temperature": 0.7)";
  const OJson reference = post_json(cold, "/v1/chat/completions", chat_with_system("Tell a long story.", whole_fields)).json();
  EXPECT_EQ(text, reference["choices"][0]["message"]["content"]);

  wait_for([&] { return s.stats().running == 0; });
  const server::SchedulerStats st = s.stats();
  EXPECT_EQ(st.kv_blocks_free, st.kv_blocks_total);
  EXPECT_EQ(st.kv_blocks_reserved, 0);
  EXPECT_GT(st.kv_blocks_cached, 60);
  // And the cached prefix still serves.
  const OJson again = post_json(s, "/v1/chat/completions", chat_with_system("Short one.", kFields)).json();
  EXPECT_GE(again["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 1000);
}


TEST(PrefixCacheServer, ManyInterleavedRequestsUnderASmallBudgetGetTheColdTokens) {
  // 40 blocks for 6 requests at a time of up to 15 blocks each: prefixes are shared,
  // evicted and computed again all through; a block in use must never be evicted.
  TestServer s(demo_model_dir(), {.parallel = 6, .context = 240, .kv_tokens = 40 * 16});
  std::mt19937 rng(77);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<std::vector<int32_t>> systems(3);
  for (auto& sys : systems)
    for (int j = 0, n = uniform(20, 150); j < n; ++j) sys.push_back(uniform(0, 150000));
  struct Case {
    std::vector<int32_t> prompt;
    int max_tokens = 0;
    int seed = -1;  // -1: greedy
    std::vector<int32_t> got;
  };
  std::vector<Case> cases(24);
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    c.prompt = systems[static_cast<size_t>(uniform(0, 2))];
    for (int j = 0, n = uniform(1, 30); j < n; ++j) c.prompt.push_back(uniform(0, 150000));
    c.max_tokens = uniform(1, 24);
    if (uniform(0, 1) == 1) c.seed = uniform(0, 1000);
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&] {
      for (size_t i; (i = next++) < cases.size();) {
        Case& c = cases[i];
        OJson body = {{"prompt", c.prompt}, {"max_tokens", c.max_tokens}, {"ignore_eos", true}, {"return_token_ids", true}};
        if (c.seed >= 0) {
          body["temperature"] = 0.8;
          body["seed"] = c.seed;
        } else {
          body["temperature"] = 0;
        }
        const HttpReply r = post_json(s, "/v1/completions", body.dump());
        if (r.status == 200) c.got = r.json()["choices"][0]["token_ids"].get<std::vector<int32_t>>();
      }
    });
  for (auto& t : clients) t.join();
  wait_for([&] { return s.stats().running == 0; });
  const server::SchedulerStats st = s.stats();
  EXPECT_GT(st.prefix_cache_hits, 0);
  EXPECT_GT(st.kv_blocks_evicted, 0) << "the budget was small enough to evict";
  std::printf("prefix-cache hits %lld of %lld prompt tokens, %lld blocks evicted\n",
              static_cast<long long>(st.prefix_cache_hits), static_cast<long long>(st.prefix_cache_queries),
              static_cast<long long>(st.kv_blocks_evicted));
  EXPECT_EQ(st.kv_blocks_free, st.kv_blocks_total);
  EXPECT_EQ(st.kv_blocks_reserved, 0);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SamplingParams p;
    p.max_new_tokens = c.max_tokens;
    if (c.seed >= 0) {
      p.do_sample = true;
      p.temperature = 0.8;
      p.seed = static_cast<uint64_t>(c.seed);
    }
    KVCache cold(s.model().config(), KVType::F32, 256, KVCacheOptions{.prefix_cache = false});
    const auto alone = Generator::run_all(s.model(), s.kernels(), cold, s.tokenizer(), s.context_length(), {{c.prompt, p}});
    EXPECT_EQ(c.got, alone[0].tokens) << "request " << i;
  }
}

}  // namespace
}  // namespace glass::test

namespace glass::test {
namespace {

TEST(SchedulerChoices, EachChoiceIsTheSingleRunWithItsSeed) {
  const Tokenizer tokenizer = Tokenizer::load(demo_model_dir());
  const DecoderModel model = DecoderModel::load(demo_model_dir());
  Backend backend("cpu", std::min(2, ThreadPool::hardware_threads()));
  KVCache cache(model.config(), KVType::F32, 4096);
  server::Scheduler scheduler(model, backend.kernels(), cache, tokenizer, 1024, {.max_running = 4});
  std::vector<int32_t> prompt;
  for (int i = 0; i < 50; ++i) prompt.push_back(1000 + 17 * i);
  SamplingParams p = default_sampling();
  p.do_sample = true;
  p.temperature = 1.0;
  p.seed = 42;
  p.max_new_tokens = 16;
  p.eos_token_ids.clear();
  const auto streams = scheduler.submit_choices({.generation = {prompt, p}, .n = 4});
  ASSERT_EQ(streams.size(), 4u);
  std::vector<std::vector<int32_t>> got;
  for (const auto& stream : streams) {
    const server::GenerationStream::Update u = stream->wait_all();
    ASSERT_TRUE(u.finished) << u.error.value_or("");
    EXPECT_EQ(u.finished->seed, 42 + got.size());
    std::vector<int32_t> ids;
    for (const auto& t : u.tokens) ids.push_back(t.token);
    got.push_back(ids);
  }
  for (size_t i = 0; i < 4; ++i) {
    SamplingParams single = p;
    single.seed = 42 + i;
    KVCache alone(model.config(), KVType::F32, 1024, KVCacheOptions{.prefix_cache = false});
    EXPECT_EQ(got[i], Generator::run_all(model, backend.kernels(), alone, tokenizer, 1024, {{prompt, single}})[0].tokens)
        << "choice " << i;
  }
  wait_for([&] { return scheduler.stats().running == 0; });
  EXPECT_EQ(scheduler.stats().completed, 1);
  EXPECT_EQ(scheduler.stats().kv_blocks_reserved, 0);
  // More choices than run at once is refused, naming n.
  const std::string e = thrown_error([&] { scheduler.submit_choices({.generation = {prompt, p}, .n = 5}); });
  EXPECT_NE(e.find("n is 5"), std::string::npos) << e;
}

}  // namespace
}  // namespace glass::test
