// Code point ranges and their UTF-8 encodings as byte-range sequences: a character class
// becomes a few alternatives of 1 to 4 byte sets, so matching is byte by byte.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "grammar/grammar_internal.h"

namespace glass::grammar {

struct CodeRange {
  uint32_t lo, hi;  // inclusive
};

// One UTF-8 encoding pattern: byte set i holds the possible i-th bytes.
using Utf8Sequence = std::vector<detail::ByteSet>;

inline int encode_utf8(uint32_t cp, char* out) {
  if (cp < 0x80) {
    out[0] = static_cast<char>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<char>(0xC0 | (cp >> 6));
    out[1] = static_cast<char>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (cp >> 12));
    out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (cp >> 18));
  out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (cp & 0x3F));
  return 4;
}

// Sorted, merged, surrogates removed, clamped to U+10FFFF.
inline std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> r) {
  std::vector<CodeRange> split;
  for (auto c : r) {
    if (c.lo > c.hi || c.lo > 0x10FFFF) continue;
    c.hi = std::min<uint32_t>(c.hi, 0x10FFFF);
    if (c.lo < 0xD800 && c.hi > 0xDFFF) {
      split.push_back({c.lo, 0xD7FF});
      split.push_back({0xE000, c.hi});
    } else if (c.lo >= 0xD800 && c.hi <= 0xDFFF) {
      continue;
    } else if (c.lo >= 0xD800 && c.lo <= 0xDFFF) {
      split.push_back({0xE000, c.hi});
    } else if (c.hi >= 0xD800 && c.hi <= 0xDFFF) {
      split.push_back({c.lo, 0xD7FF});
    } else {
      split.push_back(c);
    }
  }
  std::sort(split.begin(), split.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
  std::vector<CodeRange> out;
  for (auto c : split) {
    if (!out.empty() && c.lo <= out.back().hi + 1)
      out.back().hi = std::max(out.back().hi, c.hi);
    else
      out.push_back(c);
  }
  return out;
}

// All scalar values not in `r` (normalized).
inline std::vector<CodeRange> complement_ranges(const std::vector<CodeRange>& r) {
  std::vector<CodeRange> out;
  uint32_t next = 0;
  for (auto c : r) {
    if (c.lo > next) out.push_back({next, c.lo - 1});
    next = c.hi + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return normalize_ranges(std::move(out));
}

namespace utf8_detail {
inline void add_range(detail::ByteSet& s, unsigned lo, unsigned hi) {
  for (unsigned b = lo; b <= hi; ++b) s[b >> 6] |= uint64_t{1} << (b & 63);
}
// [lo, hi] within one encoded length, no surrogates.
inline void split(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
  static const uint32_t kBounds[3] = {0x7F, 0x7FF, 0xFFFF};
  for (uint32_t b : kBounds)
    if (lo <= b && hi > b) {
      split(lo, b, out);
      split(b + 1, hi, out);
      return;
    }
  char a[4], z[4];
  int n = encode_utf8(lo, a);
  encode_utf8(hi, z);
  for (int i = 1; i < n; ++i) {
    uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  Utf8Sequence seq(static_cast<size_t>(n), detail::ByteSet{});
  for (int i = 0; i < n; ++i)
    add_range(seq[static_cast<size_t>(i)], static_cast<unsigned char>(a[i]), static_cast<unsigned char>(z[i]));
  out.push_back(std::move(seq));
}
}  // namespace utf8_detail

// The UTF-8 byte patterns of normalized ranges; patterns that differ only in their first
// byte are merged (so [^"] needs about 7 alternatives, ASCII classes exactly one).
inline std::vector<Utf8Sequence> utf8_sequences(const std::vector<CodeRange>& ranges) {
  std::vector<Utf8Sequence> raw;
  for (auto r : ranges) utf8_detail::split(r.lo, r.hi, raw);
  std::vector<Utf8Sequence> out;
  for (auto& s : raw) {
    bool merged = false;
    for (auto& o : out) {
      if (o.size() != s.size() || !std::equal(o.begin() + 1, o.end(), s.begin() + 1)) continue;
      for (int w = 0; w < 4; ++w) o[0][static_cast<size_t>(w)] |= s[0][static_cast<size_t>(w)];
      merged = true;
      break;
    }
    if (!merged) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace glass::grammar
