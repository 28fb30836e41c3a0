#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "support/test_support.h"

namespace glass {
namespace {

using test::kInf;

SamplingParams plain_sampling(uint64_t seed) {
  SamplingParams p;
  p.do_sample = true;
  p.top_k = 0;  // sample from softmax(logits) as given
  p.seed = seed;
  return p;
}

const std::vector<double> kDistribution = {0.3, 0.2, 0.15, 0.1, 0.08, 0.07, 0.05, 0.03, 0.015, 0.005};

std::vector<float> log_row(const std::vector<double>& probs) {
  std::vector<float> row;
  for (double p : probs) row.push_back(static_cast<float>(std::log(p)));
  return row;
}

TEST(Argmax, LowestIdWinsTies) {
  EXPECT_EQ(argmax(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}), 1);
  EXPECT_EQ(argmax(std::vector<float>{-kInf, -kInf, -5.0f}), 2);
  EXPECT_NE(test::thrown_error([] { argmax(std::vector<float>{-kInf, -kInf}); }).find("no token"), std::string::npos);
}

TEST(Sampler, GreedyWhenSamplingOffOrTemperatureZero) {
  SamplingParams p;
  p.seed = 1;
  std::vector<float> row = {0.0f, 2.0f, 2.0f, 1.0f};
  std::vector<float> copy = row;
  EXPECT_EQ(Sampler(p).sample(copy, TokenHistory()), 1);
  p = plain_sampling(1);
  p.temperature = 0;
  Sampler zero(p);
  EXPECT_TRUE(zero.greedy());
  for (int i = 0; i < 20; ++i) {
    copy = row;
    EXPECT_EQ(zero.sample(copy, TokenHistory()), 1);
  }
}

TEST(Sampler, GreedyAppliesRepetitionPenalty) {
  SamplingParams p;
  p.repetition_penalty = 2.0;
  p.seed = 1;
  std::vector<float> row = {3.0f, 2.0f};
  const std::vector<int32_t> prompt = {0};
  EXPECT_EQ(Sampler(p).sample(row, TokenHistory(prompt)), 1);  // 3 / 2 < 2
}

TEST(Sampler, RefusesNanAndEmptyRows) {
  Sampler s(plain_sampling(3));
  std::vector<float> nan_row = {0.0f, std::nanf("")};
  EXPECT_NE(test::thrown_error([&] { s.sample(nan_row, TokenHistory()); }).find("token 1"), std::string::npos);
  std::vector<float> empty = {-kInf, -kInf};
  EXPECT_NE(test::thrown_error([&] { s.sample(empty, TokenHistory()); }).find("-inf"), std::string::npos);
}

TEST(Sampler, NeverDrawsRemovedTokens) {
  Sampler s(plain_sampling(5));
  for (int i = 0; i < 2000; ++i) {
    std::vector<float> row = {1.0f, -kInf, 0.5f, -kInf, -kInf};
    const int32_t t = s.sample(row, TokenHistory());
    ASSERT_TRUE(t == 0 || t == 2) << t;
  }
}

// A change of generator, seeding, uniform conversion or draw method shows up here.
// (The expected tokens were also computed by an independent Python transcription of the
// algorithms documented in rng.h and sampler.h.)
TEST(Sampler, SeedGivesFixedTokens) {
  Sampler s(plain_sampling(1234));
  std::vector<int32_t> got;
  for (int i = 0; i < 16; ++i) {
    std::vector<float> row = log_row(kDistribution);
    got.push_back(s.sample(row, TokenHistory()));
  }
  EXPECT_EQ(got, (std::vector<int32_t>{0, 5, 3, 5, 0, 5, 1, 0, 2, 2, 2, 0, 0, 2, 1, 5}));
}

TEST(Sampler, SameSeedSameTokensTwoSamplersIndependent) {
  Sampler a(plain_sampling(99)), b(plain_sampling(99)), c(plain_sampling(100));
  int differ = 0;
  for (int i = 0; i < 500; ++i) {
    std::vector<float> ra = log_row(kDistribution), rb = ra, rc = ra;
    const int32_t ta = a.sample(ra, TokenHistory());
    EXPECT_EQ(ta, b.sample(rb, TokenHistory()));
    differ += ta != c.sample(rc, TokenHistory());
  }
  EXPECT_GT(differ, 0);
  EXPECT_EQ(a.seed(), 99u);
}

TEST(Sampler, DrawsASeedWhenNoneIsGiven) {
  SamplingParams p = plain_sampling(0);
  p.seed.reset();
  Sampler a(p), b(p);
  EXPECT_NE(a.seed(), b.seed());  // 2^-64 chance of a false failure
}

// 200,000 draws from a fixed distribution: Pearson chi-square against the expected
// counts, 9 degrees of freedom, below the p = 0.001 critical value 27.877.
TEST(Sampler, ChiSquareMatchesDistribution) {
  const std::vector<float> row = log_row(kDistribution);
  const RowSoftmax sm = row_softmax(row);
  Rng rng(2024);
  constexpr int kDraws = 200000;
  std::vector<int> counts(row.size(), 0);
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<size_t>(sample_categorical(row, rng))];
  double chi2 = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    const double expected = kDraws * static_cast<double>(sm.prob(row[i]));
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  EXPECT_LT(chi2, 27.877) << "chi-square " << chi2;
}

