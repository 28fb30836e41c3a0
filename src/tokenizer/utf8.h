// UTF-8 helpers for the tokenizer: validation, lossy repair and incremental completion.
//
// Invalid input is repaired the way Rust's String::from_utf8_lossy and the WHATWG
// decoder do it (Unicode's "substitution of maximal subparts"): each maximal prefix of
// a would-be sequence that cannot be completed becomes one U+FFFD. The tokenizer encodes
// repaired text and the decoder repairs its byte output, so both sides agree with
// Hugging Face tokenizers given the same (lossily decoded) string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace glass::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// What starts at a position: a whole character, the start of one cut off by the end of
// the text, or bytes that can never form a character.
enum class SequenceKind { kComplete, kTruncated, kInvalid };

struct Sequence {
  SequenceKind kind;
  size_t length;  // bytes: the character; the truncated prefix; the maximal invalid subpart (>= 1)
};

// Classifies the bytes at `p` (n >= 1 bytes available).
Sequence classify(const unsigned char* p, size_t n);

bool is_valid(std::string_view text);

// Appends `bytes` to `out` with every invalid or truncated sequence replaced by U+FFFD.
void append_lossy(std::string& out, std::string_view bytes);
std::string to_valid(std::string_view bytes);

// Appends the valid, complete prefix of `bytes` (invalid sequences replaced by U+FFFD)
// and returns how many bytes it consumed; a truncated sequence at the very end is left
// unconsumed because the next bytes may complete it.
size_t append_complete_prefix(std::string& out, std::string_view bytes);

// Encodes a code point (<= 0x10FFFF, not a surrogate).
void append(std::string& out, uint32_t cp);

// Terminal columns a character, or valid UTF-8 text, takes: 2 for East Asian wide
// characters and emoji, 0 for combining marks and controls, 1 otherwise (utf8proc's
// character widths); for aligning tables.
size_t char_width(uint32_t cp);
size_t display_width(std::string_view valid_text);

// Decodes one character of valid UTF-8 at `p` and advances `p`. Undefined on invalid input.
inline uint32_t decode_valid(const char*& p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  const unsigned char b0 = u[0];
  if (b0 < 0x80) {
    p += 1;
    return b0;
  }
  if (b0 < 0xE0) {
    p += 2;
    return (uint32_t(b0 & 0x1F) << 6) | (u[1] & 0x3F);
  }
  if (b0 < 0xF0) {
    p += 3;
    return (uint32_t(b0 & 0x0F) << 12) | (uint32_t(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
  }
  p += 4;
  return (uint32_t(b0 & 0x07) << 18) | (uint32_t(u[1] & 0x3F) << 12) | (uint32_t(u[2] & 0x3F) << 6) | (u[3] & 0x3F);
}

// Length of the character whose valid UTF-8 encoding starts with `lead`.
inline size_t length_from_lead(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

}  // namespace glass::utf8
