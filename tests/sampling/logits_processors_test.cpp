#include "sampling/logits_processors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.h"

namespace glass {
namespace {

using test::kInf;

std::vector<int32_t> kept_ids(const std::vector<float>& row) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < row.size(); ++i)
    if (std::isfinite(row[i])) ids.push_back(static_cast<int32_t>(i));
  return ids;
}

using Ids = std::vector<int32_t>;

// --- logit bias ---

TEST(LogitBias, AddsInFloat32AndKeepsRemovedTokensRemoved) {
  std::vector<float> row = {0.5f, -1.0f, 2.0f, -kInf, 0.1f};
  LogitBias({{0, 0.25f}, {2, -100.0f}, {3, 100.0f}, {4, 1e-9f}}).apply(row);
  EXPECT_EQ(row[0], 0.75f);
  EXPECT_EQ(row[1], -1.0f);
  EXPECT_EQ(row[2], 2.0f - 100.0f);
  EXPECT_EQ(row[3], -kInf);        // a removed token (a grammar's mask, padding) stays removed
  EXPECT_EQ(row[4], 0.1f + 1e-9f);  // float32 addition: the same value here
}

TEST(LogitBias, IdOutsideTheRowAndInvalidListsAreErrors) {
  std::vector<float> row(4, 0.0f);
  const std::string outside = test::thrown_error([&] { LogitBias({{4, 1.0f}}).apply(row); });
  EXPECT_NE(outside.find("logit_bias: token id 4"), std::string::npos) << outside;
  EXPECT_NE(test::thrown_error([] { LogitBias({{2, 1.0f}, {1, 1.0f}}); }).find("logit_bias"), std::string::npos);
  EXPECT_NE(test::thrown_error([] { LogitBias({{1, 101.0f}}); }).find("between -100 and 100"), std::string::npos);
}

TEST(LogitBias, DescribeListsTheFirstIds) {
  EXPECT_EQ(LogitBias({{9707, 5.0f}, {151643, -100.0f}}).describe(), "logit_bias={9707:+5, 151643:-100}");
  EXPECT_EQ(LogitBias({{1, 0.5f}, {2, 1.0f}, {3, 1.0f}, {4, 1.0f}, {5, 1.0f}, {6, 1.0f}}).describe(),
            "logit_bias={1:+0.5, 2:+1, 3:+1, 4:+1, ... 6 tokens}");
}

// --- repetition penalty ---

TEST(RepetitionPenalty, DividesPositiveMultipliesNegativeOncePerId) {
  std::vector<float> row = {2.0f, -2.0f, 1.0f, 0.0f, -kInf};
  const std::vector<int32_t> prompt = {0, 1, 0, 3, 4};
  TokenHistory history(prompt);
  history.add_output(1);  // seen again in the output: still penalized once
  RepetitionPenalty(2.0).apply(row, history);
  EXPECT_EQ(row[0], 1.0f);
  EXPECT_EQ(row[1], -4.0f);
  EXPECT_EQ(row[2], 1.0f);  // not seen
  EXPECT_EQ(row[3], 0.0f);
  EXPECT_EQ(row[4], -kInf);
}

TEST(RepetitionPenalty, BelowOneFavoursSeenTokensInFloat32) {
  std::vector<float> row = {1.0f, -1.0f};
  const std::vector<int32_t> prompt = {0, 1};
  RepetitionPenalty(0.9).apply(row, TokenHistory(prompt));
  EXPECT_EQ(row[0], 1.0f / 0.9f);
  EXPECT_EQ(row[1], -1.0f * 0.9f);
}

TEST(RepetitionPenalty, IdOutsideVocabularyIsAnError) {
  std::vector<float> row(4, 0.0f);
  const std::vector<int32_t> prompt = {9};
  const std::string e = test::thrown_error([&] { RepetitionPenalty(1.1).apply(row, TokenHistory(prompt)); });
  EXPECT_NE(e.find("token id 9"), std::string::npos) << e;
  EXPECT_NE(test::thrown_error([] { RepetitionPenalty(0.0); }).find("repetition_penalty"), std::string::npos);
}

// --- presence and frequency penalties ---

