#include <gtest/gtest.h>

#include "replacement_char.h"
#include "tokenizer/utf8.h"

namespace glass {
namespace {

using test::R;

TEST(Utf8, DisplayWidthCountsTerminalColumns) {
  EXPECT_EQ(utf8::display_width(""), 0u);
  EXPECT_EQ(utf8::display_width("market"), 6u);
  EXPECT_EQ(utf8::display_width("\xE3\x82\xAF\xE3\x83\x88"), 4u);   // クト: wide
  EXPECT_EQ(utf8::display_width("e\xCC\x81"), 1u);                    // e + combining acute
  EXPECT_EQ(utf8::display_width("\xD7\x94\xD7\x9E"), 2u);            // Hebrew: narrow
}

TEST(Utf8, ClassifiesSequences) {
  auto kind = [](std::string_view s) {
    return utf8::classify(reinterpret_cast<const unsigned char*>(s.data()), s.size());
  };
  EXPECT_EQ(kind("a").kind, utf8::SequenceKind::kComplete);
  EXPECT_EQ(kind("\xE4\xBD\xA0").length, 3u);
  EXPECT_EQ(kind("\xF0\x9F\x98\x80").length, 4u);
  EXPECT_EQ(kind("\xE4\xBD").kind, utf8::SequenceKind::kTruncated);
  EXPECT_EQ(kind("\xE4\xBD").length, 2u);
  EXPECT_EQ(kind("\xE4" "a").kind, utf8::SequenceKind::kInvalid);
  EXPECT_EQ(kind("\xE4" "a").length, 1u);
  EXPECT_EQ(kind("\x80").kind, utf8::SequenceKind::kInvalid);
  EXPECT_EQ(kind("\xC0\xAF").kind, utf8::SequenceKind::kInvalid);      // overlong
  EXPECT_EQ(kind("\xED\xA0\x80").kind, utf8::SequenceKind::kInvalid);  // surrogate
  EXPECT_EQ(kind("\xF4\x90\x80\x80").kind, utf8::SequenceKind::kInvalid);  // above U+10FFFF
  EXPECT_EQ(kind("\xE0\x80\x80").kind, utf8::SequenceKind::kInvalid);  // overlong 3-byte
}

TEST(Utf8, ValidatesLongAndShortText) {
  EXPECT_TRUE(utf8::is_valid(""));
  EXPECT_TRUE(utf8::is_valid("plain ascii text, long enough for the 8-byte path"));
  EXPECT_TRUE(utf8::is_valid("中文 and emoji 😀 mixed ✓"));
  EXPECT_FALSE(utf8::is_valid("ascii ascii ascii \xFF ascii"));
  EXPECT_FALSE(utf8::is_valid("cut short \xE4\xBD"));
  EXPECT_TRUE(utf8::is_valid(std::string("nul\0inside", 10)));
}

TEST(Utf8, RepairsWithMaximalSubparts) {
  // The example of Unicode 15, section 3.9, table 3-8.
  EXPECT_EQ(utf8::to_valid("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + R + R + R + "b" + R + "c" + R + R + "d");
  EXPECT_EQ(utf8::to_valid("\xFF"), R);
  EXPECT_EQ(utf8::to_valid("x\xE4\xBD\xFFy"), "x" + R + R + "y");
  EXPECT_EQ(utf8::to_valid("\xC0\xAF\xFF"), R + R + R);
  EXPECT_EQ(utf8::to_valid("\xF0\x9F\x98"), R);
  EXPECT_EQ(utf8::to_valid("\xED\xA0\x80"), R + R + R);
  EXPECT_EQ(utf8::to_valid("ok"), "ok");
}

TEST(Utf8, CompletePrefixHoldsBackATruncatedTail) {
  std::string out;
  EXPECT_EQ(utf8::append_complete_prefix(out, "ab\xF0\x9F"), 2u);
  EXPECT_EQ(out, "ab");
  out.clear();
  EXPECT_EQ(utf8::append_complete_prefix(out, "\xF0\x9F\x98\x80!"), 5u);
  EXPECT_EQ(out, "😀!");
  out.clear();
  // An invalid sequence is final: replaced at once.
  EXPECT_EQ(utf8::append_complete_prefix(out, "a\xFF\xE4"), 2u);
  EXPECT_EQ(out, "a" + R);
}

TEST(Utf8, AppendsCodePoints) {
  std::string s;
  for (uint32_t cp : {0x24u, 0xA2u, 0x20ACu, 0x10348u}) utf8::append(s, cp);
  EXPECT_EQ(s, "$¢€𐍈");
  const char* p = s.data();
  EXPECT_EQ(utf8::decode_valid(p), 0x24u);
  EXPECT_EQ(utf8::decode_valid(p), 0xA2u);
  EXPECT_EQ(utf8::decode_valid(p), 0x20ACu);
  EXPECT_EQ(utf8::decode_valid(p), 0x10348u);
  EXPECT_EQ(p, s.data() + s.size());
}

}  // namespace
}  // namespace glass
