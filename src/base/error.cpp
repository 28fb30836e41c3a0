#include "base/error.h"

#include <cstdio>

namespace glass {

std::string text_excerpt(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return str_cat(text.substr(0, n), "... (", text.size(), " bytes)");
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return buf;
}

std::string format_count(unsigned long long n) {
  std::string digits = std::to_string(n);
  std::string out;
  int since_comma = static_cast<int>(digits.size() % 3);
  if (since_comma == 0) since_comma = 3;
  for (char c : digits) {
    if (since_comma == 0) {
      out += ',';
      since_comma = 3;
    }
    out += c;
    --since_comma;
  }
  return out;
}

}  // namespace glass
