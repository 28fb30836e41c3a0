// Ids of completions as OpenAI makes them: "chatcmpl-" (or "cmpl-") and 29 random letters
// and digits, so that no two servers (or restarts) hand out the same id and an id says
// nothing about how many came before it.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <string_view>

#include "server/completion_request.h"

namespace glass::server {

class CompletionIds {
 public:
  static constexpr size_t kRandomChars = 29;

  CompletionIds();  // seeded from std::random_device
  // Safe from any thread.
  std::string next(Endpoint endpoint);
  // A tool call's id: "call_" and 24 random letters and digits, as OpenAI's. Safe from
  // any thread.
  std::string next_tool_call();
  // `prefix` and 29 random letters and digits ("resp_…", "msg_…"). Safe from any thread.
  std::string next_named(std::string_view prefix);

 private:
  std::string random_chars(size_t n);

  std::mutex mutex_;
  std::mt19937_64 engine_;
};

}  // namespace glass::server
