#include "server/request_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace glass::server {

std::string format_seconds(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return "0 s";
  // Decimals for three significant digits; none past the units, at most microseconds.
  const int magnitude = static_cast<int>(std::floor(std::log10(seconds)));
  const int decimals = std::clamp(2 - magnitude, 0, 6);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f s", decimals, seconds);
  return buf;
}

std::string request_log_line(const RequestLogEntry& e) {
  return str_cat(e.route, " ", e.status, e.stream ? " (stream)" : "", ": prompt ", e.prompt_tokens, " + ",
                 e.completion_tokens, " tokens, ", e.outcome, ", ", format_seconds(e.seconds));
}

}  // namespace glass::server
