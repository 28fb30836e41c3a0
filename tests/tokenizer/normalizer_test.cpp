#include <gtest/gtest.h>

#include <random>

#include "tokenizer/normalizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace glass {
namespace {

const Normalizer nfc(Normalizer::Form::kNfc);

std::string apply(std::string_view s) {
  std::string storage;
  return std::string(nfc.apply(s, storage));
}

TEST(Normalizer, ComposesToNfc) {
  EXPECT_EQ(apply("e\u0301"), "\u00e9");
  EXPECT_EQ(apply("\u212b"), "\u00c5");                      // ANGSTROM SIGN is a singleton
  EXPECT_EQ(apply("\u1100\u1161\u11a8"), "\uac01");          // Hangul jamo L V T
  EXPECT_EQ(apply("\uac00\u11a8"), "\uac01");                // LV + T
  EXPECT_EQ(apply("a\u0323\u0307"), "\u1ea1\u0307");         // canonical reordering, then composition
  EXPECT_EQ(apply("q\u0307\u0323"), "q\u0323\u0307");        // reordered, nothing composes with q
  EXPECT_EQ(apply("\ufb01"), "\ufb01");                      // compatibility only: NFC keeps it
  EXPECT_EQ(apply("abc e\u0301 def \u0958"), "abc \u00e9 def \u0915\u093c");
}

TEST(Normalizer, LeavesNfcTextInPlace) {
  const std::string text = "Hello, 世界! 😀 \u00e9 한국어";
  std::string storage;
  const std::string_view out = nfc.apply(text, storage);
  EXPECT_EQ(out.data(), text.data()) << "already-NFC text must not be copied";
  EXPECT_TRUE(storage.empty());
  const Normalizer none;
  EXPECT_EQ(none.apply("e\u0301", storage), "e\u0301");
}

TEST(Normalizer, KeepsNulAndAsciiControls) {
  const std::string text("a\0b\u0307\x01", 6);
  EXPECT_EQ(apply(text), std::string("a\0\u1e03\x01", 6));
}

// The fast path (copy stable text, utf8proc only around unstable runs) against utf8proc
// on the whole text, over random text rich in combining marks, jamo and singletons.
TEST(Normalizer, MatchesUtf8procOnRandomText) {
  const std::vector<uint32_t> alphabet = {'a', 'e', 'o', ' ', 0x301, 0x308, 0x323, 0x327, 0x1100, 0x1161, 0x11a8,
                                          0xac00, 0x212b, 0xc5, 0xe9, 0x4e00, 0x915, 0x93c, 0x958, 0x344, 0x0b47,
                                          0x0b3e, 0x0b57, 0x1f600, 0x3099, 0x304b, 0x1d15e};
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) utf8::append(s, alphabet[rng() % alphabet.size()]);
    ASSERT_EQ(apply(s), nfc_reference(s)) << "text " << ::testing::PrintToString(s);
  }
}

TEST(UnicodeTable, ClassifiesLikePcre2WithWhiteSpaceForS) {
  const UnicodeTable& t = UnicodeTable::get();
  EXPECT_TRUE(t.flags('a') & kCharLetter);
  EXPECT_TRUE(t.flags(0x4e2d) & kCharLetter);   // 中
  EXPECT_TRUE(t.flags(0x2b) == kCharNfcStable);  // '+': no class
  EXPECT_TRUE(t.flags('7') & kCharNumber);
  EXPECT_TRUE(t.flags(0xbd) & kCharNumber);     // ½ (No)
  EXPECT_TRUE(t.flags(0x216b) & kCharNumber);   // Ⅻ (Nl)
  EXPECT_TRUE(t.flags(0x3000) & kCharSpace);
  EXPECT_TRUE(t.flags(0x85) & kCharSpace);
  EXPECT_FALSE(t.flags(0x180e) & kCharSpace);   // PCRE2 says space; Oniguruma and Unicode do not
  EXPECT_FALSE(t.flags(0x200b) & kCharSpace);
  EXPECT_FALSE(t.flags(0x301) & kCharNfcStable);
  EXPECT_FALSE(t.flags(0x1161) & kCharNfcStable);
  EXPECT_FALSE(t.flags(0x212b) & kCharNfcStable);
  EXPECT_TRUE(t.flags(0xe9) & kCharNfcStable);
  EXPECT_TRUE(t.flags(0xac00) & kCharNfcStable);
  EXPECT_EQ(t.flags(0x110000), 0);
  for (uint32_t cp = 0; cp < 0x3000; ++cp)
    ASSERT_EQ(bool(t.flags(cp) & kCharSpace), is_white_space(cp)) << std::hex << cp;
}

TEST(UnicodeTable, WordCharactersFollowRustRegex) {
  EXPECT_TRUE(is_word_char('a'));
  EXPECT_TRUE(is_word_char('_'));
  EXPECT_TRUE(is_word_char('9'));
  EXPECT_TRUE(is_word_char(0x4e2d));
  EXPECT_TRUE(is_word_char(0x301));  // marks are word characters
  EXPECT_TRUE(is_word_char(0x24b6)); // Ⓐ is Alphabetic
  EXPECT_FALSE(is_word_char('-'));
  EXPECT_FALSE(is_word_char(' '));
  EXPECT_FALSE(is_word_char(0x1f600));
}

}  // namespace
}  // namespace glass
