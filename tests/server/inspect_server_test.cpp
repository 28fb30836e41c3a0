// POST /inspect, GET /props and the web UI's files: an inspected step agrees with what the
// generation streamed (its log probabilities, its chosen token surviving every processor),
// the lens and attention have the model's shape, bad input is 400 naming the field, the
// API can be turned off, and the API key guards it but not the page.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "server_harness.h"
#include "support/test_support.h"
#include "webui/web_assets.h"

namespace glass::test {
namespace {

void expect_error(const HttpReply& r, int status, const std::string& param, const std::string& in_message) {
  EXPECT_EQ(r.status, status) << r.body;
  const OJson j = OJson::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  if (param.empty()) {
    EXPECT_TRUE(j["error"]["param"].is_null()) << r.body;
  } else {
    EXPECT_EQ(j["error"]["param"], param) << r.body;
  }
  EXPECT_NE(j["error"]["message"].get<std::string>().find(in_message), std::string::npos) << r.body;
}

constexpr size_t kBlock = KVCache::kDefaultBlockSize;  // the harness's cache

// A generation with the settings `sampling` (a JSON object of chat completion fields),
// with each token's id and log probability.
struct Generated {
  std::vector<int32_t> prompt, ids;
  std::vector<double> logprobs;
  std::vector<std::vector<double>> top_logprobs;
};

Generated generate(const TestServer& s, const OJson& sampling, int max_tokens) {
  OJson body = {{"messages", {{{"role", "user"}, {"content", "Tell me about the sea"}}}},
                {"max_tokens", max_tokens},
                {"logprobs", true},
                {"top_logprobs", 5},
                {"return_token_ids", true}};
  body.update(sampling);
  const HttpReply r = post_json(s, "/v1/chat/completions", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  const OJson j = r.json();
  Generated g;
  g.prompt = j["prompt_token_ids"].get<std::vector<int32_t>>();
  g.ids = j["choices"][0]["token_ids"].get<std::vector<int32_t>>();
  for (const OJson& t : j["choices"][0]["logprobs"]["content"]) {
    g.logprobs.push_back(t["logprob"].get<double>());
    std::vector<double> top;
    for (const OJson& alt : t["top_logprobs"]) top.push_back(alt["logprob"].get<double>());
    g.top_logprobs.push_back(std::move(top));
  }
  EXPECT_EQ(g.logprobs.size(), g.ids.size());
  return g;
}

// The inspection of generated token k.
OJson inspect(const TestServer& s, const Generated& g, size_t k, const OJson& sampling, const OJson& extra = OJson::object()) {
  std::vector<int32_t> context = g.prompt;
  context.insert(context.end(), g.ids.begin(), g.ids.begin() + static_cast<std::ptrdiff_t>(k));
  OJson body = {{"tokens", context}, {"prompt_tokens", g.prompt.size()}, {"token", g.ids[k]}};
  body.update(sampling);
  body.update(extra);
  const HttpReply r = post_json(s, "/inspect", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.json() : OJson::object();
}

TEST(InspectApi, AStepAgreesWithWhatTheGenerationStreamed) {
  TestServer s(demo_model_dir());
  const ModelConfig& c = s.model().config();
  const OJson sampling = {{"temperature", 0.8}, {"top_k", 20},         {"top_p", 0.9},
                          {"seed", 11},         {"repetition_penalty", 1.1}, {"presence_penalty", 0.3}};
  const Generated g = generate(s, sampling, 10);
  ASSERT_GE(g.ids.size(), 3u);
  OJson inspect_sampling = sampling;
  inspect_sampling.erase("seed");
  for (size_t k = 0; k < g.ids.size(); ++k) {
    SCOPED_TRACE("generated token " + std::to_string(k));
    const OJson j = inspect(s, g, k, inspect_sampling);
    ASSERT_FALSE(j.empty());
    const size_t n = g.prompt.size() + k;
    EXPECT_EQ(j["object"], "inspection");
    EXPECT_EQ(j["position"], n - 1);
    // The generation left its full KV blocks in the prefix cache: all of them before the
    // last token are reused.
    EXPECT_EQ(j["cached_tokens"], (n - 1) / kBlock * kBlock);
    ASSERT_EQ(j["context"].size(), n);
    EXPECT_EQ(j["context"][n - 1]["id"], n - 1 < g.prompt.size() ? g.prompt.back() : g.ids[k - 1]);
    EXPECT_EQ(j["token"]["id"], g.ids[k]);
    EXPECT_EQ(j["token"]["text"], s.tokenizer().decode(std::vector<int32_t>{g.ids[k]}));
    EXPECT_EQ(j["sampling"], "repetition_penalty=1.1 -> presence_penalty=0.3 -> temperature=0.8 -> top_k=20 -> top_p=0.9");

    // The stages in transformers' order, each removing what it removed.
    const OJson& stages = j["stages"];
    std::vector<std::string> names;
    for (const OJson& st : stages) names.push_back(st["name"]);
    EXPECT_EQ(names, (std::vector<std::string>{"logits", "repetition_penalty", "presence_penalty", "temperature", "top_k",
                                               "top_p"}));
    int64_t removed = 0;
    for (const OJson& st : stages) removed += st["removed"].get<int64_t>();
    EXPECT_EQ(c.vocab_size - removed, stages.back()["surviving"].get<int64_t>());
    EXPECT_LE(stages[4]["surviving"].get<int64_t>(), 20);

    // The raw stage is the distribution the stream reported: the chosen token's log
    // probability and the best alternatives.
    const OJson& raw = stages[0];
    ASSERT_TRUE(raw["token"].is_object());
    EXPECT_NEAR(std::log(raw["token"]["prob"].get<double>()), g.logprobs[k], 1e-4);
    ASSERT_GE(raw["top"].size(), g.top_logprobs[k].size());
    for (size_t i = 0; i < g.top_logprobs[k].size(); ++i)
      EXPECT_NEAR(std::log(raw["top"][i]["prob"].get<double>()), g.top_logprobs[k][i], 1e-4) << "alternative " << i;
    ASSERT_EQ(raw["top"].size(), 10u);
    for (size_t i = 1; i < raw["top"].size(); ++i)
      EXPECT_GE(raw["top"][i - 1]["logit"].get<double>(), raw["top"][i]["logit"].get<double>());

    // The token was drawn from the last stage, so it survived every processor.
    for (const OJson& st : stages) {
      ASSERT_TRUE(st["token"]["rank"].is_number()) << st.dump();
      EXPECT_GT(st["token"]["prob"].get<double>(), 0) << st["name"];
      const int64_t rank = st["token"]["rank"];
      if (rank < static_cast<int64_t>(st["top"].size())) {
        EXPECT_EQ(st["top"][rank]["id"], g.ids[k]) << st["name"];
      }
    }
    double total = 0;  // the last stage's survivors carry all the probability
    for (const OJson& t : stages.back()["top"]) total += t["prob"].get<double>();
    if (stages.back()["surviving"].get<int64_t>() <= 10) {
      EXPECT_NEAR(total, 1.0, 1e-5);
    }

    // The lens: every layer, the last one being the model's own prediction.
    ASSERT_TRUE(j["lens"].is_object());
    const OJson& lens = j["lens"]["layers"];
    ASSERT_EQ(lens.size(), static_cast<size_t>(c.num_layers));
    for (int64_t l = 0; l < c.num_layers; ++l) {
      EXPECT_EQ(lens[l]["layer"], l);
      EXPECT_EQ(lens[l]["top"].size(), 10u);
      ASSERT_TRUE(lens[l]["token"].is_object());
    }
    EXPECT_NEAR(lens.back()["token"]["prob"].get<double>(), raw["token"]["prob"].get<double>(), 1e-5);
    EXPECT_EQ(lens.back()["token"]["rank"], raw["token"]["rank"]);
    EXPECT_EQ(lens.back()["top"][0]["id"], raw["top"][0]["id"]);

    // Attention: each head's weights over the context add up to one.
    const OJson& a = j["attention"];
    ASSERT_TRUE(a.is_object());
    EXPECT_EQ(a["layers"], c.num_layers);
    EXPECT_EQ(a["heads"], c.num_heads);
    EXPECT_EQ(a["keys"], n);
    ASSERT_EQ(a["weights"].size(), static_cast<size_t>(c.num_layers));
    for (const OJson& layer : a["weights"]) {
      ASSERT_EQ(layer.size(), static_cast<size_t>(c.num_heads));
      for (const OJson& head : layer) {
        ASSERT_EQ(head.size(), n);
        double sum = 0;
        for (const OJson& w : head) {
          EXPECT_GE(w.get<double>(), 0);
          sum += w.get<double>();
        }
        EXPECT_NEAR(sum, 1.0, 1e-5 * static_cast<double>(n) + 1e-6);
      }
    }
    EXPECT_TRUE(j["experts"].is_null());  // a dense model
  }
  // The inspections' sequences are gone: every block is free or cached, none promised.
  const server::SchedulerStats after = s.stats();
  EXPECT_EQ(after.kv_blocks_free, after.kv_blocks_total);
  EXPECT_EQ(after.kv_blocks_reserved, 0);
}

TEST(InspectApi, WithoutThePrefixCacheTheWholeContextRunsWithTheSameResult) {
  TestServerOptions o;
  o.prefix_cache = false;
  TestServer plain(demo_model_dir(), o);
  TestServer cached(demo_model_dir());
  const OJson sampling = {{"temperature", 0.9}, {"top_k", 30}, {"seed", 3}};
  const Generated g = generate(cached, sampling, 6);
  OJson inspect_sampling = sampling;
  inspect_sampling.erase("seed");
  for (size_t k = 0; k < g.ids.size(); ++k) {
    const OJson a = inspect(plain, g, k, inspect_sampling), b = inspect(cached, g, k, inspect_sampling);
    EXPECT_EQ(a["cached_tokens"], 0);
    EXPECT_GT(b["cached_tokens"].get<int64_t>(), 0);
    EXPECT_EQ(a["stages"].size(), b["stages"].size());
    for (size_t st = 0; st < a["stages"].size(); ++st) {
      EXPECT_EQ(a["stages"][st]["token"]["rank"], b["stages"][st]["token"]["rank"]) << k << " " << st;
      EXPECT_NEAR(a["stages"][st]["token"]["prob"].get<double>(), b["stages"][st]["token"]["prob"].get<double>(), 1e-6);
    }
    EXPECT_NEAR(std::log(a["stages"][0]["token"]["prob"].get<double>()), g.logprobs[k], 1e-4);
  }
}

TEST(InspectApi, GreedyRunsOnlyThePenaltiesAndPicksTheTop) {
  TestServer s(demo_model_dir());
  // Penalties only: the greedy token is the top of the last stage at every step.
  const OJson penalties = {{"temperature", 0}, {"repetition_penalty", 1.3}, {"frequency_penalty", 0.5}};
  const Generated g = generate(s, penalties, 8);
  for (size_t k = 0; k < g.ids.size(); ++k) {
    const OJson j = inspect(s, g, k, penalties, {{"lens", false}, {"attention", false}, {"top", 3}});
    ASSERT_FALSE(j.empty());
    ASSERT_EQ(j["stages"].size(), 3u);
    EXPECT_EQ(j["stages"][1]["name"], "repetition_penalty");
    EXPECT_EQ(j["stages"][2]["name"], "frequency_penalty");
    EXPECT_EQ(j["stages"][2]["top"][0]["id"], g.ids[k]) << k;
    EXPECT_EQ(j["stages"][2]["token"]["rank"], 0);
    EXPECT_EQ(j["stages"][0]["top"].size(), 3u);
    EXPECT_TRUE(j["lens"].is_null());
    EXPECT_TRUE(j["attention"].is_null());
  }
  // Back to an earlier step: its context is a prefix of the last one's.
  const OJson again = inspect(s, g, 2, penalties, {{"lens", false}, {"attention", false}, {"top", 3}});
  EXPECT_EQ(again["cached_tokens"], (g.prompt.size() + 1) / kBlock * kBlock);
  EXPECT_EQ(again["stages"][2]["top"][0]["id"], g.ids[2]);
  // logit_bias is a stage of its own, first: +100 makes its token the top.
  const OJson biased = {{"temperature", 0}, {"logit_bias", {{"100", 100}}}};
  const OJson b = inspect(s, g, 0, biased, {{"lens", false}, {"attention", false}, {"top", 3}});
  ASSERT_EQ(b["stages"].size(), 2u);
  EXPECT_EQ(b["stages"][1]["name"], "logit_bias");
  EXPECT_EQ(b["stages"][1]["setting"], "logit_bias={100:+100}");
  EXPECT_EQ(b["stages"][1]["top"][0]["id"], 100);
  EXPECT_EQ(b["sampling"], "logit_bias={100:+100}");
  // No processors at all: the raw logits only.
  const OJson j = inspect(s, g, 0, {{"temperature", 0}}, {{"attention", false}});
  ASSERT_EQ(j["stages"].size(), 1u);
  EXPECT_EQ(j["sampling"], "(none)");
  EXPECT_EQ(j["stages"][0]["top"][0]["id"], g.ids[0]);
  // Without a token: no standings.
  const HttpReply r = post_json(s, "/inspect", OJson{{"tokens", g.prompt}, {"lens", true}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.json()["token"].is_null());
  EXPECT_TRUE(r.json()["stages"][0]["token"].is_null());
  EXPECT_TRUE(r.json()["lens"]["layers"][0]["token"].is_null());
}

TEST(InspectApi, ChosenExpertsOfAMixtureOfExperts) {
  const std::string dir = fixtures_root() + "/tiny-qwen3-moe";
  if (!std::filesystem::exists(dir + "/config.json")) GTEST_SKIP() << "no fixture at " << dir;
  TestServer s(dir);
  const ModelConfig& c = s.model().config();
  const std::vector<int32_t> ids = s.tokenizer().encode("The quick brown fox", {});
  const HttpReply r = post_json(s, "/inspect", OJson{{"tokens", ids}, {"token", ids[0]}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const OJson e = r.json()["experts"];
  ASSERT_TRUE(e.is_object()) << r.body;
  EXPECT_EQ(e["experts"], c.num_experts);
  ASSERT_EQ(e["layers"].size(), static_cast<size_t>(c.num_layers));
  for (const OJson& layer : e["layers"]) {
    ASSERT_EQ(layer["chosen"].size(), static_cast<size_t>(c.num_experts_per_tok)) << layer.dump();
    double sum = 0;
    for (const OJson& x : layer["chosen"]) {
      EXPECT_GE(x["expert"].get<int>(), 0);
      EXPECT_LT(x["expert"].get<int64_t>(), c.num_experts);
      sum += x["weight"].get<double>();
    }
    if (c.norm_topk_prob) {
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
  }
  const OJson props = get(s, "/props").json();
  EXPECT_EQ(props["architecture"]["experts"], c.num_experts);
  EXPECT_EQ(props["architecture"]["experts_per_token"], c.num_experts_per_tok);
}

TEST(InspectApi, BadInputIsAnErrorNamingTheField) {
  TestServer s(demo_model_dir());
  const std::string vocab = std::to_string(s.tokenizer().vocab_size());
  expect_error(post_json(s, "/inspect", R"({})"), 400, "tokens", "required");
  expect_error(post_json(s, "/inspect", R"({"tokens": []})"), 400, "tokens", "empty");
  expect_error(post_json(s, "/inspect", R"({"tokens": 5})"), 400, "tokens", "an array of token ids");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1, "2"]})"), 400, "tokens[1]", "an integer");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1, -2]})"), 400, "tokens", "not a token id");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1, )" + vocab + "]}"), 400, "tokens", "'tokens[1]' = " + vocab);
  expect_error(post_json(s, "/inspect", R"({"tokens": [1, 2], "prompt_tokens": 3})"), 400, "prompt_tokens", "");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1, 2], "prompt_tokens": -1})"), 400, "prompt_tokens", "");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1], "token": 99999999999})"), 400, "token", "not a token id");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1], "token": 1.5})"), 400, "token", "an integer");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1], "top": 0})"), 400, "top", "");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1], "top": 101})"), 400, "top", "");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1], "temperature": 3})"), 400, "temperature", "");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1], "top_p": 0})"), 400, "top_p", "");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1], "lens": "yes"})"), 400, "lens", "a boolean");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1], "logit_bias": {"x": 1}})"), 400, "logit_bias", "token ids");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1], "logit_bias": {")" + vocab + R"(": 1}})"), 400,
               "logit_bias", "outside the vocabulary");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1], "model": "other"})"), 404, "model", "does not exist");
  expect_error(post_json(s, "/inspect", R"({"tokens": [1])"), 400, "", "");  // truncated
  expect_error(post_json(s, "/inspect", R"([1, 2])"), 400, "", "");
  const HttpReply deep = post_json(s, "/inspect", std::string(10000, '[') + std::string(10000, ']'));
  EXPECT_EQ(deep.status, 400);
  EXPECT_EQ(deep.json()["error"]["code"], "nested_too_deeply");
  // Longer than the context.
  const std::vector<int32_t> long_context(static_cast<size_t>(s.context_length()) + 1, 9707);
  expect_error(post_json(s, "/inspect", OJson{{"tokens", long_context}}.dump()), 400, "tokens", "context");
  // A lying token count: an array of a million ids is over the body limit (1 MiB here).
  std::string huge = R"({"tokens": [)";
  for (int i = 0; i < 300000; ++i) huge += "9707,";
  huge += "9707]}";
  EXPECT_EQ(post_json(s, "/inspect", huge).status, 413);
  // The server still answers.
  EXPECT_EQ(post_json(s, "/inspect", R"({"tokens": [9707]})").status, 200);
}

