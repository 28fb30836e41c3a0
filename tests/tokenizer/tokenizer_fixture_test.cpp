// Every case in every tokenizer-cases/*.json (ids and decoded text from Hugging Face
// tokenizers) against the tokenizer in qwen2.5-tokenizer/, discovered at run time from
// GLASS_FIXTURES: ids, decode, streaming decode, the PCRE2 path against the fast
// splitter, and the vocab.json + merges.txt fallback.
#include <gtest/gtest.h>

#include <unistd.h>

#include <memory>

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
