// glass serve's line per completion request on stderr: the same fields whether the
// response was streamed or whole, the time in three significant digits.
//   POST /v1/chat/completions 200: prompt 31 + 8 tokens, eos, 0.0444 s
//   POST /v1/completions 200 (stream): prompt 5 + 3 tokens, client disconnected, 1.20 s
#pragma once

#include <cstddef>
#include <string>

namespace glass::server {

struct RequestLogEntry {
  std::string route;  // "POST /v1/chat/completions"
  int status = 200;
  bool stream = false;
  size_t prompt_tokens = 0;
  size_t completion_tokens = 0;
  std::string outcome;  // the finish reason ("eos", "length"), "client disconnected" or "error: ..."
  double seconds = 0;
};

std::string request_log_line(const RequestLogEntry& entry);

// Seconds with three significant digits, never in exponent notation ("0.0444 s",
// "1.20 s", "123 s", "4568 s").
std::string format_seconds(double seconds);

}  // namespace glass::server
