// A hand-written matcher for the GPT-4 family split pattern that Qwen2 uses:
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// and its cl100k / Llama 3 variant with \p{N}{1,3}. It finds exactly the matches PCRE2
// finds for the same pattern (character classes come from PCRE2's own tables, see
// unicode.h; tests compare both on fixture and random text), several times faster.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace glass {

class FastSplitter {
 public:
  // The matcher for `pattern` if it is one of the patterns above, written exactly so.
  static std::optional<FastSplitter> recognize(std::string_view pattern);

  // Appends the matches in `text` (valid UTF-8). They cover the whole text.
  void find_all(std::string_view text, std::vector<MatchSpan>& out) const;

  int max_digits() const { return max_digits_; }

 private:
  explicit FastSplitter(int max_digits) : max_digits_(max_digits) {}
  int max_digits_;  // a \p{N} match is 1 digit (Qwen2) or up to 3 (cl100k, Llama 3)
};

extern const char kQwen2SplitPattern[];
extern const char kCl100kSplitPattern[];
extern const char kGpt2SplitPattern[];

}  // namespace glass
