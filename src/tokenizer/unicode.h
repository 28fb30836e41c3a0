// Per-code-point facts the fast paths need, in one immutable table built once per process.
//
// Letters (\p{L}), numbers (\p{N}) and whitespace (\s) come from PCRE2 itself, so the
// hand-written pre-tokenizer classifies every code point exactly as the general regex
// path does (PCRE2 10.42 and Hugging Face's Oniguruma both use Unicode 14 tables). "NFC-stable" comes from utf8proc: a run of such characters is already in
// NFC, so the normalizer can skip it.
#pragma once

#include <cstdint>
#include <vector>

namespace glass {

enum CharFlag : uint8_t {
  kCharLetter = 1,     // \p{L}
  kCharNumber = 2,     // \p{N}
  kCharSpace = 4,      // \s as PCRE2 (UTF + UCP) matches it, less U+180E (as Oniguruma)
  kCharNfcStable = 8,  // combining class 0, unchanged by NFC, never composes with what precedes it
};

class UnicodeTable {
 public:
  // The process-wide table, built on first use (thread-safe, then read-only).
  static const UnicodeTable& get();

  uint8_t flags(uint32_t cp) const {
    if (cp < 0x80) return ascii_[cp];
    if (cp > 0x10FFFF) return 0;
    return blocks_[(static_cast<uint32_t>(index_[cp >> 8]) << 8) | (cp & 0xFF)];
  }

 private:
  UnicodeTable();
  uint8_t ascii_[128];
  std::vector<uint16_t> index_;  // code point >> 8 -> block number
  std::vector<uint8_t> blocks_;  // 256 flags per distinct block
};

// Unicode White_Space (what Rust's regex `\s` and char::is_whitespace mean): the
// spaces that added tokens' lstrip / rstrip remove.
bool is_white_space(uint32_t cp);

// Rust regex `\w` (Unicode): letters, marks, decimal digits, connector punctuation,
// letter numbers, join controls. Decides added tokens' single_word.
bool is_word_char(uint32_t cp);

}  // namespace glass
