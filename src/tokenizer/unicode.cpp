#include "tokenizer/unicode.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <string_view>
#include <unordered_map>
#include <stdexcept>
#include <string>

#include "tokenizer/utf8.h"

namespace glass {

namespace {

constexpr uint32_t kCodePoints = 0x110000;
constexpr uint32_t kMongolianVowelSeparator = 0x180E;

bool is_surrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// Planes 4-13 are unassigned and planes 15-16 are private use: no letters, numbers or
// spaces there, and nothing that normalizes. Skipping them keeps the build fast.
bool is_scanned(uint32_t cp) { return cp < 0x40000 || (cp >= 0xE0000 && cp < 0xF0000); }

// Marks PCRE2's \p{L}, \p{N} and \s over every scanned code point with one pass of
// one pattern over a text that holds them all in order.
void mark_pcre2_classes(std::vector<uint8_t>& flags) {
  std::string text;
  text.reserve(1 << 20);
  std::vector<uint32_t> cps;     // the code point of each character of `text`
  std::vector<uint32_t> starts;  // its byte offset; one extra entry for the end
  cps.reserve(0x50000);
  starts.reserve(0x50001);
  text.resize(0x50000 * 4);
  size_t size = 0;
  for (uint32_t cp = 0; cp < kCodePoints; ++cp) {
    if (is_surrogate(cp) || !is_scanned(cp)) continue;
    cps.push_back(cp);
    starts.push_back(static_cast<uint32_t>(size));
    char* p = text.data() + size;
    if (cp < 0x80) {
      p[0] = static_cast<char>(cp);
      size += 1;
    } else if (cp < 0x800) {
      p[0] = static_cast<char>(0xC0 | (cp >> 6));
      p[1] = static_cast<char>(0x80 | (cp & 0x3F));
      size += 2;
    } else if (cp < 0x10000) {
      p[0] = static_cast<char>(0xE0 | (cp >> 12));
      p[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      p[2] = static_cast<char>(0x80 | (cp & 0x3F));
      size += 3;
    } else {
      p[0] = static_cast<char>(0xF0 | (cp >> 18));
      p[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      p[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      p[3] = static_cast<char>(0x80 | (cp & 0x3F));
      size += 4;
    }
  }
  text.resize(size);
  starts.push_back(static_cast<uint32_t>(size));
  int error = 0;
  PCRE2_SIZE erroffset = 0;
  static const char kPattern[] = "(\\p{L}+)|(\\p{N}+)|(\\s+)";
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &error, &erroffset, nullptr);
  if (code == nullptr) throw std::runtime_error("unicode table: PCRE2 class pattern does not compile");
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  size_t pos = 0;
  size_t char_index = 0;  // the first character not yet classified
  while (pos < text.size()) {
    const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos, PCRE2_NO_UTF_CHECK,
                               md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const uint8_t flag = ov[2] != PCRE2_UNSET ? kCharLetter : ov[4] != PCRE2_UNSET ? kCharNumber : kCharSpace;
    while (starts[char_index] < ov[0]) ++char_index;
    while (starts[char_index] < ov[1]) flags[cps[char_index++]] |= flag;
    pos = ov[1];
  }
  pcre2_match_data_free(md);
  pcre2_code_free(code);
}

// NFC-stable code points (see kCharNfcStable), from utf8proc's data.
void mark_nfc_stable(std::vector<uint8_t>& flags) {
  std::vector<bool> composes_after(kCodePoints, false);  // may combine with a preceding character
  std::vector<bool> decomposes(kCodePoints, false);      // has a canonical decomposition
  utf8proc_int32_t buf[32];
  for (uint32_t cp = 0x80; cp < kCodePoints; ++cp) {
    if (is_surrogate(cp) || !is_scanned(cp)) continue;
    if (utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->decomp_seqindex == UINT16_MAX &&
        !(cp >= 0xAC00 && cp <= 0xD7A3))
      continue;  // no decomposition (Hangul syllables decompose by algorithm, not by table)
    const utf8proc_ssize_t n =
        utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 32, UTF8PROC_DECOMPOSE, nullptr);
    if (n == 1 && static_cast<uint32_t>(buf[0]) == cp) continue;
    decomposes[cp] = true;
    // Every non-initial character of a canonical decomposition can be a second element
    // of a composition (a superset of the true set, which is safe).
    for (utf8proc_ssize_t i = 1; i < n && i < 32; ++i) composes_after[static_cast<uint32_t>(buf[i])] = true;
  }
  for (uint32_t cp = 0; cp < kCodePoints; ++cp) {
    if (is_surrogate(cp)) continue;
    if (cp < 0x80 || !is_scanned(cp)) {
      flags[cp] |= kCharNfcStable;
      continue;
    }
    const utf8proc_property_t* prop = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
    if (prop->combining_class != 0 || composes_after[cp]) continue;
    bool stable = true;
    if (decomposes[cp] && !(cp >= 0xAC00 && cp <= 0xD7A3)) {  // Hangul syllables recompose to themselves
      std::string one;
      utf8::append(one, cp);
      utf8proc_uint8_t* out = nullptr;
      const utf8proc_ssize_t len =
          utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(one.data()), static_cast<utf8proc_ssize_t>(one.size()),
                       &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
      stable = len >= 0 && std::string_view(reinterpret_cast<const char*>(out), static_cast<size_t>(len)) == one;
      std::free(out);
    }
    if (stable) flags[cp] |= kCharNfcStable;
  }
}

}  // namespace

UnicodeTable::UnicodeTable() {
  std::vector<uint8_t> flags(kCodePoints, 0);
  mark_pcre2_classes(flags);
  // Oniguruma (Hugging Face's regex engine) follows Unicode White_Space for \s; PCRE2
  // also counts U+180E MONGOLIAN VOWEL SEPARATOR, a space before Unicode 6.3. That is
  // the only difference, and Regex works around it the same way.
  flags[kMongolianVowelSeparator] &= static_cast<uint8_t>(~kCharSpace);
  mark_nfc_stable(flags);
  for (uint32_t cp = 0; cp < 128; ++cp) ascii_[cp] = flags[cp];
  // Two-level table: identical 256-code-point blocks are stored once.
  std::unordered_map<std::string_view, uint16_t> seen;
  index_.resize(kCodePoints >> 8);
  for (uint32_t block = 0; block < (kCodePoints >> 8); ++block) {
    const std::string_view key(reinterpret_cast<const char*>(&flags[block << 8]), 256);
    auto [it, inserted] = seen.emplace(key, static_cast<uint16_t>(seen.size()));
    if (inserted) blocks_.insert(blocks_.end(), key.begin(), key.end());
    index_[block] = it->second;
  }
}

const UnicodeTable& UnicodeTable::get() {
  static const UnicodeTable table;
  return table;
}

bool is_white_space(uint32_t cp) {
  switch (cp) {
    case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x2000 && cp <= 0x200A);
  }
}

bool is_word_char(uint32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  if (cp == 0x200C || cp == 0x200D) return true;
  // Alphabetic symbols (circled and squared letters) are \w in Rust's Unicode tables.
  if ((cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
      (cp >= 0x1F170 && cp <= 0x1F189))
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

}  // namespace glass
