#include "tokenizer/pre_tokenizer.h"

#include <algorithm>

namespace glass {

void PreTokenizer::add_split(SplitStep step) { steps_.push_back({std::move(step)}); }

void PreTokenizer::add_prefix_space() { steps_.push_back({std::nullopt}); }

bool PreTokenizer::has_fast_split() const {
  for (const Step& s : steps_)
    if (s.split && s.split->fast) return true;
  return false;
}

void apply_split_behavior(std::string_view text, const std::vector<MatchSpan>& matches, SplitBehavior behavior,
                          bool invert, std::vector<std::string_view>& pieces) {
  if (behavior == SplitBehavior::kIsolated) {  // every match and every gap is a piece
    size_t prev = 0;
    for (const MatchSpan& m : matches) {
      if (prev != m.begin) pieces.push_back(text.substr(prev, m.begin - prev));
      if (m.end != m.begin) pieces.push_back(text.substr(m.begin, m.end - m.begin));
      prev = m.end;
    }
    if (prev != text.size()) pieces.push_back(text.substr(prev));
    return;
  }
  // Hugging Face's algorithm: the text as alternating (span, is_match) parts, then each
  // behavior merges or drops parts; empty results are dropped.
  struct Part {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Part> parts;
  parts.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (const MatchSpan& m : matches) {
    if (prev != m.begin) parts.push_back({prev, m.begin, invert});
    parts.push_back({m.begin, m.end, !invert});
    prev = m.end;
  }
  if (prev != text.size()) parts.push_back({prev, text.size(), invert});

  std::vector<Part> out;  // is_match here means "remove"
  out.reserve(parts.size());
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Part& p : parts) out.push_back({p.begin, p.end, false});
      break;
    case SplitBehavior::kRemoved:
      out = parts;
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Part& p : parts) {
        if (p.is_match == previous_match && !out.empty())
          out.back().end = p.end;
        else
          out.push_back({p.begin, p.end, false});
        previous_match = p.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Part& p : parts) {
        if (p.is_match && !previous_match && !out.empty())
          out.back().end = p.end;
        else
          out.push_back({p.begin, p.end, false});
        previous_match = p.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty())
          out.back().begin = it->begin;
        else
          out.push_back({it->begin, it->end, false});
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
  }
  for (const Part& p : out)
    if (!p.is_match && p.end > p.begin) pieces.push_back(text.substr(p.begin, p.end - p.begin));
}

void PreTokenizer::run(size_t step, std::string_view text, std::vector<std::string_view>& pieces,
                       std::deque<std::string>& storage, bool fast_split) const {
  if (text.empty()) return;
  if (step == steps_.size()) {
    pieces.push_back(text);
    return;
  }
  const Step& s = steps_[step];
  if (!s.split) {
    if (text.front() == ' ') return run(step + 1, text, pieces, storage, fast_split);
    storage.push_back(" ");
    storage.back().append(text);
    return run(step + 1, storage.back(), pieces, storage, fast_split);
  }
  std::vector<MatchSpan> matches;
  if (fast_split && s.split->fast)
    s.split->fast->find_all(text, matches);
  else
    s.split->regex.find_all(text, matches);
  if (step + 1 == steps_.size()) {
    apply_split_behavior(text, matches, s.split->behavior, s.split->invert, pieces);
    return;
  }
  std::vector<std::string_view> mine;
  apply_split_behavior(text, matches, s.split->behavior, s.split->invert, mine);
  for (std::string_view piece : mine) run(step + 1, piece, pieces, storage, fast_split);
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& pieces,
                         std::deque<std::string>& storage, bool fast_split) const {
  run(0, text, pieces, storage, fast_split);
}

std::vector<std::string> PreTokenizer::split(std::string_view text, bool fast_split) const {
  std::vector<std::string_view> pieces;
  std::deque<std::string> storage;
  split(text, pieces, storage, fast_split);
  return {pieces.begin(), pieces.end()};
}

}  // namespace glass