TEST(PresenceFrequencyPenalty, OpenAiDefinitionOverOutputOnly) {
  const std::vector<int32_t> prompt = {3};  // prompt tokens are not counted
  TokenHistory history(prompt);
  for (int32_t id : {0, 1, 1, 1}) history.add_output(id);
  std::vector<float> presence = {1.0f, 1.0f, 1.0f, 1.0f};
  PresencePenalty(0.5).apply(presence, history);
  EXPECT_EQ(presence, (std::vector<float>{0.5f, 0.5f, 1.0f, 1.0f}));
  std::vector<float> frequency = {1.0f, 1.0f, 1.0f, 1.0f};
  FrequencyPenalty(0.25).apply(frequency, history);
  EXPECT_EQ(frequency, (std::vector<float>{0.75f, 0.25f, 1.0f, 1.0f}));
  std::vector<float> negative = {1.0f, 1.0f};
  FrequencyPenalty(-1.0).apply(negative, history);  // negative values encourage repeats
  EXPECT_EQ(negative, (std::vector<float>{2.0f, 4.0f}));
}

// --- temperature ---

TEST(Temperature, DividesInFloat32AndKeepsMinusInf) {
  std::vector<float> row = {1.0f, -3.0f, -kInf};
  Temperature(0.7).apply(row);
  EXPECT_EQ(row[0], 1.0f / 0.7f);
  EXPECT_EQ(row[1], -3.0f / 0.7f);
  EXPECT_EQ(row[2], -kInf);
  EXPECT_NE(test::thrown_error([] { Temperature(0.0); }).find("temperature"), std::string::npos);
}

// --- top-k ---

TEST(TopK, KeepsTiesAtTheThreshold) {
  std::vector<float> row = {1.0f, 3.0f, 2.0f, 2.0f, 0.5f};
  TopK(2).apply(row);
  EXPECT_EQ(kept_ids(row), (Ids{1, 2, 3}));
  std::vector<float> all_tied(6, 0.25f);
  TopK(1).apply(all_tied);
  EXPECT_EQ(kept_ids(all_tied).size(), 6u);
}

TEST(TopK, OffAndLargeKAndFewFinite) {
  std::vector<float> row = {1.0f, 3.0f, 2.0f};
  TopK(0).apply(row);
  EXPECT_EQ(kept_ids(row).size(), 3u);
  TopK(3).apply(row);
  EXPECT_EQ(kept_ids(row).size(), 3u);
  TopK(5000).apply(row);
  EXPECT_EQ(kept_ids(row).size(), 3u);
  // Fewer finite logits than k: the k-th largest is -inf and nothing more is removed.
  std::vector<float> sparse = {-kInf, 1.0f, -kInf, 2.0f};
  TopK(3).apply(sparse);
  EXPECT_EQ(kept_ids(sparse), (Ids{1, 3}));
  EXPECT_NE(test::thrown_error([] { TopK(-1); }).find("top_k"), std::string::npos);
}

TEST(TopK, SmallAndLargeKPathsAgreeOnLargeRows) {
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> row(151936);
  for (float& x : row) x = std::round(normal(gen) * 8) / 8;  // many ties
  for (int64_t k : {1, 20, 64, 65, 1000}) {
    std::vector<float> got = row;
    TopK(k).apply(got);
    std::vector<float> sorted = row;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    const float threshold = sorted[static_cast<size_t>(k - 1)];
    size_t expected = 0;
    for (float x : row) expected += x >= threshold;
    EXPECT_EQ(kept_ids(got).size(), expected) << "k=" << k;
    for (size_t i = 0; i < row.size(); ++i) ASSERT_EQ(std::isfinite(got[i]), row[i] >= threshold) << "k=" << k;
  }
}

// --- top-p ---

TEST(TopP, RemovesLowTailByAscendingCumulativeSum) {
  // probabilities 0.1, 0.2, 0.3, 0.4: ascending cumsum 0.1, 0.3, 0.6, 1.0.
  std::vector<float> base = {std::log(0.1f), std::log(0.2f), std::log(0.3f), std::log(0.4f)};
  auto run = [&](double p) {
    std::vector<float> row = base;
    TopP(p).apply(row);
    return kept_ids(row);
  };
  EXPECT_EQ(run(0.5), (Ids{2, 3}));     // 1 - p = 0.5: 0.1 and 0.3 go
  EXPECT_EQ(run(0.85), (Ids{1, 2, 3})); // 0.15: only 0.1 goes
  EXPECT_EQ(run(0.95), (Ids{0, 1, 2, 3}));  // 0.05: nothing is at or below it
  EXPECT_EQ(run(0.01), (Ids{3}));       // always keeps the most probable
  EXPECT_EQ(run(1.0), (Ids{0, 1, 2, 3}));
}

