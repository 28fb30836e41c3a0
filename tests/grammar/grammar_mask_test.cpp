// The token mask against brute force (each token tried on a copy of the matcher, and on
// the Earley recognizer), on random vocabularies with tokens that split UTF-8 characters
// and on the real Qwen2.5 vocabulary; end and special tokens; applying the mask.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar_test_util.h"
#include "tokenizer/tokenizer.h"

namespace glass::grammar {
namespace {

// Random byte strings: pieces of sampled strings of the grammar (so many are allowed
// somewhere), cut at any byte (so UTF-8 characters are split), and random bytes.
std::vector<std::string> random_vocab(const Grammar& g, uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  test::Sampler sampler(g);
  std::vector<std::string> corpus;
  for (int i = 0; i < 200; ++i) corpus.push_back(sampler.sample(rng, 40));
  std::vector<std::string> vocab;
  std::set<std::string> seen;
  vocab.push_back("");  // a hole: never allowed
  while (vocab.size() < n) {
    std::string t;
    if (rng() % 5 == 0) {
      size_t len = 1 + rng() % 3;
      for (size_t k = 0; k < len; ++k) t.push_back(static_cast<char>(rng() % 256));
    } else {
      const std::string& c = corpus[rng() % corpus.size()];
      if (c.empty()) continue;
      size_t at = rng() % c.size();
      size_t len = 1 + rng() % std::min<size_t>(8, c.size() - at);
      t = c.substr(at, len);
    }
    if (rng() % 50 == 0 || seen.insert(t).second) vocab.push_back(t);  // a few duplicates too
  }
  return vocab;
}

// Every id, brute force: allowed iff a copy of the matcher accepts it.
void expect_mask_matches_brute_force(const GrammarMatcher& m, const TokenMask& mask, const std::string& where) {
  const auto& v = *m.vocabulary();
  int mismatches = 0;
  for (size_t id = 0; id < v.size() && mismatches < 5; ++id) {
    GrammarMatcher copy = m;
    bool ok = copy.accept_token(static_cast<int32_t>(id));
    if (ok != mask.allowed(static_cast<int32_t>(id))) {
      ++mismatches;
      ADD_FAILURE() << where << ": token " << id << " " << testing::PrintToString(std::string(v.bytes(static_cast<int32_t>(id))))
                    << " brute force " << ok << ", mask " << mask.allowed(static_cast<int32_t>(id));
    }
  }
}

TEST(GrammarMask, EqualsBruteForceOnRandomVocabularies) {
  const char* names[] = {"json_arr.gbnf", "japanese.gbnf", "c.gbnf", "arithmetic.gbnf"};
  uint32_t seed = 20;
  for (const char* name : names) {
    Grammar g = Grammar::from_gbnf(test::read_data(name));
    std::vector<std::string> tokens = random_vocab(g, seed++, 3000);
    tokens.push_back("<eos>");
    tokens.push_back("<special>");
    int32_t eos = static_cast<int32_t>(tokens.size() - 2), special = static_cast<int32_t>(tokens.size() - 1);
    auto vocab = std::make_shared<const TokenVocabulary>(tokens, std::vector<int32_t>{eos}, std::vector<int32_t>{special});
    std::mt19937 rng(seed);
    test::Sampler sampler(g);
    int states = 0, total_allowed = 0;
    for (int doc = 0; doc < 6; ++doc) {
      std::string s = sampler.sample(rng, 50);
      GrammarMatcher m(g, vocab);
      for (size_t i = 0; i <= s.size(); ++i) {
        if (i > 0) {
          ASSERT_TRUE(m.accept_bytes(std::string_view(s).substr(i - 1, 1)));
        }
        if (i % 3 != 0 && i != s.size()) continue;
        TokenMask mask = m.mask();
        expect_mask_matches_brute_force(m, mask, str_cat(name, " after ", testing::PrintToString(s.substr(0, i))));
        EXPECT_EQ(mask.allowed(eos), m.can_end());
        EXPECT_FALSE(mask.allowed(special));
        EXPECT_FALSE(mask.allowed(0));
        total_allowed += static_cast<int>(mask.count());
        ++states;
        if (testing::Test::HasFailure()) return;
      }
    }
    EXPECT_GT(states, 20);
    EXPECT_GT(total_allowed, states) << name;  // masks are not trivially empty
  }
}

// The Earley recognizer as the brute force (an independent algorithm), on a smaller vocabulary.
TEST(GrammarMask, EqualsEarleyBruteForce) {
  Grammar g = Grammar::from_gbnf(test::read_data("json.gbnf"));
  std::vector<std::string> tokens = random_vocab(g, 77, 400);
  auto vocab = std::make_shared<const TokenVocabulary>(tokens);
  std::mt19937 rng(78);
  test::Sampler sampler(g);
  for (int doc = 0; doc < 4; ++doc) {
    std::string s = sampler.sample(rng, 40);
    GrammarMatcher m(g, vocab);
    ASSERT_TRUE(m.accept_bytes(s.substr(0, s.size() / 2)));
    TokenMask mask = m.mask();
    for (size_t id = 0; id < tokens.size(); ++id) {
      test::Earley e(g);
      std::string text = s.substr(0, s.size() / 2) + tokens[id];
      bool ok = !tokens[id].empty();
      for (char c : text) {
        e.push(static_cast<uint8_t>(c));
        if (!e.viable()) {
          ok = false;
          break;
        }
      }
      EXPECT_EQ(mask.allowed(static_cast<int32_t>(id)), ok) << testing::PrintToString(text);
    }
  }
}

TEST(GrammarMask, EndAndSpecialTokens) {
  Grammar g = Grammar::from_gbnf("root ::= \"ab\" | \"abc\"");
  auto vocab = std::make_shared<const TokenVocabulary>(std::vector<std::string>{"a", "b", "c", "ab", "<end>", "<|x|>", "abc"},
                                                       std::vector<int32_t>{4}, std::vector<int32_t>{5});
  GrammarMatcher m(g, vocab);
  EXPECT_EQ(m.mask().count(), 3u);  // "a", "ab", "abc"
  EXPECT_TRUE(m.mask().allowed(6));
  EXPECT_FALSE(m.accept_token(4));  // end before the grammar can end
  EXPECT_FALSE(m.accept_token(5));  // special, never
  EXPECT_TRUE(m.accept_token(3));
  EXPECT_TRUE(m.can_end());
  TokenMask mask = m.mask();
  EXPECT_TRUE(mask.allowed(4));
  EXPECT_TRUE(mask.allowed(2));
  EXPECT_FALSE(mask.allowed(5));
  GrammarMatcher fork = m.fork();
  EXPECT_TRUE(m.accept_token(4));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_TRUE(m.is_dead());
  EXPECT_EQ(m.mask().count(), 0u);
  EXPECT_FALSE(m.accept_token(2));
  // The fork is independent.
  EXPECT_TRUE(fork.accept_token(2));
  EXPECT_FALSE(fork.can_accept_bytes("c"));
  fork.reset();
  EXPECT_TRUE(fork.can_accept_bytes("abc"));
}

// One grammar, two vocabularies (the same tokens, different end tokens): each matcher's
// mask follows its own vocabulary, however the calls interleave.
TEST(GrammarMask, VocabulariesShareAGrammar) {
  Grammar g = Grammar::from_gbnf("root ::= \"a\"+");
  std::vector<std::string> tokens = {"a", "aa", "<e1>", "<e2>"};
  auto v1 = std::make_shared<const TokenVocabulary>(tokens, std::vector<int32_t>{2}, std::vector<int32_t>{3});
  auto v2 = std::make_shared<const TokenVocabulary>(tokens, std::vector<int32_t>{3}, std::vector<int32_t>{2});
  GrammarMatcher m1(g, v1), m2(g, v2);
  for (int round = 0; round < 3; ++round) {
    TokenMask a = m1.mask(), b = m2.mask();
    EXPECT_EQ(a.allowed(2), round > 0);
    EXPECT_FALSE(a.allowed(3));
    EXPECT_EQ(b.allowed(3), round > 0);
    EXPECT_FALSE(b.allowed(2));
    ASSERT_TRUE(m1.accept_token(0));
    ASSERT_TRUE(m2.accept_token(1));
  }
}

// A grammar's shared cache is retired past its state limit: later matchers start a fresh
// one; matchers already running keep theirs and stay correct.
TEST(GrammarMask, StateCacheIsRetiredWhenLarge) {
  GrammarLimits limits;
  limits.retire_states = 40;
  Grammar g = Grammar::from_gbnf("root ::= [a-z]{0,200}", limits);  // a new state per letter
  GrammarMatcher old(g);
  ASSERT_TRUE(old.accept_bytes(std::string(100, 'q')));
  EXPECT_GT(old.cached_states(), 100u);
  GrammarMatcher fresh(g);
  EXPECT_LT(fresh.cached_states(), 5u);
  GrammarMatcher copy = old;  // a copy keeps the old cache
  EXPECT_GT(copy.cached_states(), 100u);
  EXPECT_TRUE(old.accept_bytes(std::string(100, 'z')));
  EXPECT_FALSE(old.accept_bytes("a"));
  EXPECT_TRUE(old.can_end());
  EXPECT_TRUE(fresh.accept_bytes(std::string(200, 'x')));
  EXPECT_TRUE(copy.accept_bytes("abc"));
  // Small caches are kept and shared.
  Grammar small = Grammar::from_gbnf("root ::= \"ab\"");
  GrammarMatcher s1(small);
  ASSERT_TRUE(s1.accept_bytes("a"));
  GrammarMatcher s2(small);
  EXPECT_EQ(s2.cached_states(), s1.cached_states());
}

TEST(GrammarMask, ApplyToLogits) {
  TokenMask mask;
  mask.size = 130;
  mask.words.assign(3, 0);
  for (int id : {0, 5, 63, 64, 129}) mask.words[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
  std::vector<float> logits(140, 1.5f);
  apply_token_mask(mask, logits);
  for (int i = 0; i < 140; ++i) {
    bool allowed = i == 0 || i == 5 || i == 63 || i == 64 || i == 129;
    EXPECT_EQ(std::isinf(logits[static_cast<size_t>(i)]), !allowed) << i;
  }
}

// A hugely ambiguous grammar: its states exceed the matcher's limits; it must stay
// quick and sound, never hang.
TEST(GrammarMask, HostileAmbiguityIsBounded) {
  auto t0 = std::chrono::steady_clock::now();
  // Refused when compiling: the first state alone would have 100,001 stacks.
  try {
    (void)Grammar::from_gbnf("root ::= (\"a\"?){0,100000} \"b\"");
    ADD_FAILURE() << "no error";
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("too ambiguous"), std::string::npos) << e.what();
  }
  // When such a state comes later, the byte leading to it is refused.
  Grammar huge = Grammar::from_gbnf("root ::= \"b\" (\"a\"?){0,100000} \"b\"");
  GrammarMatcher m(huge);
  EXPECT_FALSE(m.is_dead());
  EXPECT_FALSE(m.accept_bytes("b"));
  // Below the limits it works.
  Grammar ok = Grammar::from_gbnf("root ::= (\"a\"?){0,1000} \"b\"");
  GrammarMatcher m2(ok);
  EXPECT_TRUE(m2.accept_bytes(std::string(999, 'a')));
  EXPECT_TRUE(m2.accept_bytes("ab"));
  EXPECT_TRUE(m2.can_end());
  // A mask over many tokens in large states finishes in bounded time.
  std::vector<std::string> tokens;
  for (int i = 0; i < 2000; ++i) tokens.push_back(std::string(static_cast<size_t>(1 + i % 16), static_cast<char>('a' + i % 3)));
  auto vocab = std::make_shared<const TokenVocabulary>(tokens);
  Grammar wide = Grammar::from_gbnf("root ::= ([a-c]? [a-c]?){0,2000}");
  GrammarMatcher m3(wide, vocab);
  TokenMask mask = m3.mask();
  for (size_t id = 0; id < tokens.size(); id += 97) {
    if (mask.allowed(static_cast<int32_t>(id))) {
      GrammarMatcher copy = m3;
      EXPECT_TRUE(copy.accept_token(static_cast<int32_t>(id)));
    }
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
}

// Matchers of one grammar on several threads share its state cache (locked).
TEST(GrammarMask, ConcurrentMatchersAgree) {
  Grammar g = json_object_grammar();
  std::vector<std::string> tokens = random_vocab(g, 5, 2000);
  auto vocab = std::make_shared<const TokenVocabulary>(tokens);
  const std::string doc = R"({"a": [1, 2.5, {"b": "c\u00e9"}], "d": null, "e": "fgh"})";
  auto run = [&](std::vector<std::vector<uint64_t>>& out) {
    GrammarMatcher m(g, vocab);
    for (char c : doc) {
      out.push_back(m.mask().words);
      if (!m.accept_bytes(std::string(1, c))) return;
    }
  };
  std::vector<std::vector<std::vector<uint64_t>>> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&run, &r] { run(r); });
  for (auto& t : threads) t.join();
  Grammar fresh = json_object_grammar();
  GrammarMatcher m(fresh, vocab);
  for (size_t i = 0; i < doc.size(); ++i) {
    std::vector<uint64_t> expect = m.mask().words;
    for (auto& r : results) {
      ASSERT_EQ(r.size(), doc.size());
      EXPECT_EQ(r[i], expect) << "step " << i;
    }
    ASSERT_TRUE(m.accept_bytes(doc.substr(i, 1)));
  }
}

std::string demo_tokenizer_path() { return std::string(GLASS_DEMO_MODEL_DIR) + "/tokenizer.json"; }

TEST(GrammarMask, RealVocabularyJsonSchema) {
  if (!std::filesystem::exists(demo_tokenizer_path())) GTEST_SKIP() << "no " << demo_tokenizer_path();
  Tokenizer tok = Tokenizer::load(demo_tokenizer_path());
  auto vocab = std::make_shared<const TokenVocabulary>(TokenVocabulary::from_tokenizer(tok, {151643, 151645}));
  ASSERT_EQ(vocab->size(), 151665u);
  Grammar g = json_schema_grammar(std::string_view(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "city": {"type": "string", "enum": ["東京", "Zürich", "New York"]},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}
    },
    "required": ["name", "city", "age"],
    "additionalProperties": false
  })"));
  const std::string doc = R"({"name": "山田 太郎 ✓", "city": "東京", "age": 42, "tags": ["a", "b\"c"]})";
  std::vector<int32_t> ids = tok.encode(doc);
  GrammarMatcher m(g, vocab);
  for (size_t step = 0; step <= ids.size(); ++step) {
    TokenMask mask = m.mask();
    if (step % 4 == 0 || step == ids.size()) {
      expect_mask_matches_brute_force(m, mask, str_cat("step ", step));
    } else {
      // A slice of the vocabulary: every 13th id and the CJK block's neighbours.
      for (size_t id = step; id < vocab->size(); id += 13) {
        GrammarMatcher copy = m;
        ASSERT_EQ(copy.accept_token(static_cast<int32_t>(id)), mask.allowed(static_cast<int32_t>(id))) << "step " << step << " id " << id;
      }
    }
    if (testing::Test::HasFailure()) return;
    if (step == ids.size()) {
      EXPECT_TRUE(m.can_end());
      EXPECT_TRUE(mask.allowed(151645));
      EXPECT_TRUE(mask.allowed(151643));
      EXPECT_FALSE(mask.allowed(151644));  // <|im_start|>: special
      break;
    }
    EXPECT_FALSE(mask.allowed(151645));
    ASSERT_TRUE(mask.allowed(ids[step])) << "step " << step << " " << tok.token_text(ids[step]);
    ASSERT_TRUE(m.accept_token(ids[step]));
  }
}

