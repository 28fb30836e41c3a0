#include "server/completion_id.h"

#include <array>

namespace glass::server {

namespace {

std::mt19937_64 seeded_engine() {
  std::random_device device;
  std::array<std::random_device::result_type, 8> words;
  for (auto& w : words) w = device();
  std::seed_seq seed(words.begin(), words.end());
  return std::mt19937_64(seed);
}

}  // namespace

CompletionIds::CompletionIds() : engine_(seeded_engine()) {}

std::string CompletionIds::random_chars(size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::uniform_int_distribution<size_t> pick(0, sizeof kAlphabet - 2);
  std::string chars;
  const std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < n; ++i) chars += kAlphabet[pick(engine_)];
  return chars;
}

std::string CompletionIds::next(Endpoint endpoint) {
  return (endpoint == Endpoint::chat_completions ? "chatcmpl-" : "cmpl-") + random_chars(kRandomChars);
}

std::string CompletionIds::next_tool_call() { return "call_" + random_chars(24); }

std::string CompletionIds::next_named(std::string_view prefix) { return std::string(prefix) + random_chars(kRandomChars); }

}  // namespace glass::server
