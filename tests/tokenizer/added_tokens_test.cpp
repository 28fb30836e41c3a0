#include <gtest/gtest.h>

#include "tiny_tokenizer.h"
#include "tokenizer/added_tokens.h"

namespace glass {
namespace {

using Parts = std::vector<std::pair<std::string, int32_t>>;  // (text, id or -1)

Parts split(const AddedTokenMatcher& m, std::string_view text, bool parse_special = true) {
  std::vector<Segment> segs;
  m.split(text, parse_special, segs);
  Parts out;
  size_t expect = 0;
  for (const Segment& s : segs) {
    EXPECT_EQ(s.begin, expect) << "segments must cover the text in order";
    expect = s.end;
    out.emplace_back(std::string(text.substr(s.begin, s.end - s.begin)), s.id);
  }
  EXPECT_EQ(expect, text.size());
  return out;
}

AddedToken token(int32_t id, std::string content, bool special = true) {
  AddedToken t;
  t.id = id;
  t.content = std::move(content);
  t.special = special;
  t.normalized = false;
  return t;
}

TEST(AddedTokens, LeftmostLongestNonOverlapping) {
  AddedTokenMatcher m;
  m.add("<a>", token(1, "<a>"));
  m.add("<a><b>", token(2, "<a><b>"));
  m.add("b>c", token(3, "b>c"));
  EXPECT_EQ(split(m, "x<a><b>c"), (Parts{{"x", -1}, {"<a><b>", 2}, {"c", -1}}));
  EXPECT_EQ(split(m, "<a><a>"), (Parts{{"<a>", 1}, {"<a>", 1}}));
  EXPECT_EQ(split(m, "<a"), (Parts{{"<a", -1}}));
  EXPECT_EQ(split(m, ""), Parts{});
  EXPECT_EQ(split(m, "b>cb>c"), (Parts{{"b>c", 3}, {"b>c", 3}}));
}

TEST(AddedTokens, SpecialTokensCanBePlainText) {
  AddedTokenMatcher m;
  m.add("<|im_end|>", token(10, "<|im_end|>", true));
  m.add("<tool_call>", token(11, "<tool_call>", false));
  EXPECT_EQ(split(m, "a<|im_end|><tool_call>", false), (Parts{{"a<|im_end|>", -1}, {"<tool_call>", 11}}));
  EXPECT_EQ(split(m, "a<|im_end|><tool_call>", true), (Parts{{"a", -1}, {"<|im_end|>", 10}, {"<tool_call>", 11}}));
}

TEST(AddedTokens, SingleWordNeedsNoWordCharacterBesideIt) {
  AddedTokenMatcher m;
  AddedToken t = token(5, "<mask>", false);
  t.single_word = true;
  m.add("<mask>", t);
  // Hugging Face's own test (test_single_word_is_correct), without the lowercasing.
  EXPECT_EQ(split(m, "<mask> My name <mask> A<mask> <mask>ony <mask>"),
            (Parts{{"<mask>", 5}, {" My name ", -1}, {"<mask>", 5}, {" A<mask> <mask>ony ", -1}, {"<mask>", 5}}));
  // test_single_word_is_unicode_correct: punctuation is no word character, a mark is.
  EXPECT_EQ(split(m, "<mask>, <mask>- \u25cc\u0330<mask>"),
            (Parts{{"<mask>", 5}, {", ", -1}, {"<mask>", 5}, {"- \u25cc\u0330<mask>", -1}}));
}

TEST(AddedTokens, LstripAndRstripTakeUnicodeWhiteSpace) {
  AddedTokenMatcher m;
  AddedToken t = token(5, "<mask>", false);
  t.lstrip = t.rstrip = t.single_word = true;
  m.add("<mask>", t);
  // Hugging Face's test_lstrip_unicode_space, without the lowercasing.
  EXPECT_EQ(split(m, "Hi <mask> there\t<mask>\t<mask>\u2000"),
            (Parts{{"Hi", -1}, {" <mask> ", 5}, {"there", -1}, {"\t<mask>\t", 5}, {"<mask>\u2000", 5}}));
}

TEST(AddedTokens, OnlyLstripOrOnlyRstrip) {
  AddedTokenMatcher left, right;
  AddedToken l = token(1, "<L>", false), r = token(2, "<R>", false);
  l.lstrip = true;
  r.rstrip = true;
  left.add("<L>", l);
  right.add("<R>", r);
  EXPECT_EQ(split(left, "a \u3000<L> b"), (Parts{{"a", -1}, {" \u3000<L>", 1}, {" b", -1}}));
  EXPECT_EQ(split(right, "a <R> \n b"), (Parts{{"a ", -1}, {"<R> \n ", 2}, {"b", -1}}));
  EXPECT_EQ(split(left, "\u200b<L>"), (Parts{{"\u200b", -1}, {"<L>", 1}}));  // U+200B is no White_Space
}

// Through a whole tokenizer: normalized tokens match the NFC text, others the raw text.
TEST(AddedTokens, NormalizedTokensMatchAfterNfc) {
  Json j = test::tiny_tokenizer_json({});
  j["added_tokens"] = {test::added_token(300, "\u00e9t\u00e9", false, false, false, /*normalized=*/true),
                       test::added_token(301, "e\u0301!", false, false, false, /*normalized=*/false),
                       test::added_token(302, "<s>", true)};
  const Tokenizer t = test::tokenizer_of(j);
  EXPECT_EQ(t.encode("e\u0301te\u0301"), (std::vector<int32_t>{300}));
  EXPECT_EQ(t.encode("e\u0301!"), (std::vector<int32_t>{301}));  // raw match before NFC
  EXPECT_EQ(t.encode("<s>x"), (std::vector<int32_t>{302, 'x'}));
  EXPECT_EQ(t.encode("<s>x", {.parse_special = false}), (std::vector<int32_t>{'<', 's', '>', 'x'}));
  EXPECT_TRUE(t.is_special(302));
  EXPECT_FALSE(t.is_special(300));
  EXPECT_EQ(t.token_id("<s>"), 302);
  EXPECT_EQ(t.token_text(300), "\u00e9t\u00e9");
}

TEST(AddedTokens, DuplicateContentTakesTheLastId) {
  Json j = test::tiny_tokenizer_json({});
  j["added_tokens"] = {test::added_token(300, "<x>", true), test::added_token(301, "<x>", true)};
  const Tokenizer t = test::tokenizer_of(j);
  EXPECT_EQ(t.encode("<x>"), (std::vector<int32_t>{301}));
  EXPECT_EQ(t.token_id("<x>"), 301);
}

}  // namespace
}  // namespace glass
