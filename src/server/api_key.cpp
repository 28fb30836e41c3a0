#include "server/api_key.h"

#include <cctype>

#include "base/error.h"

namespace glass::server {

bool constant_time_equals(std::string_view given, std::string_view expected) {
  // volatile: the compiler may not turn the accumulation into an early exit.
  volatile unsigned char diff = given.size() != expected.size() ? 1 : 0;
  if (expected.empty()) return false;
  size_t j = 0;  // cycles through `expected`, so that a longer `given` is read whole
  for (const char c : given) {
    diff = static_cast<unsigned char>(diff | (static_cast<unsigned char>(c) ^ static_cast<unsigned char>(expected[j])));
    j = j + 1 == expected.size() ? 0 : j + 1;
  }
  return diff == 0;
}

ApiKey ApiKey::make(std::string key, const std::string& source) {
  if (key.empty()) fail(source, ": the API key is empty; give a key, or leave ", source, " out to serve without one");
  for (size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c <= 0x20 || c == 0x7F)
      fail(source, ": the API key has a ", c == ' ' ? "space" : "control character", " at byte ", i,
           "; an Authorization header cannot carry it intact");
  }
  return ApiKey(std::move(key));
}

std::optional<ApiError> ApiKey::refusal(const std::string* authorization) const {
  if (authorization == nullptr)
    return ApiError(401,
                    "You didn't provide an API key. You need to provide your API key in an Authorization header using "
                    "Bearer auth (i.e. Authorization: Bearer YOUR_KEY)",
                    "invalid_request_error", std::nullopt, "invalid_api_key");
  // "Bearer" in any case, spaces, the token; anything else simply does not match.
  std::string_view value(*authorization);
  constexpr std::string_view kScheme = "bearer";
  bool bearer = value.size() > kScheme.size() && (value[kScheme.size()] == ' ' || value[kScheme.size()] == '\t');
  for (size_t i = 0; bearer && i < kScheme.size(); ++i)
    bearer = std::tolower(static_cast<unsigned char>(value[i])) == kScheme[i];
  std::string_view token;
  if (bearer) {
    token = value.substr(kScheme.size());
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  }
  // Compared whatever the scheme was, so a malformed header takes the same path.
  const bool matches = constant_time_equals(token, key_);
  if (bearer && matches) return std::nullopt;
  return ApiError(401, "Incorrect API key provided", "invalid_request_error", std::nullopt, "invalid_api_key");
}

}  // namespace glass::server
