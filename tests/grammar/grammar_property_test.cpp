// Property tests: random strings (sampled derivations, then random edits and
// truncations) fed byte by byte; at every prefix the matcher's verdict (viable prefix,
// complete string) must equal an independent validator's: an Earley recognizer over the
// rules, nlohmann::json's parser for JSON, PCRE2 for the regular grammars.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar_test_util.h"
#include "tokenizer/regex.h"

namespace glass::grammar {
namespace {

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + static_cast<size_t>(len) > s.size()) return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<size_t>(len);
  }
  return true;
}

struct Counts {
  int strings = 0, accepted = 0, rejected_somewhere = 0;
};

// Feeds `s` byte by byte to the matcher and the Earley recognizer; they must agree on
// every prefix. Returns whether the matcher accepted the whole string as complete.
bool check_against_earley(const Grammar& g, const std::string& s, Counts& counts) {
  GrammarMatcher m(g);
  test::Earley e(g);
  ++counts.strings;
  EXPECT_EQ(m.can_end(), e.complete()) << "at the empty prefix";
  for (size_t i = 0; i < s.size(); ++i) {
    bool ok = m.accept_bytes(std::string_view(s).substr(i, 1));
    e.push(static_cast<uint8_t>(s[i]));
    EXPECT_EQ(ok, e.viable()) << "prefix of " << i + 1 << " bytes of " << testing::PrintToString(s);
    if (!ok) {
      ++counts.rejected_somewhere;
      return false;
    }
    EXPECT_EQ(m.can_end(), e.complete()) << "prefix of " << i + 1 << " bytes of " << testing::PrintToString(s);
  }
  if (m.can_end()) ++counts.accepted;
  return m.can_end();
}

std::vector<std::string> random_strings(const Grammar& g, uint32_t seed, int n, const std::string& extra, size_t budget = 60) {
  std::mt19937 rng(seed);
  test::Sampler sampler(g);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::string s = sampler.sample(rng, budget);
    out.push_back(s);
    std::string t = s;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) t = test::mutate(t, rng, extra);
    out.push_back(t);
  }
  return out;
}

TEST(GrammarProperty, MatcherAgreesWithEarleyOnExampleGrammars) {
  const char* names[] = {"json.gbnf", "json_arr.gbnf", "arithmetic.gbnf", "list.gbnf", "chess.gbnf", "c.gbnf", "japanese.gbnf", "english.gbnf"};
  uint32_t seed = 1;
  for (const char* name : names) {
    Grammar g = Grammar::from_gbnf(test::read_data(name));
    Counts counts;
    for (const std::string& s : random_strings(g, seed++, 150, "{}[]\",:0123456789 .-+*/=\\n()aeT")) {
      check_against_earley(g, s, counts);
      if (testing::Test::HasFailure()) return;
    }
    // Both outcomes must actually happen, or the test proves little.
    EXPECT_GT(counts.accepted, 100) << name;
    EXPECT_GT(counts.rejected_somewhere, 20) << name;
  }
}

TEST(GrammarProperty, AmbiguousAndNullableGrammars) {
  const char* grammars[] = {
      "root ::= (a | b)* \"!\"\na ::= \"x\"? \"y\"?\nb ::= (\"x\" \"y\"?)+",
      "root ::= e\ne ::= t (\"+\" t)*\nt ::= \"(\" e \")\" | \"1\" | \"\"",
      "root ::= s\ns ::= \"a\" s \"b\" | \"a\" s | \"\"",
      "root ::= x{2,5} y{0,3} (x y)?\nx ::= \"a\" | \"ab\" | \"\"\ny ::= \"b\"{1,2}",
      "root ::= [\\u0080-\\u07FF\\u4E00-\\u4E10\\U0001F600-\\U0001F64F]{1,4} [^a-z]? \".\"",
  };
  uint32_t seed = 100;
  for (const char* text : grammars) {
    Grammar g = Grammar::from_gbnf(text);
    Counts counts;
    for (const std::string& s : random_strings(g, seed++, 200, "abxy()+1!.\xC2\x80\xE4\xB8\xF0\x9F")) {
      check_against_earley(g, s, counts);
      if (testing::Test::HasFailure()) return;
    }
    EXPECT_GT(counts.accepted, 100) << text;
    EXPECT_GT(counts.rejected_somewhere, 10) << text;
  }
}

