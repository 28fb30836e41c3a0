#include "server/request_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "base/error.h"
#include "server/openai_response.h"

namespace glass::server {

LogFormat parse_log_format(std::string_view name) {
  if (name == "text") return LogFormat::text;
  if (name == "json") return LogFormat::json;
  fail("--log-format: '", name, "' is not one of text, json");
}

std::string format_seconds(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return "0 s";
  // Decimals for three significant digits; none past the units, at most microseconds.
  const int magnitude = static_cast<int>(std::floor(std::log10(seconds)));
  const int decimals = std::clamp(2 - magnitude, 0, 6);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f s", decimals, seconds);
  return buf;
}

std::string iso8601_utc(std::chrono::system_clock::time_point time) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(time.time_since_epoch()).count();
  const std::time_t whole = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  std::tm utc{};
  gmtime_r(&whole, &utc);
  char buf[96];  // ints of any size fit; a real date takes 24
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms - static_cast<int64_t>(whole) * 1000));
  return buf;
}

std::string request_log_text(const RequestLogEntry& e) {
  // "POST /v1/models 401: ..."; a connection dropped without a status: "- - connection closed: ...".
  if (!e.status) return str_cat(e.method, " ", e.path, " ", e.error);
  const std::string head = str_cat(e.method, " ", e.path, " ", *e.status);
  if (!e.prompt_tokens) return str_cat(head, ": ", e.error);
  const std::string outcome = !e.finish_reason.empty() ? e.finish_reason
                              : e.error == kClientDisconnected ? e.error
                                                               : "error: " + e.error;
  return str_cat(head, e.stream ? " (stream)" : "", ": prompt ", *e.prompt_tokens, " + ", e.completion_tokens, " tokens, ",
                 outcome, ", ", format_seconds(e.seconds.value_or(0)));
}

std::string request_log_json(const RequestLogEntry& e, std::chrono::system_clock::time_point time) {
  auto text_or_null = [](const std::string& s) { return s.empty() ? OJson(nullptr) : OJson(s); };
  OJson j = {{"time", iso8601_utc(time)},
             {"request_id", text_or_null(e.request_id)},
             {"method", e.method},
             {"route", e.path},
             {"status", e.status ? OJson(*e.status) : OJson(nullptr)},
             {"stream", e.stream},
             {"prompt_tokens", e.prompt_tokens ? OJson(*e.prompt_tokens) : OJson(nullptr)},
             {"completion_tokens", e.prompt_tokens ? OJson(e.completion_tokens) : OJson(nullptr)},
             {"finish_reason", text_or_null(e.finish_reason)},
             {"error", text_or_null(e.error)},
             {"first_token_seconds", e.first_token_seconds ? OJson(*e.first_token_seconds) : OJson(nullptr)},
             {"total_seconds", e.seconds ? OJson(*e.seconds) : OJson(nullptr)}};
  return dump_json(j);
}

void RequestLog::write(const RequestLogEntry& entry) const {
  if (!enabled_) return;
  if (format_ == LogFormat::json) {
    const std::string line = request_log_json(entry, std::chrono::system_clock::now()) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  } else {
    std::fprintf(stderr, "glass serve: %s\n", request_log_text(entry).c_str());
  }
}

}  // namespace glass::server
