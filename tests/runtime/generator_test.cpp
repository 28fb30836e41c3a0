#include "runtime/generator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "kernels/backend.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::TempDir;

struct Fixture {
  TempDir dir;
  std::unique_ptr<DecoderModel> model;
  std::unique_ptr<Tokenizer> tokenizer;
  explicit Fixture(int32_t constant_token = -1) {
    if (constant_token >= 0) {
      test::write_constant_token_model(dir.path(), constant_token);
    } else {
      ModelConfig c = test::tiny_config();
      c.vocab_size = 151936;  // the Qwen tokenizer's ids must be in range
      test::write_tiny_checkpoint(dir.path(), c);
      for (const char* name : {"tokenizer.json", "tokenizer_config.json"})
        test::write_string(dir.file(name), test::read_string(test::demo_model_dir() + "/" + name));
    }
    model = std::make_unique<DecoderModel>(DecoderModel::load(dir.path()));
    tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(dir.path()));
  }
};

SamplingParams greedy(int64_t n) {
  SamplingParams p;
  p.max_new_tokens = n;
  return p;
}

std::vector<GenerationResult> run(const Fixture& f, Kernels& k, KVType kv, std::vector<GenerationRequest> reqs,
                                  int64_t context = 256) {
  KVCache cache(f.model->config(), kv, 4096);
  return Generator::run_all(*f.model, k, cache, *f.tokenizer, context, std::move(reqs));
}

TEST(Generator, BatchedGreedyEqualsOneAtATime) {
  Fixture f;
  const std::vector<std::vector<int32_t>> prompts = {{9707}, {9707, 11, 1879, 0, 5}, {100, 200, 300}, {42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52}};
  for (const char* backend_name : {"cpu", "reference"}) {
    Backend backend(backend_name, 2);
    for (KVType kv : {KVType::F32, KVType::F16}) {
      std::vector<GenerationRequest> batch;
      for (const auto& p : prompts) batch.push_back({p, greedy(12)});
      const auto together = run(f, backend.kernels(), kv, batch);
      ASSERT_EQ(together.size(), prompts.size());
      for (size_t i = 0; i < prompts.size(); ++i) {
        const auto alone = run(f, backend.kernels(), kv, {{prompts[i], greedy(12)}});
        EXPECT_EQ(together[i].tokens, alone[0].tokens) << backend_name << " " << kv_type_name(kv) << " prompt " << i;
        EXPECT_EQ(together[i].text, alone[0].text);
        EXPECT_EQ(together[i].tokens.size(), 12u);
        EXPECT_EQ(together[i].finish.kind, FinishReason::Kind::length);
      }
    }
  }
}

TEST(Generator, ChunkedPrefillEqualsOnePass) {
  Fixture f;
  Backend backend("cpu", 2);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(1000 + 37 * i);
  KVCache cache(f.model->config(), KVType::F32, 1024);
  Generator chunked(*f.model, backend.kernels(), cache, *f.tokenizer, 256, 7);
  const int h = chunked.add({prompt, greedy(8)});
  int passes = 0;
  while (!chunked.idle()) {
    chunked.step({});
    ++passes;
  }
  EXPECT_EQ(passes, 6 + 7);  // ceil(40 / 7) prefill passes (the last yields token 1), then 7 decode passes
  const auto r = chunked.take_result(h);
  ASSERT_TRUE(r);
  const auto whole = run(f, backend.kernels(), KVType::F32, {{prompt, greedy(8)}});
  EXPECT_EQ(r->tokens, whole[0].tokens);
}

TEST(Generator, StopsOnEosWithItsToken) {
  Fixture f(151645);  // always <|im_end|>
  Backend backend("cpu", 1);
  SamplingParams p = greedy(10);
  p.eos_token_ids = {151645, 151643};
  const auto r = run(f, backend.kernels(), KVType::F32, {{{9707}, p}});
  EXPECT_EQ(r[0].finish.kind, FinishReason::Kind::eos);
  EXPECT_EQ(r[0].finish.token, 151645);
  EXPECT_EQ(r[0].finish.name(), "eos");
  EXPECT_EQ(r[0].tokens, (std::vector<int32_t>{151645}));
  EXPECT_EQ(r[0].text, "");  // the eos token is not printed
}

