#include <gtest/gtest.h>

#include <random>

#include "tokenizer/fast_split.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace glass {
namespace {

std::vector<std::string> pieces_of(std::string_view text, const std::vector<MatchSpan>& spans) {
  std::vector<std::string> out;
  for (const MatchSpan& m : spans) out.emplace_back(text.substr(m.begin, m.end - m.begin));
  return out;
}

std::vector<std::string> regex_split(const Regex& re, std::string_view text) {
  std::vector<MatchSpan> spans;
  re.find_all(text, spans);
  return pieces_of(text, spans);
}

std::vector<std::string> fast_split(const FastSplitter& f, std::string_view text) {
  std::vector<MatchSpan> spans;
  f.find_all(text, spans);
  return pieces_of(text, spans);
}

using Pieces = std::vector<std::string>;

TEST(FastSplit, RecognizesOnlyTheExactPatterns) {
  EXPECT_EQ(FastSplitter::recognize(kQwen2SplitPattern)->max_digits(), 1);
  EXPECT_EQ(FastSplitter::recognize(kCl100kSplitPattern)->max_digits(), 3);
  EXPECT_FALSE(FastSplitter::recognize(kGpt2SplitPattern));
  EXPECT_FALSE(FastSplitter::recognize(std::string(kQwen2SplitPattern) + "|x"));
}

TEST(FastSplit, SplitsLikeQwen2) {
  const FastSplitter f = *FastSplitter::recognize(kQwen2SplitPattern);
  EXPECT_EQ(fast_split(f, "Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(fast_split(f, "I'm don't WE'LL"), (Pieces{"I", "'m", " don", "'t", " WE", "'LL"}));
  EXPECT_EQ(fast_split(f, "12345"), (Pieces{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(fast_split(f, "a  b"), (Pieces{"a", " ", " b"}));
  EXPECT_EQ(fast_split(f, "x \n\n  y"), (Pieces{"x", " \n\n", " ", " y"}));
  EXPECT_EQ(fast_split(f, "end   "), (Pieces{"end", "   "}));
  EXPECT_EQ(fast_split(f, "\tword"), (Pieces{"\tword"}));
  EXPECT_EQ(fast_split(f, "!!! ??\n\nx"), (Pieces{"!!!", " ??\n\n", "x"}));
  EXPECT_EQ(fast_split(f, "你好，世界"), (Pieces{"你好", "，世界"}));
  EXPECT_EQ(fast_split(f, "'ſ"), (Pieces{"'ſ"}));
  const FastSplitter g = *FastSplitter::recognize(kCl100kSplitPattern);
  EXPECT_EQ(fast_split(g, "12345"), (Pieces{"123", "45"}));
}

// The hand-written splitter against PCRE2 running the same pattern, on random text from
// an alphabet of every kind of character the pattern distinguishes.
TEST(FastSplit, MatchesPcre2OnRandomText) {
  const std::vector<std::string> alphabet = {
      "a", "Z", "s", "t", "re", "LL", "ve", "D", "M", "'", "'", "ſ", "K", "0", "7", "½", "Ⅻ", "٣", " ", " ", "  ",
      "\t", "\n", "\r", "\r\n", "\v", "\f", "\u0085", "\u00a0", "\u1680", "\u180e", "\u2000", "\u2028", "\u202f",
      "\u3000", "\u200b", "\ufeff", "\u001c", ".", ",", "!", "-", "_", "<", "|", "\"", "$", "你", "好", "한", "é",
      "e\u0301", "\u0301", "\u094d", "\u200d", "ж", "😀", "👍🏽", "\U0001F1E8", "\U0010FFFD", "\U000E0041"};
  for (const char* pattern : {kQwen2SplitPattern, kCl100kSplitPattern}) {
    const Regex re(pattern, "test");
    const FastSplitter f = *FastSplitter::recognize(pattern);
    std::mt19937 rng(1234);
    for (int i = 0; i < 6000; ++i) {
      std::string s;
      const int n = 1 + static_cast<int>(rng() % 16);
      for (int k = 0; k < n; ++k) s += alphabet[rng() % alphabet.size()];
      ASSERT_EQ(fast_split(f, s), regex_split(re, s)) << "text " << ::testing::PrintToString(s);
    }
  }
}

TEST(FastSplit, HandlesLongRuns) {
  const Regex re(kQwen2SplitPattern, "test");
  const FastSplitter f = *FastSplitter::recognize(kQwen2SplitPattern);
  for (const std::string& s : {std::string(100000, ' ') + "x", std::string(100000, 'a'),
                               std::string(50000, '\n') + " " + std::string(50000, ' '), std::string(30000, '!')}) {
    const auto fast = fast_split(f, s);
    EXPECT_EQ(fast, regex_split(re, s));
    size_t total = 0;
    for (const auto& p : fast) total += p.size();
    EXPECT_EQ(total, s.size());
  }
}

TEST(Regex, WhiteSpaceIsUnicodeWhiteSpaceNotPcre2s) {
  // U+180E: no space for Oniguruma (Hugging Face), so "a" + U+180E + "b" is one piece
  // ([^\s\p{L}\p{N}]?\p{L}+ after "a"), as it is for the fast splitter.
  const Regex re(kQwen2SplitPattern, "test");
  EXPECT_EQ(regex_split(re, "a\u180e\u180eb"), (Pieces{"a", "\u180e\u180e", "b"}));
  EXPECT_EQ(regex_split(re, " \u180e!"), (Pieces{" \u180e!"}));  // ` ?[^\s\p{L}\p{N}]+`
  EXPECT_EQ(regex_split(Regex("\\s", "test"), "\u180e \u3000"), (Pieces{" ", "\u3000"}));
  // Literal patterns are left alone.
  EXPECT_EQ(regex_split(Regex("\u180e", "test", true), "a\u180eb"), (Pieces{"\u180e"}));
}

TEST(Regex, EmptyMatchesAdvanceLikeOniguruma) {
  std::vector<MatchSpan> spans;
  Regex("x*", "test").find_all("axxb", spans);
  // At 0 an empty match; at 1 "xx"; at 3 an empty match right after "xx" is skipped, then one at 4.
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].begin, 0u);
  EXPECT_EQ(spans[0].end, 0u);
  EXPECT_EQ(spans[1].begin, 1u);
  EXPECT_EQ(spans[1].end, 3u);
  EXPECT_EQ(spans[2].begin, 4u);
  EXPECT_EQ(spans[2].end, 4u);
}

TEST(Regex, BadPatternNamesItsSource) {
  try {
    Regex("(unclosed", "tokenizer.json: pre_tokenizer.pattern");
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json: pre_tokenizer.pattern"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not compile"), std::string::npos) << e.what();
  }
}

// Hugging Face's documented example for each SplitDelimiterBehavior, pattern "-".
TEST(SplitBehavior, MatchesHuggingFaceDocumentation) {
  const std::string text = "the-final--countdown";
  std::vector<MatchSpan> spans;
  Regex("-", "test").find_all(text, spans);
  auto run = [&](SplitBehavior b, bool invert = false) {
    std::vector<std::string_view> pieces;
    apply_split_behavior(text, spans, b, invert, pieces);
    return Pieces(pieces.begin(), pieces.end());
  };
  EXPECT_EQ(run(SplitBehavior::kRemoved), (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(run(SplitBehavior::kIsolated), (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(run(SplitBehavior::kMergedWithPrevious), (Pieces{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(run(SplitBehavior::kMergedWithNext), (Pieces{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(run(SplitBehavior::kContiguous), (Pieces{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(run(SplitBehavior::kRemoved, true), (Pieces{"-", "-", "-"}));
}

TEST(PreTokenizer, PrefixSpaceThenSplit) {
  PreTokenizer p;
  p.add_prefix_space();
  p.add_split({Regex(kGpt2SplitPattern, "test"), SplitBehavior::kIsolated, false, std::nullopt});
  EXPECT_EQ(p.split("Hello world"), (Pieces{" Hello", " world"}));
  EXPECT_EQ(p.split(" already"), (Pieces{" already"}));
  EXPECT_EQ(p.split(""), Pieces{});
  EXPECT_FALSE(p.has_fast_split());
}

}  // namespace
}  // namespace glass
