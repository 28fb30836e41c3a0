// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available), shareable
// across threads: the compiled code is read-only; match state is made per call.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace glass {

struct MatchSpan {
  size_t begin, end;
};

class Regex {
 public:
  // `source` names where the pattern came from (e.g. "tokenizer.json: pre_tokenizer...")
  // for the error when it does not compile. `literal` matches the text as written.
  Regex(const std::string& pattern, const std::string& source, bool literal = false);

  // Every non-overlapping match in `text` (valid UTF-8), leftmost first, with the
  // iteration rules of Oniguruma's find_iter (what Hugging Face tokenizers uses): an
  // empty match right where the previous match ended is skipped by one character. \s
  // means Unicode White_Space, as in Oniguruma (PCRE2 alone would add U+180E).
  void find_all(std::string_view text, std::vector<MatchSpan>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;
  std::string source_;
  bool literal_ = false;
  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace glass
