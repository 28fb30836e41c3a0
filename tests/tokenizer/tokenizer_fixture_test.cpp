// Every case in every tokenizer-cases/*.json (ids and decoded text from Hugging Face
// tokenizers) against the tokenizer in qwen2.5-tokenizer/, discovered at run time from
// GLASS_FIXTURES: ids, decode, streaming decode, the PCRE2 path against the fast
// splitter, and the vocab.json + merges.txt fallback.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <thread>

#include "base/json_fields.h"
#include "base/mapped_file.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace glass {
namespace {

struct Case {
  std::string text, decoded;
  std::vector<int32_t> ids;
};

std::vector<Case> read_cases(const std::string& file) {
  const Json j = read_json_file(file);
  std::vector<Case> out;
  for (const Json& c : j.at("cases"))
    out.push_back({c.at("text").get<std::string>(), c.at("decoded").get<std::string>(),
                   c.at("ids").get<std::vector<int32_t>>()});
  return out;
}

std::string tokenizer_dir() { return test::fixtures_root() + "/qwen2.5-tokenizer"; }

// Loaded once per process: the real tokenizer.json takes a fraction of a second.
const Tokenizer& fast() {
  static const Tokenizer t = Tokenizer::load(tokenizer_dir() + "/tokenizer.json");
  return t;
}

std::string show(const std::string& text) { return Json(text).dump(); }

class CaseFileTest : public ::testing::Test {
 public:
  explicit CaseFileTest(std::string file) : file_(std::move(file)) {}

