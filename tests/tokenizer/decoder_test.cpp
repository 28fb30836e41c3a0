#include <gtest/gtest.h>

#include "replacement_char.h"
#include "tiny_tokenizer.h"
#include "support/test_support.h"
#include "tokenizer/utf8.h"

namespace glass {
namespace {

using test::R;

Tokenizer tiny() {
  Json j = test::tiny_tokenizer_json({{"h", "i"}, {"\xF0", "\x9F"}, {"\xF0\x9F", "\x98"}});
  j["added_tokens"] = {test::added_token(400, "<|end|>", true), test::added_token(401, "<tool call>", false)};
  return test::tokenizer_of(j);
}

TEST(Decoder, ByteLevelTokensBecomeBytes) {
  const Tokenizer t = tiny();
  const std::vector<int32_t> ids = t.encode("hi 😀 你");
  EXPECT_EQ(t.decode(ids), "hi 😀 你");
  EXPECT_EQ(t.token_bytes(' '), " ");
  EXPECT_EQ(t.token_text(' '), "Ġ");
  EXPECT_EQ(t.token_bytes(test::id_of(t, "\xF0\x9F\x98")), "\xF0\x9F\x98");
  // An added token with characters outside the alphabet stands for its own UTF-8.
  EXPECT_EQ(t.decode(std::vector<int32_t>{401}), "<tool call>");
}

TEST(Decoder, SkipsSpecialTokensAndIdsWithoutToken) {
  const Tokenizer t = tiny();
  const std::vector<int32_t> ids = {'a', 400, 'b', -5, 399, 100000};
  EXPECT_EQ(t.decode(ids), "a<|end|>b");
  EXPECT_EQ(t.decode(ids, true), "ab");
  EXPECT_FALSE(t.has_token(399));  // a hole between the merges and the added tokens
  EXPECT_EQ(t.vocab_size(), 402u);  // ids 0-258, then 400 and 401
  EXPECT_EQ(t.token_bytes(399), "");
  EXPECT_NE(test::thrown_error([&] { t.token_text(399); }).find("token id 399 has no token"), std::string::npos);
}

TEST(Decoder, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  const Tokenizer t = tiny();
  // Half an emoji, then 'a': the half is one U+FFFD (maximal subpart).
  EXPECT_EQ(t.decode(std::vector<int32_t>{0xF0, 0x9F, 'a'}), R + "a");
  EXPECT_EQ(t.decode(std::vector<int32_t>{0xFF, 0xFE}), R + R);
  EXPECT_EQ(t.decode(std::vector<int32_t>{0xE4, 0xBD}), R);
}

TEST(StreamingDecoder, ReleasesOnlyWholeCharacters) {
  const Tokenizer t = tiny();
  StreamingDecoder d(t);
  EXPECT_EQ(d.push(0xF0), "");
  EXPECT_EQ(d.pending_bytes(), 1u);
  EXPECT_EQ(d.push(0x9F), "");
  EXPECT_EQ(d.push(0x98), "");
  EXPECT_EQ(d.push(0x80), "😀");
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.push('x'), "x");
  // A token that completes one character and starts the next.
  const int32_t f09f98 = test::id_of(t, "\xF0\x9F\x98");
  EXPECT_EQ(d.push(0xE4), "");
  EXPECT_EQ(d.push(0xBD), "");
  EXPECT_EQ(d.push(0xA0), "你");
  EXPECT_EQ(d.push(f09f98), "");
  EXPECT_EQ(d.push(0x81), "😁");
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamingDecoder, InvalidBytesAreReplacedAtOnceAndTruncatedOnesAtFlush) {
  const Tokenizer t = tiny();
  StreamingDecoder d(t);
  EXPECT_EQ(d.push(0xFF), R);
  EXPECT_EQ(d.push(0xE4), "");
  EXPECT_EQ(d.push('a'), R + "a");  // the cut-off sequence is final once 'a' arrives
  EXPECT_EQ(d.push(0xF0), "");
  EXPECT_EQ(d.flush(), R);
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.push('b'), "b");  // usable after flush
}

TEST(StreamingDecoder, SkipsSpecialTokensWhenAsked) {
  const Tokenizer t = tiny();
  StreamingDecoder keep(t), skip(t, true);
  std::string a, b;
  for (int32_t id : std::vector<int32_t>{'h', 400, 'i', 99999}) {
    a += keep.push(id);
    b += skip.push(id);
  }
  EXPECT_EQ(a + keep.flush(), "h<|end|>i");
  EXPECT_EQ(b + skip.flush(), "hi");
}

}  // namespace
}  // namespace glass