TEST(TopP, KeepsOneWhenAllButOneAreMinusInf) {
  std::vector<float> row = {-kInf, 5.0f, -kInf};
  TopP(0.1).apply(row);
  EXPECT_EQ(kept_ids(row), (Ids{1}));
  std::vector<float> none(3, -kInf);
  TopP(0.5).apply(none);
  EXPECT_TRUE(kept_ids(none).empty());
  EXPECT_NE(test::thrown_error([] { TopP(0.0); }).find("top_p"), std::string::npos);
  EXPECT_NE(test::thrown_error([] { TopP(1.5); }).find("top_p"), std::string::npos);
}

TEST(TopP, TiesStraddlingTheCutFollowTorchSortOrder) {
  // Five equal logits, 0.2 each; top_p 0.5 drops positions whose cumsum <= 0.5: two of
  // them. Which two is torch.sort's (std::sort's) order, not lowest or highest id.
  std::vector<float> row(5, 1.0f);
  std::vector<float> reference = row;
  TopP(0.5).apply(row);
  top_p_by_full_sort(reference, 0.5);
  EXPECT_EQ(kept_ids(row).size(), 3u);
  EXPECT_EQ(kept_ids(row), kept_ids(reference));
}

// The bucketed fast path and the full-sort reference agree on flat and peaked rows, with
// and without ties, dense and (after top-k) sparse, small and vocabulary-sized.
TEST(TopP, FastPathMatchesFullSortReference) {
  std::mt19937 gen(11);
  int straddles = 0;
  for (size_t vocab : {8u, 50u, 1000u, 151936u}) {
    for (float spread : {0.5f, 2.0f, 8.0f}) {
      std::normal_distribution<float> normal(0.0f, spread);
      for (int quantize : {0, 4, 1}) {
        for (int64_t top_k : {0, 40}) {
          for (double p : {0.01, 0.3, 0.8, 0.9, 0.999}) {
            // The full-vocabulary reference sorts 152k entries; a few settings suffice there.
            if (vocab > 1000 && (quantize == 4 || p == 0.3 || p == 0.9)) continue;
            std::vector<float> row(vocab);
            for (float& x : row) {
              x = normal(gen);
              if (quantize) x = std::round(x * quantize) / quantize;
            }
            if (vocab > 8) row[vocab / 3] = -kInf;
            TopK(top_k).apply(row);
            std::vector<float> fast = row, reference = row;
            TopP(p).apply(fast);
            top_p_by_full_sort(reference, p);
            ASSERT_EQ(kept_ids(fast), kept_ids(reference))
                << "vocab " << vocab << " spread " << spread << " quantize " << quantize << " top_k " << top_k << " p " << p;
            // Count cases where equal logits straddle the cut (the reference's tie order matters).
            std::vector<int32_t> kept = kept_ids(fast);
            if (!kept.empty()) {
              float lowest = kInf;
              for (int32_t id : kept) lowest = std::min(lowest, row[static_cast<size_t>(id)]);
              for (size_t i = 0; i < row.size(); ++i)
                if (row[i] == lowest && !std::isfinite(fast[i])) {
                  ++straddles;
                  break;
                }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(straddles, 0) << "no case exercised the tie-order path";
}

// --- min-p ---

TEST(MinP, ComparesWithScaledTopProbability) {
  // probabilities 0.5, 0.3, 0.15, 0.05: min_p 0.2 keeps p >= 0.1.
  std::vector<float> row = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  std::vector<float> off = row;
  MinP(0.2).apply(row);
  EXPECT_EQ(kept_ids(row), (Ids{0, 1, 2}));
  MinP(0.0).apply(off);
  EXPECT_EQ(kept_ids(off).size(), 4u);
  std::vector<float> one = row;
  MinP(1.0).apply(one);  // only the maximum (and ties with it)
  EXPECT_EQ(kept_ids(one), (Ids{0}));
  std::vector<float> tied = {1.0f, 1.0f, 0.0f};
  MinP(1.0).apply(tied);
  EXPECT_EQ(kept_ids(tied), (Ids{0, 1}));
  EXPECT_NE(test::thrown_error([] { MinP(-0.1); }).find("min_p"), std::string::npos);
}

TEST(RowSoftmax, MatchesDefinitionAndHandlesMinusInf) {
  std::vector<float> row = {0.0f, std::log(3.0f), -kInf};
  const RowSoftmax sm = row_softmax(row);
  EXPECT_NEAR(sm.prob(row[0]), 0.25, 1e-7);
  EXPECT_NEAR(sm.prob(row[1]), 0.75, 1e-7);
  EXPECT_EQ(sm.prob(row[2]), 0.0f);
  EXPECT_TRUE(row_softmax(std::vector<float>(3, -kInf)).empty());
}

}  // namespace
}  // namespace glass