TEST(Generator, StopStringAcrossTwoTokensIsNotPrinted) {
  Fixture f(9707);  // always "Hello"
  Backend backend("cpu", 1);
  SamplingParams p = greedy(10);
  p.stop_strings = {"loHel"};  // the end of one "Hello" and the start of the next
  std::string streamed;
  KVCache cache(f.model->config(), KVType::F32, 256);
  const auto r = Generator::run_all(*f.model, backend.kernels(), cache, *f.tokenizer, 256, {{{9707}, p}},
                                    [&](const GenerationEvent& e) { streamed += e.text; });
  EXPECT_EQ(r[0].finish.kind, FinishReason::Kind::stop_string);
  EXPECT_EQ(r[0].finish.stop_string, "loHel");
  EXPECT_EQ(r[0].text, "Hel");
  EXPECT_EQ(streamed, "Hel");
  EXPECT_EQ(r[0].tokens.size(), 2u);
}

TEST(Generator, LengthAndContextLimits) {
  Fixture f(9707);
  Backend backend("cpu", 1);
  auto r = run(f, backend.kernels(), KVType::F32, {{{9707, 9707}, greedy(3)}});
  EXPECT_EQ(r[0].finish.kind, FinishReason::Kind::length);
  EXPECT_EQ(r[0].text, "HelloHelloHello");
  SamplingParams unlimited;
  r = run(f, backend.kernels(), KVType::F32, {{{9707, 9707}, unlimited}}, 6);
  EXPECT_EQ(r[0].finish.kind, FinishReason::Kind::context);
  EXPECT_EQ(r[0].tokens.size(), 4u);  // 2 prompt + 4 generated fill a context of 6
  r = run(f, backend.kernels(), KVType::F32, {{{9707}, greedy(0)}});
  EXPECT_EQ(r[0].finish.kind, FinishReason::Kind::length);
  EXPECT_TRUE(r[0].tokens.empty());
}

TEST(Generator, SeededSamplingIsReproducible) {
  Fixture f;
  Backend backend("cpu", 2);
  SamplingParams p;
  p.do_sample = true;
  p.temperature = 1.5;
  p.top_k = 0;
  p.max_new_tokens = 16;
  p.seed = 1234;
  const auto a = run(f, backend.kernels(), KVType::F32, {{{1, 2, 3}, p}});
  const auto b = run(f, backend.kernels(), KVType::F32, {{{1, 2, 3}, p}});
  EXPECT_EQ(a[0].tokens, b[0].tokens);
  EXPECT_EQ(a[0].seed, 1234u);
  p.seed = 99;
  const auto c = run(f, backend.kernels(), KVType::F32, {{{1, 2, 3}, p}});
  EXPECT_NE(a[0].tokens, c[0].tokens);
  // Beside other sequences, the same seed gives the same tokens.
  p.seed = 1234;
  SamplingParams other = p;
  other.seed = 5;
  const auto batched = run(f, backend.kernels(), KVType::F32, {{{7, 8}, other}, {{1, 2, 3}, p}, {{9}, other}});
  EXPECT_EQ(batched[1].tokens, a[0].tokens);
}

TEST(Generator, CandidatesShowWhatTheProcessorsDid) {
  Fixture f;
  Backend backend("cpu", 1);
  SamplingParams p;
  p.do_sample = true;
  p.temperature = 0.7;
  p.top_k = 5;
  p.max_new_tokens = 3;
  p.seed = 1;
  KVCache cache(f.model->config(), KVType::F32, 256);
  int events = 0;
  Generator::run_all(*f.model, backend.kernels(), cache, *f.tokenizer, 256, {{{1, 2}, p, 8}}, [&](const GenerationEvent& e) {
    ++events;
    ASSERT_EQ(e.candidates.size(), 8u);
    float total_after = 0;
    for (size_t i = 0; i < e.candidates.size(); ++i) {
      if (i > 0) {
        EXPECT_GE(e.candidates[i - 1].prob_before, e.candidates[i].prob_before);
      }
      if (i >= 5) {
        EXPECT_EQ(e.candidates[i].prob_after, 0.0f) << "top_k=5 removed it";
      }
      total_after += e.candidates[i].prob_after;
    }
    EXPECT_NEAR(total_after, 1.0f, 1e-5);
    EXPECT_GT(e.chosen.prob_after, 0.0f);
    // The log-probabilities are those of the model's own distribution.
    for (const Candidate& c : e.candidates) EXPECT_NEAR(c.logprob_before, std::log(c.prob_before), 1e-4);
    EXPECT_NEAR(e.chosen.logprob_before, std::log(e.chosen.prob_before), 1e-4);
    ASSERT_NE(e.trace, nullptr);
    ASSERT_EQ(e.trace->steps.size(), 2u);  // temperature, top_k
    EXPECT_EQ(e.trace->steps[1].surviving, 5);
  });
  EXPECT_EQ(events, 3);
}

