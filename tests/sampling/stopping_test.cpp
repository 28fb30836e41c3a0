#include "sampling/stopping.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace glass {
namespace {

// Feeds pieces; returns everything printed and the stop string (or "" if none).
std::pair<std::string, std::string> stream(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string printed, stop;
  for (const std::string& piece : pieces) {
    StopMatcher::Result r = m.push(piece);
    printed += r.text;
    if (r.stop) stop = *r.stop;
  }
  if (!m.stopped()) printed += m.flush();
  return {printed, stop};
}

TEST(StopMatcher, StopStringInOnePieceIsNotPrinted) {
  StopMatcher m({"###"});
  StopMatcher::Result r = m.push("foo###bar");
  EXPECT_EQ(r.text, "foo");
  ASSERT_TRUE(r.stop);
  EXPECT_EQ(*r.stop, "###");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("more").text, "");  // ignored after the stop
}

TEST(StopMatcher, StopStringSpanningTokensIsHeldBackThenDropped) {
  StopMatcher m({"\n\n"});
  StopMatcher::Result r = m.push("Hello\n");
  EXPECT_EQ(r.text, "Hello");  // "\n" could start the stop string
  EXPECT_EQ(m.held_back(), 1u);
  EXPECT_FALSE(r.stop);
  r = m.push("\nWorld");
  EXPECT_EQ(r.text, "");
  ASSERT_TRUE(r.stop);
  EXPECT_EQ(*r.stop, "\n\n");
}

TEST(StopMatcher, FalseStartIsReleased) {
  StopMatcher m({"world"});
  auto [printed, stop] = stream(m, {"hello wo", "rk", "s"});
  EXPECT_EQ(printed, "hello works");
  EXPECT_EQ(stop, "");
  StopMatcher pieces({"world"});
  EXPECT_EQ(pieces.push("hello wor").text, "hello ");
  EXPECT_EQ(pieces.push("m").text, "worm");
}

TEST(StopMatcher, HoldsBackLongestPossibleStart) {
  StopMatcher m({"aab"});
  auto [printed, stop] = stream(m, {"a", "a", "a", "b", "c"});
  EXPECT_EQ(printed, "a");
  EXPECT_EQ(stop, "aab");
}

TEST(StopMatcher, EarliestStopStringWins) {
  StopMatcher m({"cd", "bcde", "b"});
  StopMatcher::Result r = m.push("abcdef");
  EXPECT_EQ(r.text, "a");
  EXPECT_EQ(*r.stop, "b");  // starts first; shorter than "bcde" which starts there too
  StopMatcher later({"END", "x"});
  auto [printed, stop] = stream(later, {"abE", "ND x"});
  EXPECT_EQ(printed, "ab");
  EXPECT_EQ(stop, "END");
}

TEST(StopMatcher, MultiByteCharacters) {
  StopMatcher m({"é."});
  auto [printed, stop] = stream(m, {"caf", "é", "."});
  EXPECT_EQ(printed, "caf");
  EXPECT_EQ(stop, "é.");
}

TEST(StopMatcher, NoStopStringsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("abc").text, "abc");
  EXPECT_EQ(m.held_back(), 0u);
  EXPECT_NE(test::thrown_error([] { StopMatcher({""}); }).find("empty"), std::string::npos);
}

TEST(FinishReason, NamesAndOpenAiMapping) {
  EXPECT_EQ(FinishReason::eos(151645).name(), "eos");
  EXPECT_EQ(FinishReason::eos(151645).openai_name(), "stop");
  EXPECT_EQ(FinishReason::eos(151645).describe(), "eos (token 151645)");
  EXPECT_EQ(FinishReason::stop("\n\n").name(), "stop_string");
  EXPECT_EQ(FinishReason::stop("\n\n").openai_name(), "stop");
  EXPECT_EQ(FinishReason::stop("\n\n").describe(), "stop_string \"\\n\\n\"");
  EXPECT_EQ(FinishReason::length().name(), "length");
  EXPECT_EQ(FinishReason::length().openai_name(), "length");
  EXPECT_EQ(FinishReason::context().name(), "context");
  EXPECT_EQ(FinishReason::context().openai_name(), "length");
}

SamplingParams stop_params() {
  SamplingParams p;
  p.eos_token_ids = {151645, 151643};
  p.stop_strings = {"</s>"};
  p.max_new_tokens = 5;
  return p;
}

TEST(StopChecker, EosStopsAndFlushesHeldText) {
  StopChecker c(stop_params(), 100, 10);
  EXPECT_FALSE(c.before_first_token());
  StopChecker::Step s = c.on_token(1, "hi</");
  EXPECT_EQ(s.text, "hi");
  EXPECT_FALSE(s.finish);
  s = c.on_token(151643, "<|endoftext|>");
  EXPECT_EQ(s.text, "</");  // the held-back text was real output; eos text is not printed
  ASSERT_TRUE(s.finish);
  EXPECT_EQ(*s.finish, FinishReason::eos(151643));
  EXPECT_EQ(c.generated(), 2);
  EXPECT_NE(test::thrown_error([&] { c.on_token(1, "x"); }).find("finished"), std::string::npos);
}

TEST(StopChecker, StopStringAcrossTokens) {
  StopChecker c(stop_params(), 100, 10);
  EXPECT_EQ(c.on_token(1, "ok<").text, "ok");
  EXPECT_EQ(c.on_token(2, "/").text, "");
  StopChecker::Step s = c.on_token(3, "s>tail");
  EXPECT_EQ(s.text, "");
  ASSERT_TRUE(s.finish);
  EXPECT_EQ(*s.finish, FinishReason::stop("</s>"));
}

TEST(StopChecker, MaxNewTokensThenContext) {
  StopChecker c(stop_params(), 100, 10);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(c.on_token(7, "a").finish);
  StopChecker::Step s = c.on_token(7, "<");
  EXPECT_EQ(s.text, "<");  // flushed with the finish
  EXPECT_EQ(*s.finish, FinishReason::length());

  SamplingParams unlimited = stop_params();
  unlimited.max_new_tokens.reset();
  StopChecker ctx(unlimited, 12, 10);
  EXPECT_FALSE(ctx.on_token(7, "a").finish);
  EXPECT_EQ(*ctx.on_token(7, "b").finish, FinishReason::context());  // 10 + 2 = 12

  // Both at once: length is reported (the user's limit).
  StopChecker both(stop_params(), 15, 10);
  for (int i = 0; i < 4; ++i) both.on_token(7, "a");
  EXPECT_EQ(*both.on_token(7, "a").finish, FinishReason::length());
}

TEST(StopChecker, BeforeFirstToken) {
  SamplingParams zero = stop_params();
  zero.max_new_tokens = 0;
  EXPECT_EQ(*StopChecker(zero, 100, 10).before_first_token(), FinishReason::length());
  EXPECT_EQ(*StopChecker(stop_params(), 10, 10).before_first_token(), FinishReason::context());
}

}  // namespace
}  // namespace glass