TEST(InspectApi, RunsBesideGenerationsAndCanBeTurnedOff) {
  {
    TestServer s(demo_model_dir());
    // Inspections queue between the passes of running generations.
    std::vector<std::future<HttpReply>> chats;
    for (int i = 0; i < 3; ++i)
      chats.push_back(std::async(std::launch::async, [&s] {
        return post_json(s, "/v1/chat/completions", chat_body("hello", R"("max_tokens": 20)"));
      }));
    for (int i = 0; i < 3; ++i) EXPECT_EQ(post_json(s, "/inspect", R"({"tokens": [9707, 1879]})").status, 200);
    for (auto& c : chats) EXPECT_EQ(c.get().status, 200);
    const OJson props = get(s, "/props").json();
    EXPECT_EQ(props["model"], "test-model");
    EXPECT_EQ(props["inspect"], true);
    EXPECT_EQ(props["chat_template"], true);
    EXPECT_EQ(props["context_length"], s.context_length());
    EXPECT_EQ(props["architecture"]["layers"], s.model().config().num_layers);
    EXPECT_EQ(props["architecture"]["heads"], s.model().config().num_heads);
    EXPECT_EQ(props["architecture"]["vocab_size"], s.model().config().vocab_size);
    EXPECT_EQ(props["default_generation_settings"]["temperature"], 0.0);  // the harness serves greedy
  }
  TestServerOptions off;
  off.inspect = false;
  TestServer s(demo_model_dir(), off);
  const HttpReply r = post_json(s, "/inspect", R"({"tokens": [9707]})");
  expect_error(r, 404, "", "--no-inspect");
  EXPECT_EQ(r.json()["error"]["code"], "inspect_disabled");
  EXPECT_EQ(get(s, "/props").json()["inspect"], false);
}