// nlohmann::json decides complete strings exactly; on prefixes it is exact only when it
// fails before the end of the text (it lexes a whole token before the parser looks at it),
// so a prefix the matcher rejects is also checked with the Earley recognizer.
TEST(GrammarProperty, JsonGrammarAgreesWithNlohmann) {
  Grammar g = Grammar::from_gbnf(test::read_data("json.gbnf"));
  std::mt19937 rng(5);
  test::Sampler sampler(g);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 400; ++i) {
    std::string s = sampler.sample(rng, 80);
    int edits = static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) s = test::mutate(s, rng, "{}[]\",:0123456789.-eE\\u ");
    GrammarMatcher m(g);
    test::Earley earley(g);
    for (size_t len = 0; len <= s.size(); ++len) {
      std::string prefix = s.substr(0, len);
      int st = test::json_status(prefix);
      if (st == -2) break;  // a number past double's range: nlohmann refuses, JSON allows
      if (len > 0) {
        earley.push(static_cast<uint8_t>(s[len - 1]));
        if (!m.accept_bytes(std::string_view(s).substr(len - 1, 1))) {
          EXPECT_NE(st, 1) << "matcher rejects valid JSON " << testing::PrintToString(prefix);
          EXPECT_FALSE(earley.viable()) << testing::PrintToString(prefix);
          ++rejected;
          break;
        }
      }
      EXPECT_NE(st, -1) << "matcher accepts a prefix nlohmann rejects: " << testing::PrintToString(prefix);
      EXPECT_EQ(m.can_end(), st == 1) << testing::PrintToString(prefix);
      if (len == s.size() && m.can_end()) ++accepted;
    }
    if (testing::Test::HasFailure()) return;
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(rejected, 50);
}

TEST(GrammarProperty, RegularGrammarsAgreeWithPcre2) {
  struct Case {
    const char* file;
    std::string regex;
  };
  const std::string move = R"((?:(?:[a-h]x)?[a-h][1-8](?:=[NBRQ])?|[NBKQR][a-h]?[1-8]?x?[a-h][1-8]|O-O(?:-O)?)[+#]?)";
  const std::string sentence = R"([A-Z][a-z']*(?: [a-zA-Z'][a-zA-Z']*,?)*[.!?])";
  const std::string jp = R"([ぁ-ゟァ-ヿ、-〾\x{4E00}-\x{9FFF}])";
  const Case cases[] = {
      {"list.gbnf", R"((?:- [^\r\n\x0b\x0c\x{85}\x{2028}\x{2029}]+\n)+)"},
      {"chess.gbnf", "1\\. " + move + " " + move + "\\n(?:[1-9][0-9]?\\. " + move + " " + move + "\\n)+"},
      {"english.gbnf", sentence + "(?: " + sentence + ")*"},
      {"japanese.gbnf", jp + "+(?:[ \\t\\n]" + jp + "+)*"},
  };
  uint32_t seed = 300;
  for (const auto& c : cases) {
    Grammar g = Grammar::from_gbnf(test::read_data(c.file));
    Regex re("\\A(?:" + c.regex + ")\\z", c.file);
    int agree_yes = 0, agree_no = 0;
    for (const std::string& s : random_strings(g, seed++, 200, "- \n.1eNxO+#Aa'!,\xE3\x81\x82")) {
      if (!valid_utf8(s)) continue;
      std::vector<MatchSpan> spans;
      re.find_all(s, spans);
      bool re_ok = spans.size() == 1 && spans[0].begin == 0 && spans[0].end == s.size();
      GrammarMatcher m(g);
      bool ok = m.accept_bytes(s) && m.can_end();
      EXPECT_EQ(ok, re_ok) << c.file << ": " << testing::PrintToString(s);
      (ok ? agree_yes : agree_no)++;
    }
    EXPECT_GT(agree_yes, 100) << c.file;
    EXPECT_GT(agree_no, 20) << c.file;
  }
}

TEST(GrammarProperty, ChunkedInputIsAllOrNothing) {
  Grammar g = Grammar::from_gbnf(test::read_data("json_arr.gbnf"));
  std::mt19937 rng(11);
  test::Sampler sampler(g);
  for (int i = 0; i < 200; ++i) {
    std::string s = sampler.sample(rng, 60);
    if (i % 2) s = test::mutate(s, rng, "[]{}\",");
    GrammarMatcher bytewise(g);
    size_t good = 0;
    while (good < s.size() && bytewise.accept_bytes(std::string_view(s).substr(good, 1))) ++good;
    // Random chunks: a chunk is accepted iff it lies within the viable prefix; a refused
    // chunk leaves the matcher as it was.
    GrammarMatcher m(g);
    size_t pos = 0;
    while (pos < s.size()) {
      size_t len = 1 + rng() % 6;
      len = std::min(len, s.size() - pos);
      uint32_t before = m.state_id();
      bool ok = m.accept_bytes(std::string_view(s).substr(pos, len));
      EXPECT_EQ(ok, pos + len <= good);
      if (!ok) {
        EXPECT_EQ(m.state_id(), before);
        break;
      }
      pos += len;
    }
  }
}

}  // namespace
}  // namespace glass::grammar
