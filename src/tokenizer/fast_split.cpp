#include "tokenizer/fast_split.h"

#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace glass {

const char kQwen2SplitPattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char kCl100kSplitPattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char kGpt2SplitPattern[] = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::optional<FastSplitter> FastSplitter::recognize(std::string_view pattern) {
  if (pattern == kQwen2SplitPattern) return FastSplitter(1);
  if (pattern == kCl100kSplitPattern) return FastSplitter(3);
  return std::nullopt;
}

namespace {

// Character kinds the pattern distinguishes. Every character is exactly one of letter,
// number, space or other; newline (\r, \n) is a space too.
enum : uint8_t { kLetter = kCharLetter, kNumber = kCharNumber, kSpace = kCharSpace, kNewline = 16 };

struct Scanner {
  const UnicodeTable& table;
  const char* begin;
  const char* end;

  // Kind of the character at `p` (< end); `len` receives its byte length.
  uint8_t kind(const char* p, size_t& len) const {
    const auto b = static_cast<unsigned char>(*p);
    if (b < 0x80) {
      len = 1;
      const uint8_t f = table.flags(b) & (kLetter | kNumber | kSpace);
      return (b == '\r' || b == '\n') ? static_cast<uint8_t>(f | kNewline) : f;
    }
    const char* q = p;
    const uint32_t cp = utf8::decode_valid(q);
    len = static_cast<size_t>(q - p);
    return table.flags(cp) & (kLetter | kNumber | kSpace);
  }
  uint8_t kind_at(const char* p) const {
    size_t len;
    return p < end ? kind(p, len) : 0;
  }
  // Skips characters whose kind has one of `mask`'s bits.
  const char* skip(const char* p, uint8_t mask) const {
    while (p < end) {
      size_t len;
      if (!(kind(p, len) & mask)) break;
      p += len;
    }
    return p;
  }
  // Skips characters that are not letters, numbers or spaces.
  const char* skip_other(const char* p) const {
    while (p < end) {
      size_t len;
      if (kind(p, len) & (kLetter | kNumber | kSpace)) break;
      p += len;
    }
    return p;
  }

  // Length of a contraction ('s 't 're 've 'm 'll 'd, any case) at `p`, which holds '\''.
  size_t contraction(const char* p) const {
    const size_t left = static_cast<size_t>(end - p);
    if (left < 2) return 0;
    const auto c1 = static_cast<unsigned char>(p[1] | 0x20);  // only 'S' and 's' give 's', etc.
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    // U+017F LATIN SMALL LETTER LONG S folds to 's' under Unicode caseless matching.
    if (left >= 3 && static_cast<unsigned char>(p[1]) == 0xC5 && static_cast<unsigned char>(p[2]) == 0xBF) return 3;
    if (left >= 3) {
      const auto r1 = static_cast<unsigned char>(p[1]), r2 = static_cast<unsigned char>(p[2]);
      auto is = [](unsigned char c, char lower) { return c == static_cast<unsigned char>(lower) || c == static_cast<unsigned char>(lower - 32); };
      if ((is(r1, 'r') && is(r2, 'e')) || (is(r1, 'v') && is(r2, 'e')) || (is(r1, 'l') && is(r2, 'l'))) return 3;
    }
    return 0;
  }
};

}  // namespace

void FastSplitter::find_all(std::string_view text, std::vector<MatchSpan>& out) const {
  Scanner s{UnicodeTable::get(), text.data(), text.data() + text.size()};
  const char* p = s.begin;
  const char* const end = s.end;
  while (p < end) {
    const char* start = p;
    size_t len0;
    const uint8_t k0 = s.kind(p, len0);
    const char* next = p + len0;
    const char* stop = nullptr;

    if (*p == '\'') {  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
      const size_t n = s.contraction(p);
      if (n != 0) stop = p + n;
    }
    if (stop == nullptr) {
      if (k0 & kLetter) {  // \p{L}+
        stop = s.skip(next, kLetter);
      } else if (!(k0 & (kNumber | kNewline)) && (s.kind_at(next) & kLetter)) {
        // [^\r\n\p{L}\p{N}]\p{L}+
        stop = s.skip(next, kLetter);
      } else if (k0 & kNumber) {  // \p{N} or \p{N}{1,3}
        stop = next;
        for (int d = 1; d < max_digits_ && stop < end; ++d) {
          size_t len;
          if (!(s.kind(stop, len) & kNumber)) break;
          stop += len;
        }
      } else if (!(k0 & kSpace) || (*p == ' ' && next < end && !(s.kind_at(next) & (kLetter | kNumber | kSpace)))) {
        // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
        const char* q = (k0 & kSpace) ? next : p;
        q = s.skip_other(q);
        stop = s.skip(q, kNewline);
      } else {
        // A run of spaces: `\s*[\r\n]+` takes it up to its last newline; else
        // `\s+(?!\S)` leaves its last space for the next match; else `\s+`.
        const char* run_end = p;
        const char* after_newline = nullptr;
        const char* last_start = p;
        while (run_end < end) {
          size_t len;
          const uint8_t k = s.kind(run_end, len);
          if (!(k & kSpace)) break;
          last_start = run_end;
          run_end += len;
          if (k & kNewline) after_newline = run_end;
        }
        if (after_newline != nullptr) {
          stop = after_newline;
        } else if (run_end == end || last_start == p) {
          stop = run_end;
        } else {
          stop = last_start;
        }
      }
    }
    out.push_back({static_cast<size_t>(start - s.begin), static_cast<size_t>(stop - s.begin)});
    p = stop;
  }
}

}  // namespace glass
