// glass serve's line per request on stderr, as text (the default) or one JSON object a
// line (--log-format json), for a log collector.
//
// Text: the same fields whether the response was streamed or whole, the time in three
// significant digits; requests refused before they ran say why.
//   POST /v1/chat/completions 200: prompt 31 + 8 tokens, eos, 0.0444 s
//   POST /v1/completions 200 (stream): prompt 5 + 3 tokens, client disconnected, 1.20 s
//   POST /v1/completions 401: Incorrect API key provided
// JSON: every key on every line, null where it does not apply:
//   {"time": "2025-05-01T12:00:00.123Z", "request_id": "chatcmpl-...", "method": "POST",
//    "route": "/v1/chat/completions", "status": 200, "stream": false, "prompt_tokens": 31,
//    "completion_tokens": 8, "finish_reason": "eos", "error": null,
//    "first_token_seconds": 0.0121, "total_seconds": 0.0444}
// "time" is when the line was written (the request's end); finish reasons are glass's
// names (eos, stop_string, length, context).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace glass::server {

enum class LogFormat { text, json };

// "text" or "json"; throws glass::Error naming --log-format otherwise.
LogFormat parse_log_format(std::string_view name);

// The error of a request whose client went away before its end.
inline constexpr std::string_view kClientDisconnected = "client disconnected";

struct RequestLogEntry {
  std::string method;         // "POST"; "-" when the request line never came whole
  std::string path;           // "/v1/chat/completions"; "-" likewise
  std::optional<int> status;  // none: the connection ended without a response
  std::string request_id;     // the completion id; empty for requests that have none
  bool stream = false;
  // Set for a request that reached the scheduler.
  std::optional<size_t> prompt_tokens;
  size_t completion_tokens = 0;
  std::string finish_reason;  // glass's name; empty when it did not finish
  // Why it did not finish (kClientDisconnected, the generation's error), or why it was
  // refused.
  std::string error;
  std::optional<double> first_token_seconds;
  std::optional<double> seconds;  // arrival to end
};

std::string request_log_text(const RequestLogEntry& entry);
// One line of JSON, no newline; `time` is written in ISO 8601, UTC, milliseconds.
std::string request_log_json(const RequestLogEntry& entry, std::chrono::system_clock::time_point time);

// "2025-05-01T12:00:00.123Z".
std::string iso8601_utc(std::chrono::system_clock::time_point time);

// Seconds with three significant digits, never in exponent notation ("0.0444 s",
// "1.20 s", "123 s", "4568 s").
std::string format_seconds(double seconds);

// Writes entries to stderr, one line each (stdio locks the stream per call, so lines from
// handler threads never interleave); nothing when disabled (--quiet).
class RequestLog {
 public:
  RequestLog(LogFormat format, bool enabled) : format_(format), enabled_(enabled) {}
  void write(const RequestLogEntry& entry) const;

 private:
  LogFormat format_;
  bool enabled_;
};

}  // namespace glass::server
