// tokenizer.json nested deeper than any tokenizer (issue 15 item 3): error messages
// serialized a wrong value with the recursive dump() and the Sequence parsers recursed
// once per level, so 200,000 levels overflowed the stack. The reader refuses the depth.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "support/test_support.h"
#include "tiny_tokenizer.h"

namespace glass {
namespace {

std::string nested_arrays(size_t depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); }

std::string load_error(const std::string& text) {
  return test::thrown_error([&] { Tokenizer::from_json(text, "deep tokenizer.json"); });
}

TEST(TokenizerLoaderBounds, DeepJsonIsAClearError) {
  const std::string base = test::tiny_tokenizer_json({{"a", "b"}}).dump();
  // Later keys win, so each deep field goes last. added_tokens[0].id and .content are the
  // values the report used.
  const std::string head = base.substr(0, base.size() - 1) + ", ";
  const std::string deep_id =
      head + R"("added_tokens": [{"id": )" + nested_arrays(200000) + R"(, "content": "<x>", "special": true}]})";
  const std::string deep_content =
      head + R"("added_tokens": [{"id": 300, "content": )" + nested_arrays(200000) + R"(, "special": true}]})";
  // A Sequence normalizer inside a Sequence inside ...
  std::string sequences;
  for (int i = 0; i < 100000; ++i) sequences += R"({"type": "Sequence", "normalizers": [)";
  sequences += R"({"type": "NFC"})";
  for (int i = 0; i < 100000; ++i) sequences += "]}";
  const std::string deep_normalizer = head + R"("normalizer": )" + sequences + "}";
  for (const std::string* text : {&deep_id, &deep_content, &deep_normalizer}) {
    const std::string e = load_error(*text);
    EXPECT_NE(e.find("deep tokenizer.json"), std::string::npos) << e.substr(0, 300);
    EXPECT_NE(e.find("levels"), std::string::npos) << e.substr(0, 300);
    EXPECT_LT(e.size(), 400u);
  }
  // The ordinary document still loads.
  EXPECT_NO_THROW(Tokenizer::from_json(base, "tokenizer.json"));
}

}  // namespace
}  // namespace glass
