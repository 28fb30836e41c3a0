// What the fuzz targets share: the rule that a glass::Error is a clean rejection and
// anything else is a finding, and the fixed inputs some targets use (the Qwen2.5
// tokenizer and chat template extracted from data/ by the fuzz build).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "base/error.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace glass::fuzz {

// Prints what went wrong and aborts: libFuzzer saves the input as a crash.
[[noreturn]] void finding(const std::string& what);

// An exception that is not a glass::Error escaped the entry point.
[[noreturn]] void uncaught(const std::exception* e);

// Runs `f`, the call of one entry point on the input. Returning or throwing
// glass::Error is a clean outcome; any other exception is a finding.
template <class F>
void run_one(F&& f) {
  try {
    f();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    uncaught(&e);
  } catch (...) {
    uncaught(nullptr);
  }
}

// A property the entry point promises; a violation is a finding.
#define GLASS_FUZZ_CHECK(cond, ...)                                                        \
  do {                                                                                    \
    if (!(cond)) ::glass::fuzz::finding(::glass::str_cat("check failed: " #cond ": ", __VA_ARGS__)); \
  } while (0)

// The Qwen2.5 tokenizer and chat template (GLASS_FUZZ_TOKENIZER_DIR overrides the folder
// the build extracted them to), loaded once.
const Tokenizer& qwen_tokenizer();
const ChatTemplate& qwen_chat_template();

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A file for targets whose entry point reads a path, unique to this process and removed
// at exit; `write_scratch` replaces its contents.
const std::string& scratch_path(const char* suffix);
void write_scratch(const std::string& path, const uint8_t* data, size_t size);

}  // namespace glass::fuzz
