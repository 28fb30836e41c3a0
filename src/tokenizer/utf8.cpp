#include "tokenizer/utf8.h"

#include <cstring>

#include <utf8proc.h>

namespace glass::utf8 {

Sequence classify(const unsigned char* p, size_t n) {
  const unsigned char b0 = p[0];
  if (b0 < 0x80) return {SequenceKind::kComplete, 1};
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Unicode Table 3-7)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {SequenceKind::kInvalid, 1};
  }
  for (size_t i = 1; i < need; ++i) {
    if (i >= n) return {SequenceKind::kTruncated, i};
    const unsigned char b = p[i];
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return {SequenceKind::kInvalid, i};
  }
  return {SequenceKind::kComplete, need};
}

bool is_valid(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    // Eight ASCII bytes at a time: the common case for code and English.
    if (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const Sequence s = classify(p + i, n - i);
    if (s.kind != SequenceKind::kComplete) return false;
    i += s.length;
  }
  return true;
}

namespace {

// Appends repaired bytes; stops before a truncated tail when `keep_tail`.
size_t append_repaired(std::string& out, std::string_view bytes, bool keep_tail) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0, run = 0;  // [run, i) is valid and not yet copied
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const Sequence s = classify(p + i, n - i);
    if (s.kind == SequenceKind::kComplete) {
      i += s.length;
      continue;
    }
    out.append(bytes.data() + run, i - run);
    if (s.kind == SequenceKind::kTruncated && keep_tail) return i;
    out.append(kReplacement);
    i += s.length;
    run = i;
  }
  out.append(bytes.data() + run, n - run);
  return n;
}

}  // namespace

void append_lossy(std::string& out, std::string_view bytes) { append_repaired(out, bytes, false); }

std::string to_valid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 8);
  append_lossy(out, bytes);
  return out;
}

size_t append_complete_prefix(std::string& out, std::string_view bytes) {
  return append_repaired(out, bytes, true);
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t char_width(uint32_t cp) {
  const int w = utf8proc_charwidth(static_cast<utf8proc_int32_t>(cp));
  return static_cast<size_t>(w > 0 ? w : 0);
}

size_t display_width(std::string_view valid_text) {
  size_t width = 0;
  const char* p = valid_text.data();
  const char* end = p + valid_text.size();
  while (p < end) width += char_width(decode_valid(p));
  return width;
}

}  // namespace glass::utf8
