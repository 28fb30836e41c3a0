#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace glass::byte_level {

namespace {

bool stands_for_itself(uint32_t b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); }

struct Tables {
  std::array<uint32_t, 256> char_of_byte{};
  std::array<int16_t, 324> byte_of_char{};  // code points 0..323 cover the whole alphabet
  Tables() {
    byte_of_char.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      char_of_byte[b] = stands_for_itself(b) ? b : next++;
      byte_of_char[char_of_byte[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t char_of_byte(uint8_t byte) { return tables().char_of_byte[byte]; }

std::optional<uint8_t> byte_of_char(uint32_t cp) {
  if (cp >= tables().byte_of_char.size()) return std::nullopt;
  const int16_t b = tables().byte_of_char[cp];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8::append(out, char_of_byte(static_cast<uint8_t>(c)));
  return out;
}

std::optional<std::string> decode(std::string_view piece) {
  if (!utf8::is_valid(piece)) return std::nullopt;
  std::string out;
  out.reserve(piece.size());
  const char* p = piece.data();
  const char* end = p + piece.size();
  while (p < end) {
    const auto b = byte_of_char(utf8::decode_valid(p));
    if (!b) return std::nullopt;
    out += static_cast<char>(*b);
  }
  return out;
}

}  // namespace glass::byte_level
