// Did-you-mean: edit distance and the choice of a suggestion.
#include <gtest/gtest.h>

#include "cli/suggest.h"

namespace glass::cli {
namespace {

TEST(Suggest, EditDistanceCountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("run", "run"), 0u);
  EXPECT_EQ(edit_distance("runn", "run"), 1u);
  EXPECT_EQ(edit_distance("rn", "run"), 1u);
  EXPECT_EQ(edit_distance("ran", "run"), 1u);
  EXPECT_EQ(edit_distance("chta", "chat"), 1u);  // one swap
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Suggest, ClosestNamePrefersAnAbbreviationThenFewEdits) {
  const std::vector<std::string> flags = {"--help", "--temperature", "--top-k", "--top-p", "-m", "-n", "--seed"};
  EXPECT_EQ(closest_name("--temp", flags), "--temperature");
  EXPECT_EQ(closest_name("--top_k", flags), "--top-k");
  EXPECT_EQ(closest_name("--sed", flags), "--seed");
  EXPECT_EQ(closest_name("--top", flags), std::nullopt);  // abbreviates two: no guess, and too far from both
  EXPECT_EQ(closest_name("-c", flags), std::nullopt);     // one edit from every short flag: no guess
  EXPECT_EQ(closest_name("--verbose", flags), std::nullopt);
  EXPECT_EQ(closest_name("", flags), std::nullopt);
  const std::vector<std::string> commands = {"run", "chat", "serve", "trace", "bench", "bench-tokenizer"};
  EXPECT_EQ(closest_name("runn", commands), "run");
  EXPECT_EQ(closest_name("chta", commands), "chat");
  EXPECT_EQ(closest_name("server", commands), "serve");
  EXPECT_EQ(closest_name("bench-tok", commands), "bench-tokenizer");
  EXPECT_EQ(closest_name("bnch", commands), "bench");
  EXPECT_EQ(closest_name("frobnicate", commands), std::nullopt);
}

}  // namespace
}  // namespace glass::cli