TEST(WebPage, ServedFromTheBinaryWithSecurityHeaders) {
  TestServer s(demo_model_dir());
  const HttpReply index = get(s, "/");
  ASSERT_EQ(index.status, 200);
  EXPECT_EQ(index.header("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(index.header("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(index.header("X-Content-Type-Options"), "nosniff");
  EXPECT_NE(index.body.find("/webui/app.js"), std::string::npos);
  ASSERT_FALSE(webui::builtin_assets().empty());
  EXPECT_EQ(webui::builtin_assets().front().name, "index.html");
  EXPECT_EQ(index.body, webui::builtin_assets().front().bytes);
  for (const webui::WebAsset& a : webui::builtin_assets()) {
    const HttpReply r = get(s, "/webui/" + std::string(a.name));
    EXPECT_EQ(r.status, 200) << a.name;
    EXPECT_EQ(r.body, a.bytes) << a.name;
    EXPECT_EQ(r.header("Content-Type"), a.content_type) << a.name;
    EXPECT_FALSE(r.header("Content-Security-Policy").empty()) << a.name;
  }
  EXPECT_EQ(get(s, "/webui/missing.js").status, 404);
  EXPECT_EQ(get(s, "/webui/../CMakeLists.txt").status, 404);
  EXPECT_EQ(get(s, "/webui/%2e%2e%2fCMakeLists.txt").status, 404);
  EXPECT_EQ(get(s, "/index.html").status, 404);

  TestServerOptions no_page;
  no_page.webui = false;
  TestServer plain(demo_model_dir(), no_page);
  EXPECT_EQ(get(plain, "/").status, 404);
  EXPECT_EQ(get(plain, "/webui/app.js").status, 404);
}

TEST(WebPage, TheApiKeyGuardsTheApiButNotThePage) {
  TestServerOptions o;
  o.api_key = "secret";
  TestServer s(demo_model_dir(), o);
  EXPECT_EQ(get(s, "/").status, 200);
  for (const webui::WebAsset& a : webui::builtin_assets()) EXPECT_EQ(get(s, "/webui/" + std::string(a.name)).status, 200);
  EXPECT_EQ(get(s, "/props").status, 401);
  EXPECT_EQ(post_json(s, "/inspect", R"({"tokens": [9707]})").status, 401);
  EXPECT_EQ(send(s, "POST", "/", {}, "{}").status, 401);  // only GET and HEAD of the page are open
  const httplib::Headers key = {{"Authorization", "Bearer secret"}};
  EXPECT_EQ(send(s, "GET", "/props", key).status, 200);
  EXPECT_EQ(send(s, "POST", "/inspect", key, R"({"tokens": [9707]})").status, 200);
  EXPECT_EQ(send(s, "POST", "/inspect", {{"Authorization", "Bearer wrong"}}, R"({"tokens": [9707]})").status, 401);
}

}  // namespace
}  // namespace glass::test