 protected:
  void SetUp() override {
    cases_ = read_cases(file_);
    ASSERT_FALSE(cases_.empty()) << file_ << " has no cases";
  }
  std::string file_;
  std::vector<Case> cases_;
};

class IdsMatch : public CaseFileTest {
 public:
  using CaseFileTest::CaseFileTest;
  void TestBody() override {
    ASSERT_TRUE(fast().has_fast_split());
    size_t failures = 0;
    for (size_t i = 0; i < cases_.size() && failures < 5; ++i) {
      const auto ids = fast().encode(cases_[i].text);
      if (ids != cases_[i].ids) {
        ++failures;
        ADD_FAILURE() << "case " << i << " " << show(cases_[i].text).substr(0, 200) << ": ids differ";
      }
    }
  }
};

class DecodeMatches : public CaseFileTest {
 public:
  using CaseFileTest::CaseFileTest;
  void TestBody() override {
    for (size_t i = 0; i < cases_.size(); ++i)
      ASSERT_EQ(fast().decode(cases_[i].ids), cases_[i].decoded) << "case " << i;
  }
};

class StreamingMatches : public CaseFileTest {
 public:
  using CaseFileTest::CaseFileTest;
  void TestBody() override {
    for (size_t i = 0; i < cases_.size(); ++i) {
      for (bool skip : {false, true}) {
        StreamingDecoder stream(fast(), skip);
        std::string all;
        for (int32_t id : cases_[i].ids) {
          const std::string piece = stream.push(id);
          ASSERT_TRUE(utf8::is_valid(piece)) << "case " << i << ": partial UTF-8 emitted after id " << id;
          all += piece;
        }
        const std::string rest = stream.flush();
        ASSERT_TRUE(utf8::is_valid(rest));
        all += rest;
        ASSERT_EQ(all, fast().decode(cases_[i].ids, skip)) << "case " << i;
        if (!skip) {
          ASSERT_EQ(all, cases_[i].decoded) << "case " << i;
        }
      }
    }
  }
};

class Pcre2PathMatches : public CaseFileTest {
 public:
  using CaseFileTest::CaseFileTest;
  void TestBody() override {
    const EncodeOptions pcre2_only{.fast_split = false};
    for (size_t i = 0; i < cases_.size(); ++i) {
      ASSERT_EQ(fast().pre_tokenize(cases_[i].text, false), fast().pre_tokenize(cases_[i].text)) << "case " << i;
      ASSERT_EQ(fast().encode(cases_[i].text, pcre2_only), cases_[i].ids) << "case " << i;
    }
  }
};

// vocab.json + merges.txt + tokenizer_config.json, without tokenizer.json, give the same ids.
class LegacyFilesMatch : public CaseFileTest {
 public:
  using CaseFileTest::CaseFileTest;
  void TestBody() override {
    test::TempDir dir;
    for (const char* name : {"vocab.json", "merges.txt", "tokenizer_config.json"})
      ASSERT_EQ(::symlink((tokenizer_dir() + "/" + name).c_str(), dir.file(name).c_str()), 0) << name;
    static const Tokenizer legacy = Tokenizer::load(dir.path());
    for (size_t i = 0; i < cases_.size(); ++i) ASSERT_EQ(legacy.encode(cases_[i].text), cases_[i].ids) << "case " << i;
  }
};

// Edge cases beyond the fixtures, with ids from Hugging Face tokenizers (see
// scripts/make-tokenizer-oracle-cases.py), for the same Qwen2.5 tokenizer.json.
class OracleCasesMatch : public ::testing::Test {
 public:
  void TestBody() override {
    const Json j = read_json_file(GLASS_TOKENIZER_ORACLE_CASES);
    size_t failures = 0;
    const auto& cases = j.at("cases");
    ASSERT_GT(cases.size(), 100u);
    for (size_t i = 0; i < cases.size() && failures < 10; ++i) {
      const std::string text = cases[i].at("text");
      const auto ids = cases[i].at("ids").get<std::vector<int32_t>>();
      if (fast().encode(text) != ids) {
        ++failures;
        ADD_FAILURE() << "oracle case " << i << " " << show(text).substr(0, 200) << ": ids differ";
      }
      if (fast().encode(text, {.fast_split = false}) != ids) {
        ++failures;
        ADD_FAILURE() << "oracle case " << i << " " << show(text).substr(0, 200) << ": PCRE2-path ids differ";
      }
      EXPECT_EQ(fast().decode(ids), cases[i].at("decoded").get<std::string>()) << "oracle case " << i;
    }
  }
};

// Facts about Qwen2.5's tokenizer that other components rely on.
TEST(QwenTokenizer, KnowsItsVocabularyAndSpecialTokens) {
  const Tokenizer& t = fast();
  EXPECT_EQ(t.encode("Hello"), (std::vector<int32_t>{9707}));  // no BOS
  EXPECT_EQ(t.vocab_size(), 151665u);
  EXPECT_EQ(t.token_id("<|endoftext|>"), 151643);
  EXPECT_EQ(t.token_id("<|im_start|>"), 151644);
  EXPECT_EQ(t.token_id("<|im_end|>"), 151645);
  EXPECT_EQ(t.token_id("Ġworld"), 1879);
  EXPECT_EQ(t.token_id("no such token"), -1);
  EXPECT_TRUE(t.is_special(151645));
  EXPECT_FALSE(t.is_special(151657));  // <tool_call> is an added token but not special
  EXPECT_FALSE(t.is_special(9707));
  EXPECT_EQ(t.token_text(1879), "Ġworld");
  EXPECT_EQ(t.token_bytes(1879), " world");
  EXPECT_EQ(t.added_tokens().size(), 22u);
}

TEST(QwenTokenizer, SpecialTokensAsPlainTextWhenAsked) {
  const Tokenizer& t = fast();
  const std::string chat = "<|im_start|>user\nhi<|im_end|><tool_call>";
  const auto parsed = t.encode(chat);
  EXPECT_EQ(parsed.front(), 151644);
  EXPECT_EQ(parsed.back(), 151657);
  const auto plain = t.encode(chat, {.parse_special = false});
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 151644), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 151645), 0);
  EXPECT_EQ(plain.back(), 151657);  // not special: still recognised, as in Hugging Face
  EXPECT_EQ(t.decode(plain), chat);
  EXPECT_EQ(t.decode(parsed, true), "user\nhi<tool_call>");
}

