#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace glass {

void AddedTokenMatcher::add(std::string pattern, const AddedToken& token) {
  if (pattern.empty()) return;  // Hugging Face ignores empty added tokens
  int32_t node = 0;
  for (char ch : pattern) {
    const auto c = static_cast<unsigned char>(ch);
    auto& kids = nodes_[static_cast<size_t>(node)].children;
    auto it = std::find_if(kids.begin(), kids.end(), [c](const auto& e) { return e.first == c; });
    if (it != kids.end()) {
      node = it->second;
    } else {
      const auto next = static_cast<int32_t>(nodes_.size());
      nodes_[static_cast<size_t>(node)].children.emplace_back(c, next);
      nodes_.emplace_back();
      node = next;
    }
  }
  Node& end = nodes_[static_cast<size_t>(node)];
  if (end.entry >= 0) return;  // the same pattern twice: the first one wins, as in Aho-Corasick
  end.entry = static_cast<int32_t>(entries_.size());
  entries_.push_back({token.id, token.special, token.lstrip, token.rstrip, token.single_word});
  std::fill(std::begin(root_child_), std::end(root_child_), -1);
  for (const auto& [c, child] : nodes_[0].children) root_child_[c] = child;
  root_ready_ = true;
}

std::pair<int32_t, size_t> AddedTokenMatcher::longest_at(std::string_view text, size_t pos) const {
  int32_t node = root_child_[static_cast<unsigned char>(text[pos])];
  int32_t best = -1;
  size_t best_end = pos;
  size_t i = pos + 1;
  while (node >= 0) {
    const Node& n = nodes_[static_cast<size_t>(node)];
    if (n.entry >= 0) best = n.entry, best_end = i;
    if (i >= text.size()) break;
    const auto c = static_cast<unsigned char>(text[i]);
    node = -1;
    for (const auto& [k, child] : n.children)
      if (k == c) {
        node = child;
        break;
      }
    ++i;
  }
  return {best, best_end};
}

namespace {

// The code point that ends just before `pos` (pos > 0, valid UTF-8).
uint32_t char_before(std::string_view text, size_t pos) {
  size_t b = pos - 1;
  while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
  const char* p = text.data() + b;
  return utf8::decode_valid(p);
}

uint32_t char_at(std::string_view text, size_t pos) {
  const char* p = text.data() + pos;
  return utf8::decode_valid(p);
}

}  // namespace

void AddedTokenMatcher::split(std::string_view text, bool parse_special, std::vector<Segment>& out) const {
  if (!root_ready_) {
    if (!text.empty()) out.push_back({0, text.size(), -1});
    return;
  }
  size_t search = 0;  // where the next match may start (after the previous match)
  size_t taken = 0;   // end of what the segments so far cover
  while (search < text.size()) {
    // The leftmost position where some token starts.
    size_t pos = search;
    int32_t entry = -1;
    size_t end = pos;
    for (; pos < text.size(); ++pos) {
      if (root_child_[static_cast<unsigned char>(text[pos])] < 0) continue;
      std::tie(entry, end) = longest_at(text, pos);
      if (entry >= 0) break;
    }
    if (entry < 0) break;
    search = end;
    const Entry& e = entries_[static_cast<size_t>(entry)];
    if (e.special && !parse_special) continue;
    size_t start = pos;
    if (e.single_word) {
      const bool space_before = start == 0 || !is_word_char(char_before(text, start));
      const bool space_after = end == text.size() || !is_word_char(char_at(text, end));
      if (!space_before || !space_after) continue;
    }
    if (e.lstrip) {
      while (start > taken && is_white_space(char_before(text, start))) {
        size_t b = start - 1;
        while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
        start = b;
      }
    }
    if (e.rstrip) {
      while (end < text.size() && is_white_space(char_at(text, end)))
        end += utf8::length_from_lead(static_cast<unsigned char>(text[end]));
      // Hugging Face would go on searching inside the swallowed whitespace and could emit
      // overlapping pieces (only for tokens that start with whitespace); here the search
      // goes on after it.
      search = end;
    }
    if (taken < start) out.push_back({taken, start, -1});
    out.push_back({start, end, e.id});
    taken = end;
  }
  if (taken < text.size()) out.push_back({taken, text.size(), -1});
}

}  // namespace glass
