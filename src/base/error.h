// Errors: one exception type whose message names the file, field or parameter at fault.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace glass {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A well-formed input that asks for something glass does not implement (another
// architecture, a rope_type, a file format): the input is not wrong, the engine
// refuses it. Tests over fixture folders report such folders as skipped.
class Unsupported : public Error {
 public:
  using Error::Error;
};

template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <class... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(str_cat(args...));
}

template <class... Args>
[[noreturn]] void refuse(const Args&... args) {
  throw Unsupported(str_cat(args...));
}

// `text` for an error message: at most `max_bytes` of it (not cutting a UTF-8 sequence),
// then "..." and its length when cut. Input echoed in messages goes through this.
std::string text_excerpt(std::string_view text, size_t max_bytes = 60);

// Human-readable byte count, e.g. "12.0 KiB".
std::string format_bytes(double bytes);

// Integer with thousands separators, e.g. "57,344".
std::string format_count(unsigned long long n);

}  // namespace glass