// The same test through the whole sampler with Qwen2.5-Instruct's settings on a
// vocabulary-sized row: the draws follow the processed distribution.
TEST(Sampler, ChiSquareAfterQwenChainOnFullVocabulary) {
  std::mt19937 gen(8);
  std::normal_distribution<float> normal(0.0f, 2.5f);
  std::vector<float> row(151936);
  for (float& x : row) x = normal(gen);
  SamplingParams p;
  p.do_sample = true;
  p.temperature = 0.7;
  p.top_k = 20;
  p.top_p = 0.8;
  p.repetition_penalty = 1.05;
  p.seed = 77;
  const std::vector<int32_t> prompt = {1, 2, 3};
  const TokenHistory history(prompt);
  std::vector<float> processed = row;
  ProcessorChain::from_params(p).apply(processed, history);
  const RowSoftmax sm = row_softmax(processed);
  std::vector<int32_t> kept;
  for (size_t i = 0; i < processed.size(); ++i)
    if (std::isfinite(processed[i])) kept.push_back(static_cast<int32_t>(i));
  ASSERT_GE(kept.size(), 2u);
  // Draw from the kept logits alone (in id order): removed ids carry no weight, so this
  // is the same draw as from the full row, without scanning 152k entries 200,000 times.
  std::vector<float> compact;
  for (int32_t id : kept) compact.push_back(processed[static_cast<size_t>(id)]);
  Rng full_rng(5), compact_rng(5);
  for (int i = 0; i < 200; ++i)
    ASSERT_EQ(sample_categorical(processed, full_rng), kept[static_cast<size_t>(sample_categorical(compact, compact_rng))]);
  Rng rng(77);
  constexpr int kDraws = 200000;
  std::vector<int> counts(kept.size(), 0);
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<size_t>(sample_categorical(compact, rng))];
  double chi2 = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    const double expected = kDraws * static_cast<double>(sm.prob(compact[i]));
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  // Critical values at p = 0.001 for 1..19 degrees of freedom.
  const double critical[] = {10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877, 29.588,
                             31.264, 32.909, 34.528, 36.123, 37.697, 39.252, 40.790, 42.312, 43.820};
  ASSERT_LE(kept.size(), 20u);
  EXPECT_LT(chi2, critical[kept.size() - 2]) << kept.size() << " kept, chi-square " << chi2;
  // And the Sampler itself, step by step, gives the same draws as the pieces.
  Sampler s(p);
  Rng same(77);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> fresh = row;
    EXPECT_EQ(s.sample(fresh, history), sample_categorical(processed, same));
  }
}

}  // namespace
}  // namespace glass