TEST(Generator, CancelFreesTheCache) {
  Fixture f;
  Backend backend("cpu", 1);
  KVCache cache(f.model->config(), KVType::F32, 64, 16);
  Generator g(*f.model, backend.kernels(), cache, *f.tokenizer, 64);
  const int h = g.add({std::vector<int32_t>(30, 5), greedy(20)});
  g.step({});
  EXPECT_LT(cache.free_blocks(), cache.total_blocks());
  g.cancel(h);
  EXPECT_EQ(cache.free_blocks(), cache.total_blocks());
  EXPECT_TRUE(g.idle());
}

TEST(Generator, RejectsBadRequests) {
  Fixture f;
  Backend backend("cpu", 1);
  KVCache cache(f.model->config(), KVType::F32, 64);
  Generator g(*f.model, backend.kernels(), cache, *f.tokenizer, 16);
  std::string e = test::thrown_error([&] { g.add({{}, greedy(1)}); });
  EXPECT_NE(e.find("prompt is empty"), std::string::npos) << e;
  e = test::thrown_error([&] { g.add({{200000}, greedy(1)}); });
  EXPECT_NE(e.find("outside the model's vocabulary"), std::string::npos) << e;
  e = test::thrown_error([&] { g.add({std::vector<int32_t>(16, 1), greedy(1)}); });
  EXPECT_NE(e.find("the context holds 16"), std::string::npos) << e;
  SamplingParams bad = greedy(1);
  bad.top_p = 0;
  e = test::thrown_error([&] { g.add({{1}, bad}); });
  EXPECT_NE(e.find("top_p"), std::string::npos) << e;
  // validate() makes the same checks without adding anything.
  e = test::thrown_error([&] { g.validate({std::vector<int32_t>(16, 1), greedy(1)}); });
  EXPECT_NE(e.find("the context holds 16"), std::string::npos) << e;
  g.validate({{1, 2}, greedy(1)});
  EXPECT_TRUE(g.idle());
  EXPECT_EQ(g.context_length(), 16);
}


// --- prefix caching ---------------------------------------------------------------------

// Every step's chosen token and the logits of its top candidates.
struct Steps {
  std::vector<int32_t> tokens;
  std::vector<float> logits;
  int64_t cached = 0;
};

Steps run_one(const Fixture& f, Kernels& k, KVCache& cache, GenerationRequest r, int64_t context = 256) {
  r.show_top = 8;
  Generator g(*f.model, k, cache, *f.tokenizer, context, 7);
  const int h = g.add(std::move(r));
  Steps out;
  out.cached = g.cached_tokens(h);
  while (!g.idle())
    g.step([&](const GenerationEvent& e) {
      for (const Candidate& c : e.candidates) out.logits.push_back(c.logit);
    });
  out.tokens = g.take_result(h)->tokens;
  return out;
}

TEST(Generator, ACachedPrefixGivesTheTokensAndLogitsOfAColdRun) {
  Fixture f;
  for (const char* backend_name : {"cpu", "reference"}) {
    Backend backend(backend_name, 2);
    KVCache cache(f.model->config(), KVType::F16, 1024);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back(2000 + 113 * i);
    const Steps first = run_one(f, backend.kernels(), cache, {prompt, greedy(12)});
    EXPECT_EQ(first.cached, 0);
    // The next turn: the prompt, the reply (its KV came from decode passes), more.
    std::vector<int32_t> next = prompt;
    next.insert(next.end(), first.tokens.begin(), first.tokens.end());
    for (int i = 0; i < 9; ++i) next.push_back(500 + i);
    for (bool seeded : {false, true}) {
      SamplingParams p = greedy(10);
      if (seeded) {
        p.do_sample = true;
        p.temperature = 0.8f;
        p.seed = 17;
      }
      const Steps warm = run_one(f, backend.kernels(), cache, {next, p});
      EXPECT_EQ(warm.cached, 48) << "40 prompt + 11 decoded positions: three full blocks";
      KVCache cold_cache(f.model->config(), KVType::F16, 1024, KVCacheOptions{.prefix_cache = false});
      const Steps cold = run_one(f, backend.kernels(), cold_cache, {next, p});
      EXPECT_EQ(cold.cached, 0);
      EXPECT_EQ(warm.tokens, cold.tokens) << backend_name;
      ASSERT_EQ(warm.logits.size(), cold.logits.size());
      EXPECT_EQ(std::memcmp(warm.logits.data(), cold.logits.data(), warm.logits.size() * sizeof(float)), 0) << backend_name;
    }
  }
}