TEST(GrammarMask, RealVocabularySplitsUtf8) {
  if (!std::filesystem::exists(demo_tokenizer_path())) GTEST_SKIP() << "no " << demo_tokenizer_path();
  Tokenizer tok = Tokenizer::load(demo_tokenizer_path());
  auto vocab = std::make_shared<const TokenVocabulary>(TokenVocabulary::from_tokenizer(tok, {151645}));
  Grammar g = Grammar::from_gbnf(test::read_data("japanese.gbnf"));
  GrammarMatcher m(g, vocab);
  // Byte-level tokens that are pieces of one character: a lead byte alone is allowed
  // (some kanji start with it), a continuation byte at the start is not.
  TokenMask mask = m.mask();
  int partial = 0;
  for (size_t id = 0; id < vocab->size(); ++id) {
    std::string_view b = vocab->bytes(static_cast<int32_t>(id));
    if (b.size() == 1 && static_cast<unsigned char>(b[0]) == 0xE4) {
      EXPECT_TRUE(mask.allowed(static_cast<int32_t>(id)));
      ++partial;
    }
    if (b.size() == 1 && static_cast<unsigned char>(b[0]) == 0x80) {
      EXPECT_FALSE(mask.allowed(static_cast<int32_t>(id)));
    }
  }
  EXPECT_EQ(partial, 1);
  ASSERT_TRUE(m.accept_bytes("\xE4"));  // half of 世
  expect_mask_matches_brute_force(m, m.mask(), "after a lead byte");
  ASSERT_TRUE(m.accept_bytes("\xB8\x96"));
  expect_mask_matches_brute_force(m, m.mask(), "after 世");
}

}  // namespace
}  // namespace glass::grammar
