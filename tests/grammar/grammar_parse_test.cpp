// GBNF parsing: the example grammars, the language each construct denotes, and every
// kind of bad input (with line and column), including hostile sizes.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar_test_util.h"

namespace glass::grammar {
namespace {

using test::accepts;
using test::viable;
std::string error_of(std::string_view text) {
  try {
    (void)Grammar::from_gbnf(text);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GrammarParse, ExampleGrammarsParse) {
  for (const char* name : {"json.gbnf", "json_arr.gbnf", "arithmetic.gbnf", "list.gbnf", "chess.gbnf", "c.gbnf",
                           "japanese.gbnf", "english.gbnf"}) {
    std::string text = test::read_data(name);
    ASSERT_FALSE(text.empty()) << name;
    EXPECT_NO_THROW((void)Grammar::from_gbnf(text)) << name;
  }
}

TEST(GrammarParse, ExampleGrammarsAcceptTheirLanguage) {
  Grammar json = Grammar::from_gbnf(test::read_data("json.gbnf"));
  EXPECT_TRUE(accepts(json, R"( {"a": [1, -2.5e+3, true, null, "x\u00e9\ud83d\ude00"], "b": {}} )"));
  EXPECT_FALSE(accepts(json, R"({"a": [1,]})"));
  EXPECT_FALSE(accepts(json, R"("\ud800")"));  // lone surrogate escape
  EXPECT_TRUE(viable(json, R"({"a": [1, "\ud83d)"));

  Grammar arith = Grammar::from_gbnf(test::read_data("arithmetic.gbnf"));
  EXPECT_TRUE(accepts(arith, "(x +2) *y3= 10\n"));
  EXPECT_FALSE(accepts(arith, "x + =1\n"));

  Grammar chess = Grammar::from_gbnf(test::read_data("chess.gbnf"));
  EXPECT_TRUE(accepts(chess, "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n4. O-O exd4+\n"));
  EXPECT_FALSE(accepts(chess, "1. e9 e5\n2. Nf3 Nc6\n"));

  Grammar c = Grammar::from_gbnf(test::read_data("c.gbnf"));
  EXPECT_TRUE(accepts(c, "int main(){int x = 1+2*f(y);while(x<10){x = x+1;}return x;}"));
  EXPECT_FALSE(accepts(c, "int main(){x = ;}"));

  Grammar jp = Grammar::from_gbnf(test::read_data("japanese.gbnf"));
  EXPECT_TRUE(accepts(jp, "こんにちは、世界。 カタカナ"));
  EXPECT_FALSE(accepts(jp, "hello"));
  // A token can end inside a character: the first two bytes of "世" are a viable prefix.
  EXPECT_TRUE(viable(jp, "\xE4\xB8"));
  EXPECT_FALSE(viable(jp, "\xE4\x41"));

  Grammar en = Grammar::from_gbnf(test::read_data("english.gbnf"));
  EXPECT_TRUE(accepts(en, "The cat sat on the mat. Then it slept!"));
  EXPECT_FALSE(accepts(en, "the cat."));

  Grammar list = Grammar::from_gbnf(test::read_data("list.gbnf"));
  EXPECT_TRUE(accepts(list, "- eggs\n- milk ü\n"));
  EXPECT_FALSE(accepts(list, "- \n"));
}

TEST(GrammarParse, Constructs) {
  Grammar g = Grammar::from_gbnf(R"(root ::= "a"{2} "b"{1,} "c"{0,2} "d"? ("e" | "f")* [^x-z] .)");
  EXPECT_TRUE(accepts(g, "aabwé"));
  EXPECT_TRUE(accepts(g, "aabbbccdefefw\xF0\x9F\x98\x80"));
  EXPECT_FALSE(accepts(g, "abw."));       // one a
  EXPECT_FALSE(accepts(g, "aacw."));      // no b
  EXPECT_FALSE(accepts(g, "aabcccw."));   // three c
  EXPECT_FALSE(accepts(g, "aabyw"));      // y excluded
  EXPECT_FALSE(accepts(g, "aabw\xED\xA0\x80"));  // a surrogate's encoding is not UTF-8

  Grammar esc = Grammar::from_gbnf(R"(root ::= "\x41\u00e9\U0001F600\n\t\\\"" [\x30-\x39\]] "\[")");
  EXPECT_TRUE(accepts(esc, "Aé\xF0\x9F\x98\x80\n\t\\\"5["));
  EXPECT_TRUE(accepts(esc, "Aé\xF0\x9F\x98\x80\n\t\\\"]["));

  Grammar nullable = Grammar::from_gbnf("root ::= a b a\na ::= \"x\"? | \"\"\nb ::= (a a)*");
  EXPECT_TRUE(accepts(nullable, ""));
  EXPECT_TRUE(accepts(nullable, "xxxxx"));

  // Multi-line rules, comments, rules in any order, names with - and _.
  Grammar ml = Grammar::from_gbnf("# top\nroot ::=\n  item-one # first\n  | item_two\n\nitem-one ::= \"1\"\nitem_two ::= \"2\" # end");
  EXPECT_TRUE(accepts(ml, "1"));
  EXPECT_TRUE(accepts(ml, "2"));

  // Right recursion and tail calls of nullable items do not need left recursion.
  Grammar tail = Grammar::from_gbnf("root ::= (\"a\"?)* \"b\"\nr ::= \"x\" r | \"\"");
  EXPECT_TRUE(accepts(tail, "aaab"));
  EXPECT_TRUE(accepts(tail, "b"));
}

struct BadCase {
  const char* text;
  const char* expect;
};

TEST(GrammarParse, SyntaxErrorsNameLineAndColumn) {
  const BadCase cases[] = {
      {"root ::= \"a\"\nx ::= [a-z\ny ::= \"b\"", "line 2, column 11: expected ']' to close the character class opened at line 2, column 7"},
      {"root ::= \"abc", "line 1, column 10: expected '\"' to close this string"},
      {"root ::= (\"a\" | \"b\"", "line 1, column 20: expected ')' to close the group opened at line 1, column 10"},
      {"root = \"a\"", "line 1, column 6: expected '::=' after the rule name 'root'"},
      {"root ::= \"a\" )", "line 1, column 14: unexpected ')'"},
      {"root ::= \"a\"{2", "line 1, column 15: expected '}' to close the repetition"},
      {"root ::= \"a\"{3,2}", "line 1, column 13: in {3,2} the maximum is less than the minimum"},
      {"root ::= \"\\q\"", "line 1, column 11: unknown escape '\\q'"},
      {"root ::= \"\\x4\"", "line 1, column 14: expected 2 hex digits"},
      {"root ::= [z-a]", "line 1, column 13: the range's end comes before its start"},
      {"root ::= \"a\" ; ", "line 1, column 14: expected a string, a character class, a rule name"},
      {"root ::= *", "line 1, column 10: expected a string"},
      {"  \n  ::= \"a\"", "line 2, column 3: expected a rule name"},
      {"root ::= \"\\uD800\"", "line 1, column 11: the escape is not a Unicode scalar value"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice (first at line 1, column 1)"},
      {"root ::= <[151645]>", "line 1, column 10: token references (<[id]>, <token>, !<...>) are not supported"},
      {"root ::= (!<think>)*", "line 1, column 11: token references"},
  };
  for (const auto& c : cases) {
    std::string err = error_of(c.text);
    EXPECT_NE(err.find(c.expect), std::string::npos) << "grammar: " << c.text << "\nerror: " << err;
    EXPECT_EQ(err.rfind("grammar: ", 0), 0u) << err;
  }
  try {
    (void)Grammar::from_gbnf("root ::= x\n\nx ::= [a");
    FAIL();
  } catch (const GrammarError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.column(), 9);
  }
}

TEST(GrammarParse, SemanticErrors) {
  EXPECT_NE(error_of("root ::= item\nitem ::= \"a\" thing").find("line 2, column 14: rule 'thing' is used but never defined"),
            std::string::npos);
  EXPECT_NE(error_of("start ::= \"a\"").find("there is no rule named 'root'"), std::string::npos);
  EXPECT_NE(error_of("").find("there is no rule named 'root'"), std::string::npos);
  // Accepts nothing: no derivation terminates.
  EXPECT_NE(error_of("root ::= \"a\" root").find("accepts nothing"), std::string::npos);
  EXPECT_NE(error_of("root ::= a\na ::= \"(\" b \")\"\nb ::= a | \"x\" b").find("accepts nothing"), std::string::npos);
  EXPECT_NE(error_of("root ::= [^\\x00-\\U0010FFFF]").find("accepts nothing"), std::string::npos);
  // An alternative that cannot finish is dropped; the rest still works.
  Grammar g = Grammar::from_gbnf("root ::= \"a\" loop | \"b\"\nloop ::= \"c\" loop");
  EXPECT_TRUE(accepts(g, "b"));
  EXPECT_FALSE(viable(g, "a"));
  // Left recursion: direct, indirect, hidden behind a nullable item.
  for (const char* lr : {"root ::= root \"a\" | \"b\"", "root ::= x \"a\" | \"b\"\nx ::= root \"c\"",
                         "root ::= n root \"a\" | \"b\"\nn ::= \"x\"?", "root ::= (root \"+\")? \"1\""}) {
    std::string err = error_of(lr);
    EXPECT_NE(err.find("left-recursive"), std::string::npos) << lr << "\n" << err;
  }
}

TEST(GrammarParse, HostileInputsAreBounded) {
  // 10,000 nested groups: refused, no stack overflow.
  std::string deep = str_cat("root ::= ", std::string(10000, '('), "\"a\"", std::string(10000, ')'));
  EXPECT_NE(error_of(deep).find("groups nested more than"), std::string::npos);
  // Nesting within the limit works.
  std::string ok = str_cat("root ::= ", std::string(150, '('), "\"a\"", std::string(150, ')'));
  EXPECT_TRUE(accepts(Grammar::from_gbnf(ok), "a"));
  // Huge repetition counts.
  EXPECT_NE(error_of("root ::= \"a\"{99999999999}").find("more than the limit"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{1,18446744073709551617}").find("more than the limit"), std::string::npos);
  // Nested repetitions multiply: bounded by the element limit.
  std::string big = "root ::=";
  for (int i = 0; i < 25; ++i) big += str_cat(" x", i);
  for (int i = 0; i < 25; ++i) big += str_cat("\nx", i, " ::= \"ab\"{100000}");
  EXPECT_NE(error_of(big).find("too large"), std::string::npos);
  // Repetitions of repetitions stay compact (each level refers to the one below).
  EXPECT_NO_THROW((void)Grammar::from_gbnf("root ::= ((\"abcdefgh\"{100000}){100000}){100000}"));
  // Oversized text.
  GrammarLimits small;
  small.max_text_bytes = 100;
  EXPECT_THROW((void)Grammar::from_gbnf(std::string(200, ' ') + "root ::= \"a\"", small), GrammarError);
  // A long chain of rules (deep but not recursive in the parser) compiles.
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 20000; ++i) chain += str_cat("r", i, " ::= \"x\" r", i + 1, " | \"y\"\n");
  chain += "r20000 ::= \"z\"\n";
  Grammar g = Grammar::from_gbnf(chain);
  EXPECT_TRUE(accepts(g, std::string(5000, 'x') + "y"));
  EXPECT_TRUE(viable(g, std::string(19000, 'x')));
  // Invalid UTF-8 in the grammar text.
  EXPECT_NE(error_of("root ::= \"\xC3\"").find("invalid UTF-8"), std::string::npos);
}

TEST(GrammarParse, TruncatedAndGarbledGrammarsNeverCrash) {
  std::mt19937 rng(7);
  for (const char* name : {"json.gbnf", "c.gbnf", "chess.gbnf", "japanese.gbnf"}) {
    std::string text = test::read_data(name);
    for (size_t cut = 0; cut < text.size(); cut += 3) {
      try {
        (void)Grammar::from_gbnf(text.substr(0, cut));
      } catch (const GrammarError&) {
      }
    }
    for (int i = 0; i < 300; ++i) {
      std::string t = text;
      for (int k = 0; k < 3; ++k) t = test::mutate(t, rng, "()[]{}|*+?\"\\-^#:=\n");
      try {
        Grammar g = Grammar::from_gbnf(t);
        GrammarMatcher m(g);
        (void)m.accept_bytes("abc");
      } catch (const GrammarError&) {
      }
    }
  }
}

}  // namespace
}  // namespace glass::grammar
