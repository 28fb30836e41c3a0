// glass serve --api-key: the key every request but GET /health (and CORS preflights)
// must present as "Authorization: Bearer KEY", as OpenAI's API and vLLM's --api-key take
// it. A request without it, or with another key, gets 401 with an OpenAI-style error
// (type invalid_request_error, code invalid_api_key) that never repeats what was sent.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/api_error.h"

namespace glass::server {

class ApiKey {
 public:
  // Throws glass::Error naming `source` (the flag or variable it came from) when the key
  // is empty or has a space or control character (no client could send it intact).
  static ApiKey make(std::string key, const std::string& source);

  // nullopt when `authorization` (the Authorization header's value; nullptr when the
  // request has none) is "Bearer <the key>" (the scheme in any case); otherwise the 401.
  std::optional<ApiError> refusal(const std::string* authorization) const;

 private:
  explicit ApiKey(std::string key) : key_(std::move(key)) {}
  std::string key_;
};

// Whether `given` equals `expected`, in a time that depends on given.size() alone (which
// the client chose): every byte of `given` is compared, none returns early, and a
// difference in length is folded into the result rather than tested first.
bool constant_time_equals(std::string_view given, std::string_view expected);

}  // namespace glass::server
