// GPT-2's byte-level alphabet: every byte is shown as one printable character, so a
// vocabulary of strings can hold arbitrary bytes. Bytes 33-126, 161-172 and 174-255 stand
// for themselves; the other 68 map, in order, to U+0100 upwards (space is U+0120 'Ġ').
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace glass::byte_level {

// The code point that stands for `byte`.
uint32_t char_of_byte(uint8_t byte);

// The byte a code point stands for, or nothing if it is not in the alphabet.
std::optional<uint8_t> byte_of_char(uint32_t cp);

// `bytes` written in the alphabet (what the vocabulary's strings look like).
std::string encode(std::string_view bytes);

// The bytes a vocabulary string stands for, if every character of `piece` (valid
// UTF-8) is in the alphabet.
std::optional<std::string> decode(std::string_view piece);

}  // namespace glass::byte_level
