// Pre-tokenization: the text between added tokens is cut into pieces that BPE encodes
// one by one, following the tokenizer.json pre_tokenizer (a Split with the file's regex
// and a ByteLevel step, possibly in a Sequence).
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/fast_split.h"
#include "tokenizer/regex.h"

namespace glass {

// What a Split does with the pattern's matches (Hugging Face SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct SplitStep {
  Regex regex;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  std::optional<FastSplitter> fast;  // set when `regex` is a pattern FastSplitter knows
};

// ByteLevel with add_prefix_space: a space is put in front of each piece that does not
// start with one.
struct PrefixSpaceStep {};

class PreTokenizer {
 public:
  void add_split(SplitStep step);
  void add_prefix_space();
  // Whether some step has a FastSplitter.
  bool has_fast_split() const;

  // Appends the pieces of `text` (valid UTF-8) to `pieces`; a piece views either `text`
  // or a string in `storage`. Empty pieces are dropped, as Hugging Face does.
  // `fast_split`: use FastSplitter where it applies (off: PCRE2 only, to compare).
  void split(std::string_view text, std::vector<std::string_view>& pieces, std::deque<std::string>& storage,
             bool fast_split = true) const;

  // The pieces as a list of strings (for tests and the CLI).
  std::vector<std::string> split(std::string_view text, bool fast_split = true) const;

 private:
  struct Step {
    std::optional<SplitStep> split;  // otherwise a PrefixSpaceStep
  };
  void run(size_t step, std::string_view text, std::vector<std::string_view>& pieces, std::deque<std::string>& storage,
           bool fast_split) const;
  std::vector<Step> steps_;
};

// The pieces that a Split with `behavior` and `invert` makes of `text` given the
// pattern's matches in it (exposed for tests).
void apply_split_behavior(std::string_view text, const std::vector<MatchSpan>& matches, SplitBehavior behavior,
                          bool invert, std::vector<std::string_view>& pieces);

}  // namespace glass
