// Admission arithmetic at the edges of its input (issue 15 item 2): a max_tokens near
// INT64_MAX overflowed `prompt + max_tokens`, the reservation went negative and every
// later request was admitted past the KV budget (then failed with "KV cache is full").
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "server_harness.h"
#include "support/test_support.h"

namespace glass::test {
namespace {

TEST(AdmissionBounds, MaxTokensNearInt64MaxReservesTheContextAndNoMore) {
  // Room for one whole context (96 positions) at a time, though 4 sequences could run.
  TestServer s(demo_model_dir(), {.parallel = 4, .context = 256, .kv_tokens = 96});
  const int64_t huge = std::numeric_limits<int64_t>::max();
  const std::string fields[] = {
      str_cat(R"("max_tokens": )", huge, R"(, "ignore_eos": true)"),
      str_cat(R"("max_completion_tokens": )", huge - 1, R"(, "ignore_eos": true)"),
      str_cat(R"("max_tokens": )", huge - 3, R"(, "ignore_eos": true)"),
  };
  std::vector<HttpReply> replies(std::size(fields));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < replies.size(); ++i)
    threads.emplace_back([&, i] { replies[i] = post_json(s, "/v1/chat/completions", chat_body(str_cat("q", i), fields[i])); });
  for (auto& t : threads) t.join();
  for (const HttpReply& r : replies) {
    ASSERT_EQ(r.status, 200) << r.body;
    // Each one ran until the context was full.
    EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "length") << r.body;
  }
  const server::SchedulerStats st = s.stats();
  EXPECT_EQ(st.peak_running, 1u) << "each worst case is the whole cache, so they ran one at a time";
  EXPECT_EQ(st.kv_blocks_reserved, 0);
  EXPECT_EQ(st.kv_blocks_free, st.kv_blocks_total);
  EXPECT_EQ(st.completed, 3);
}

// /v1/completions takes the same path; the reservation seen while it runs is the cache.
TEST(AdmissionBounds, ReservationNeverExceedsTheCache) {
  TestServer s(demo_model_dir(), {.parallel = 2, .context = 64, .kv_tokens = 64});
  std::thread client([&] {
    const HttpReply r = post_json(s, "/v1/completions",
                                  str_cat(R"({"prompt": "Hello", "ignore_eos": true, "max_tokens": )",
                                          std::numeric_limits<int64_t>::max(), "}"));
    EXPECT_EQ(r.status, 200) << r.body;
  });
  int64_t most = 0, least = 0;
  for (int i = 0; i < 200; ++i) {
    const server::SchedulerStats st = s.stats();
    most = std::max(most, st.kv_blocks_reserved);
    least = std::min(least, st.kv_blocks_reserved);
    if (st.completed == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  client.join();
  EXPECT_GE(least, 0);
  EXPECT_LE(most, s.stats().kv_blocks_total);
}

}  // namespace
}  // namespace glass::test