// Invalid UTF-8 becomes U+FFFD before encoding: the ids are Hugging Face's ids for the
// repaired text (from the oracle cases), and no byte disappears without a trace.
TEST(QwenTokenizer, InvalidUtf8EncodesAsReplacementCharacters) {
  const Json j = read_json_file(GLASS_TOKENIZER_ORACLE_CASES);
  std::map<std::string, std::vector<int32_t>> oracle;
  for (const Json& c : j.at("cases")) oracle[c.at("text").get<std::string>()] = c.at("ids").get<std::vector<int32_t>>();
  const std::vector<std::pair<std::string, std::string>> raw_and_repaired = {
      {"\xFF", "\uFFFD"},
      {"a\x80" "b", "a\uFFFDb"},
      {"x\xE4\xBD\xFFy", "x\uFFFD\uFFFDy"},
      {"\xC0\xAF\xFF", "\uFFFD\uFFFD\uFFFD"},
      {" \xE4\xBD", " \uFFFD"},
      {"\xE4\xBD\xA0\xE5\xA5\xE5\xA5\xBD", "\u4F60\uFFFD\u597D"},
  };
  for (const auto& [raw, repaired] : raw_and_repaired) {
    ASSERT_TRUE(oracle.count(repaired)) << show(repaired) << " is not among the oracle cases";
    EXPECT_EQ(fast().encode(raw), oracle[repaired]) << show(repaired);
    EXPECT_EQ(fast().decode(fast().encode(raw)), repaired);
  }
}

TEST(QwenTokenizer, StreamingHoldsAnEmojiSplitAcrossTokens) {
  const Tokenizer& t = fast();
  const auto ids = t.encode(" 🤗");  // " \xF0\x9F", "\xA4", "\x97"
  ASSERT_EQ(ids.size(), 3u);
  StreamingDecoder d(t);
  EXPECT_EQ(d.push(ids[0]), " ");
  EXPECT_EQ(d.push(ids[1]), "");
  EXPECT_EQ(d.push(ids[2]), "🤗");
}

TEST(QwenTokenizer, ConcurrentEncodesAgree) {
  std::vector<std::string> texts;
  for (const auto& f : test::fixture_files("tokenizer-cases"))
    for (const Case& c : read_cases(f)) texts.push_back(c.text);
  std::string joined;
  for (const auto& s : texts) joined += s + "\n";
  const auto expected = fast().encode(joined);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&] {
      for (int r = 0; r < 3; ++r)
        if (fast().encode(joined) != expected) ++mismatches;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

template <class T>
void register_test(const char* suite, const std::string& file) {
  const std::string name = file.substr(file.find_last_of('/') + 1);
  ::testing::RegisterTest(suite, name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [file]() -> ::testing::Test* { return new T(file); });
}

}  // namespace
}  // namespace glass

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const auto files = glass::test::fixture_files("tokenizer-cases");
  if (files.empty()) {
    std::fprintf(stderr, "no tokenizer cases (tokenizer-cases/*.json) under %s\n", glass::test::fixtures_root().c_str());
    return 1;
  }
  // The oracle cases were made with Qwen2.5's tokenizer.json; other fixture sets may hold another.
  if (glass::read_text_file(glass::tokenizer_dir() + "/tokenizer.json").size() == GLASS_TOKENIZER_ORACLE_BYTES)
    ::testing::RegisterTest("TokenizerOracle", "hf_oracle_cases", nullptr, nullptr, __FILE__, __LINE__,
                            []() -> ::testing::Test* { return new glass::OracleCasesMatch(); });
  for (const auto& f : files) {
    glass::register_test<glass::IdsMatch>("TokenizerIds", f);
    glass::register_test<glass::DecodeMatches>("TokenizerDecode", f);
    glass::register_test<glass::StreamingMatches>("TokenizerStreaming", f);
    glass::register_test<glass::Pcre2PathMatches>("TokenizerPcre2Path", f);
    glass::register_test<glass::LegacyFilesMatch>("TokenizerLegacyFiles", f);
  }
  return RUN_ALL_TESTS();
}
