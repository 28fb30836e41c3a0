#include <gtest/gtest.h>

#include <set>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace glass {
namespace {

TEST(ByteLevel, MapsBytesLikeGpt2) {
  EXPECT_EQ(byte_level::char_of_byte('A'), uint32_t('A'));
  EXPECT_EQ(byte_level::char_of_byte(' '), 0x120u);   // Ġ
  EXPECT_EQ(byte_level::char_of_byte('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(byte_level::char_of_byte(0x00), 0x100u);  // Ā
  EXPECT_EQ(byte_level::char_of_byte(0x7F), 0x121u);
  EXPECT_EQ(byte_level::char_of_byte(0xAD), 0x143u);  // the last of the 68 remapped bytes
  EXPECT_EQ(byte_level::char_of_byte(0xE4), 0xE4u);
  EXPECT_EQ(byte_level::encode(" world"), "Ġworld");
  EXPECT_EQ(byte_level::encode("你"), "ä½ł");
}

TEST(ByteLevel, RoundTripsEveryByte) {
  std::set<uint32_t> seen;
  std::string all;
  for (int b = 0; b < 256; ++b) {
    const uint32_t c = byte_level::char_of_byte(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(c).second) << "byte " << b << " shares its character";
    EXPECT_EQ(byte_level::byte_of_char(c), static_cast<uint8_t>(b));
    all += static_cast<char>(b);
  }
  EXPECT_EQ(byte_level::decode(byte_level::encode(all)), all);
}

TEST(ByteLevel, DecodeRejectsCharactersOutsideTheAlphabet) {
  EXPECT_FALSE(byte_level::decode("<|im end|>").has_value());  // a raw space is not in the alphabet
  EXPECT_FALSE(byte_level::decode("ŉ").has_value());            // U+0149, past the alphabet
  EXPECT_FALSE(byte_level::decode("\xFF").has_value());          // not UTF-8 at all
  EXPECT_EQ(byte_level::decode("<|im_end|>"), "<|im_end|>");
  EXPECT_FALSE(byte_level::byte_of_char(0x20).has_value());
}

}  // namespace
}  // namespace glass
