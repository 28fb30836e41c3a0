#include "cli/token_ids.h"

#include <cerrno>
#include <cstdlib>

#include "base/error.h"

namespace glass::cli {

std::vector<int32_t> parse_token_ids(const std::string& text, const std::string& option) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    const char ch = text[i];
    if (ch == ' ' || ch == ',' || ch == '\t' || ch == '\n') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != ',' && text[j] != '\t' && text[j] != '\n') ++j;
    const std::string word = text.substr(i, j - i);
    bool digits = !word.empty();
    for (char c : word) digits = digits && c >= '0' && c <= '9';
    errno = 0;
    const long long v = digits ? std::strtoll(word.c_str(), nullptr, 10) : -1;
    if (!digits || errno == ERANGE || v > INT32_MAX)
      fail(option, ": \"", word, "\" is not a token id (expected non-negative integers separated by spaces or commas)");
    ids.push_back(static_cast<int32_t>(v));
    i = j;
  }
  if (ids.empty()) fail(option, ": no token ids given");
  return ids;
}

}  // namespace glass::cli
