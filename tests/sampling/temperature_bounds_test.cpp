// Temperatures at the edge of float range (issue 15 item 5): 1e-300 became 0 as a float,
// the temperature step divided by it and the draw picked padding rows past the
// tokenizer. Below 1e-5 glass decodes greedily, as vLLM does (its _SAMPLING_EPS).
#include <gtest/gtest.h>

#include <vector>

#include "sampling/sampler.h"

namespace glass {
namespace {

TEST(TemperatureBounds, TinyTemperaturesAreGreedy) {
  for (double t : {1e-300, 5e-324, 1e-45, 9.99e-6}) {
    SamplingParams p;
    p.do_sample = true;
    p.top_k = 0;
    p.temperature = t;
    p.seed = 5;
    EXPECT_FALSE(p.sampling()) << t;
    Sampler sampler(p);
    EXPECT_TRUE(sampler.greedy()) << t;
    // The argmax, every time, whatever else the row holds.
    for (int i = 0; i < 50; ++i) {
      std::vector<float> row = {0.5f, 3.0f, 2.9f, -1.0f, 0.0f, 0.0f};
      ASSERT_EQ(sampler.sample(row, TokenHistory()), 1) << t;
    }
  }
  SamplingParams p;
  p.do_sample = true;
  p.temperature = 1e-5;
  EXPECT_TRUE(p.sampling());
}

// Issue 15 item 5: the draw picked padding rows of the embedding past the tokenizer.
// Ids from `tokens` on are never chosen, greedy or sampled, even when the model rates
// them highest.
TEST(TemperatureBounds, PaddingRowsPastTheTokenizerAreNeverChosen) {
  std::vector<float> base(64, 0.0f);
  base[3] = 1.0f;
  base[60] = 50.0f;  // a padding row (the tokenizer has 48 tokens) far above the rest
  for (const bool sample : {false, true}) {
    SamplingParams p;
    p.do_sample = sample;
    p.top_k = 0;
    p.seed = 11;
    Sampler sampler(p);
    for (int i = 0; i < 200; ++i) {
      std::vector<float> row = base;
      const int32_t id = sampler.sample(row, TokenHistory(), nullptr, 48);
      ASSERT_LT(id, 48) << (sample ? "sampled" : "greedy");
      if (!sample) {
        ASSERT_EQ(id, 3);
      }
    }
  }
}

}  // namespace
}  // namespace glass