TEST(Generator, InterleavedRequestsUnderEvictionGetTheTokensOfColdRuns) {
  // A cache of 14 blocks for requests of up to 7: prefixes are shared, evicted and
  // recomputed as requests come and go; every result must equal its request run alone.
  Fixture f;
  Backend backend("cpu", 2);
  KVCache cache(f.model->config(), KVType::F32, 14 * 16);
  Generator g(*f.model, backend.kernels(), cache, *f.tokenizer, 112, 24);
  std::mt19937 rng(1234);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<std::vector<int32_t>> systems;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> s;
    for (int j = 0, n = uniform(10, 60); j < n; ++j) s.push_back(uniform(0, 150000));
    systems.push_back(s);
  }
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 48; ++i) {
    GenerationRequest r{systems[static_cast<size_t>(uniform(0, 3))], greedy(uniform(1, 12))};
    for (int j = 0, n = uniform(1, 20); j < n; ++j) r.prompt.push_back(uniform(0, 150000));
    if (uniform(0, 1) == 1) {
      r.params.do_sample = true;
      r.params.temperature = 0.9f;
      r.params.seed = static_cast<uint64_t>(i);
    }
    requests.push_back(std::move(r));
  }
  std::vector<std::pair<size_t, int>> running;  // request index, handle
  std::vector<GenerationResult> results(requests.size());
  size_t next = 0;
  int64_t cached = 0;
  while (next < requests.size() || !running.empty()) {
    // Admit as the scheduler does: in order, while the worst case fits.
    while (next < requests.size() && running.size() < 5 && uniform(0, 2) > 0 &&
           g.blocks_needed(requests[next]) <= cache.available_blocks()) {
      running.emplace_back(next, g.add(requests[next]));
      cached += g.cached_tokens(running.back().second);
      ++next;
    }
    if (running.empty()) continue;
    g.step({});
    ASSERT_GE(cache.available_blocks(), 0);
    std::erase_if(running, [&](const std::pair<size_t, int>& r) {
      auto done = g.take_result(r.second);
      if (done) results[r.first] = std::move(*done);
      return done.has_value();
    });
  }
  EXPECT_GT(cached, 0) << "some prefixes were reused";
  EXPECT_EQ(cache.free_blocks(), cache.total_blocks());
  EXPECT_EQ(cache.promised_blocks(), 0);
  for (size_t i = 0; i < requests.size(); ++i) {
    KVCache cold_cache(f.model->config(), KVType::F32, 256, KVCacheOptions{.prefix_cache = false});
    const auto alone = Generator::run_all(*f.model, backend.kernels(), cold_cache, *f.tokenizer, 112, {requests[i]});
    EXPECT_EQ(results[i].tokens, alone[0].tokens) << "request " << i;
  }
}

