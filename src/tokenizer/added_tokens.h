// Added tokens (special tokens such as <|im_end|> and others listed in tokenizer.json's
// added_tokens) are found in the text before anything else, with Hugging Face's rules:
// leftmost-longest match, non-overlapping; `single_word` keeps only matches not inside
// a word; `lstrip` / `rstrip` make the token swallow the whitespace beside it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace glass {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;      // skipped by decode(skip_special); plain text when parse_special is off
  bool lstrip = false;       // also takes the whitespace on its left
  bool rstrip = false;       // also takes the whitespace on its right
  bool normalized = true;    // matched in the normalized text (else in the raw text, before normalizing)
  bool single_word = false;  // only matches with no word character just before or after
};

// A stretch of text: an added token (id >= 0) or text to tokenize (id = -1).
struct Segment {
  size_t begin, end;
  int32_t id;
};

class AddedTokenMatcher {
 public:
  // `pattern` is what is searched for: the content, or its normalized form.
  void add(std::string pattern, const AddedToken& token);
  bool empty() const { return entries_.empty(); }

  // Cuts `text` (valid UTF-8) into segments covering it in order. With `parse_special`
  // off, special tokens are not recognised (their text stays text).
  void split(std::string_view text, bool parse_special, std::vector<Segment>& out) const;

 private:
  struct Entry {
    int32_t id;
    bool special, lstrip, rstrip, single_word;
  };
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;
    int32_t entry = -1;  // index into entries_ of the token ending here
  };
  // Longest token starting at `pos`: its entry and end, or entry -1.
  std::pair<int32_t, size_t> longest_at(std::string_view text, size_t pos) const;

  std::vector<Entry> entries_;
  std::vector<Node> nodes_{Node{}};  // nodes_[0] is the root
  int32_t root_child_[256];
  bool root_ready_ = false;
};

}  // namespace glass
