// What the request parser says of a body, for tests of its errors.
#pragma once

#include <string>

#include "server/api_error.h"
#include "server/completion_request.h"

namespace glass::server::test {

// The ApiError a body gets (status 0 when it parses).
inline ApiError error_of(const std::string& body, Endpoint endpoint = Endpoint::chat_completions) {
  try {
    parse_completion_request(body, endpoint);
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "");
}

}  // namespace glass::server::test