TEST(Generator, ChoicesEqualSingleRunsWithTheirSeedsAndShareThePrompt) {
  Fixture f;
  Backend backend("cpu", 2);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 37; ++i) prompt.push_back(3000 + 71 * i);
  SamplingParams p = greedy(9);
  p.do_sample = true;
  p.temperature = 1.0;
  p.seed = 100;
  for (bool cached_prefix : {false, true}) {
    KVCache cache(f.model->config(), KVType::F32, 1024, KVCacheOptions{.prefix_cache = cached_prefix});
    if (cached_prefix) run_one(f, backend.kernels(), cache, {prompt, greedy(1)});  // publishes two blocks
    Generator g(*f.model, backend.kernels(), cache, *f.tokenizer, 256, 16);
    const int64_t needed = g.blocks_needed({prompt, p}, 4);
    const int64_t free_before = cache.free_blocks();
    const std::vector<int> handles = g.add_choices({prompt, p}, 4);
    ASSERT_EQ(handles.size(), 4u);
    std::vector<std::vector<float>> first_logits(4);
    int64_t most_held = 0;
    while (!g.idle()) {
      g.step([&](const GenerationEvent& e) {
        const auto at = static_cast<size_t>(std::find(handles.begin(), handles.end(), e.handle) - handles.begin());
        if (first_logits[at].empty())
          for (const Candidate& c : e.candidates) first_logits[at].push_back(c.logit);
      });
      most_held = std::max(most_held, free_before - cache.free_blocks());
    }
    // 46 positions at worst: three blocks each, the first two shared.
    EXPECT_EQ(needed, cached_prefix ? 1 + 2 + 3 * 1 : 3 + 3 * 1);
    EXPECT_LE(most_held, 3 + 3) << "the prompt's full blocks are held once";
    std::set<std::vector<int32_t>> distinct;
    for (size_t i = 0; i < 4; ++i) {
      const auto r = g.take_result(handles[i]);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->seed, 100 + i);
      SamplingParams single = p;
      single.seed = 100 + i;
      KVCache alone_cache(f.model->config(), KVType::F32, 256, KVCacheOptions{.prefix_cache = false});
      const auto alone = Generator::run_all(*f.model, backend.kernels(), alone_cache, *f.tokenizer, 256, {{prompt, single}});
      EXPECT_EQ(r->tokens, alone[0].tokens) << "choice " << i;
      EXPECT_EQ(r->tokens.size(), 9u);
      distinct.insert(r->tokens);
    }
    EXPECT_GT(distinct.size(), 1u) << "different seeds, different samples";
    EXPECT_EQ(cache.free_blocks(), cache.total_blocks());
    EXPECT_EQ(cache.promised_blocks(), 0);
  }
}

TEST(Generator, CancellingTheFirstChoiceLetsTheOthersRun) {
  Fixture f;
  Backend backend("cpu", 1);
  KVCache cache(f.model->config(), KVType::F32, 1024);
  Generator g(*f.model, backend.kernels(), cache, *f.tokenizer, 256, 8);
  SamplingParams p = greedy(3);
  const std::vector<int> handles = g.add_choices({std::vector<int32_t>(30, 7), p}, 3);
  g.step({});  // the first choice's first chunk
  g.cancel(handles[0]);
  while (!g.idle()) g.step({});
  KVCache alone_cache(f.model->config(), KVType::F32, 256);
  const auto alone = Generator::run_all(*f.model, backend.kernels(), alone_cache, *f.tokenizer, 256,
                                        {{std::vector<int32_t>(30, 7), p}});
  for (int h : {handles[1], handles[2]}) EXPECT_EQ(g.take_result(h)->tokens, alone[0].tokens);
  EXPECT_EQ(cache.free_blocks(), cache.total_blocks());
}

TEST(Generator, PromptsThatArriveTogetherComputeTheirSharedPrefixOnce) {
  Fixture f;
  Backend backend("cpu", 2);
  std::vector<int32_t> system;
  for (int i = 0; i < 100; ++i) system.push_back(4000 + 29 * i);
  std::vector<GenerationRequest> requests;
  for (int u = 0; u < 4; ++u) {
    GenerationRequest r{system, greedy(4)};
    for (int i = 0; i < 3; ++i) r.prompt.push_back(900 + 10 * u + i);
    requests.push_back(r);
  }
  KVCache cache(f.model->config(), KVType::F32, 2048);
  Generator g(*f.model, backend.kernels(), cache, *f.tokenizer, 256, 32);
  std::vector<int> handles;
  for (const auto& r : requests) handles.push_back(g.add(r));
  while (!g.idle()) g.step({});
  // The first computes all 103 positions; each other one attaches 96 and computes 7.
  EXPECT_EQ(g.timings().prompt_tokens, 103 + 3 * 7);
  for (size_t u = 0; u < requests.size(); ++u) {
    KVCache alone(f.model->config(), KVType::F32, 256, KVCacheOptions{.prefix_cache = false});
    EXPECT_EQ(g.take_result(handles[u])->tokens,
              Generator::run_all(*f.model, backend.kernels(), alone, *f.tokenizer, 256, {requests[u]})[0].tokens);
  }
}

}  // namespace
}  // namespace glass
