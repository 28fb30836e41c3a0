#include "runtime/reasoning.h"

#include <algorithm>

#include "runtime/tag_scan.h"

namespace glass {

namespace {

constexpr std::string_view kOpenTag = "<think>";
constexpr std::string_view kCloseTag = "</think>";

std::string_view without_trailing_space(std::string_view s) { return s.substr(0, s.size() - trailing_space(s)); }

}  // namespace

std::optional<ThinkTokens> find_think_tokens(const Tokenizer& tokenizer) {
  const ThinkTokens tags{tokenizer.token_id(kOpenTag), tokenizer.token_id(kCloseTag)};
  if (tags.open < 0 || tags.close < 0) return std::nullopt;
  if (tokenizer.is_special(tags.open) || tokenizer.is_special(tags.close)) return std::nullopt;
  return tags;
}

bool ends_in_open_think(std::span<const int32_t> prompt, const ThinkTokens& tags) {
  for (auto it = prompt.rbegin(); it != prompt.rend(); ++it) {
    if (*it == tags.close) return false;
    if (*it == tags.open) return true;
  }
  return false;
}

ReasoningSplitter::ReasoningSplitter(bool starts_in_reasoning)
    : state_(starts_in_reasoning ? State::kReasoningStart : State::kLeading), found_(starts_in_reasoning) {}

void ReasoningSplitter::advance(ReasoningPieces& out) {
  for (;;) {
    switch (state_) {
      case State::kLeading: {
        const std::string_view rest = std::string_view(held_).substr(leading_space(held_));
        if (rest.empty()) return;
        if (rest.starts_with(kOpenTag)) {
          held_ = std::string(rest.substr(kOpenTag.size()));
          found_ = true;
          state_ = State::kReasoningStart;
          continue;
        }
        if (kOpenTag.starts_with(rest)) return;
        state_ = State::kContent;
        continue;
      }
      case State::kReasoningStart:
      case State::kAfterReasoning:
        held_.erase(0, leading_space(held_));
        if (held_.empty()) return;
        state_ = state_ == State::kReasoningStart ? State::kReasoning : State::kContent;
        continue;
      case State::kReasoning: {
        const size_t close = held_.find(kCloseTag);
        if (close != std::string::npos) {
          out.reasoning += without_trailing_space(std::string_view(held_).substr(0, close));
          held_.erase(0, close + kCloseTag.size());
          state_ = State::kAfterReasoning;
          continue;
        }
        // Hold back a tag that may be arriving and the whitespace before it, which
        // frames the reasoning if the tag completes.
        size_t keep = partial_tag_at_end(held_, kCloseTag);
        while (keep < held_.size() && is_space(held_[held_.size() - keep - 1])) ++keep;
        out.reasoning.append(held_, 0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return;
      }
      case State::kContent:
        out.content += held_;
        held_.clear();
        return;
    }
  }
}

ReasoningPieces ReasoningSplitter::feed(std::string_view text) {
  const bool was_reasoning = in_reasoning();
  held_.append(text);
  ReasoningPieces out;
  advance(out);
  if (was_reasoning || in_reasoning()) ++reasoning_tokens_;
  return out;
}

ReasoningPieces ReasoningSplitter::finish() {
  ReasoningPieces out;
  // Only these states hold text between calls; in the others it is whitespace to drop.
  if (state_ == State::kLeading) out.content = held_;  // whitespace, or a "<think>" cut short: as written
  else if (state_ == State::kReasoning) out.reasoning = without_trailing_space(held_);  // a "</think>" cut short is text
  held_.clear();
  return out;
}

ReasoningPieces split_piece(std::optional<ReasoningSplitter>& splitter, std::string_view text, bool last) {
  if (!splitter) return {"", std::string(text)};
  ReasoningPieces piece = splitter->feed(text);
  if (last) {
    const ReasoningPieces rest = splitter->finish();
    piece.reasoning += rest.reasoning;
    piece.content += rest.content;
  }
  return piece;
}

SplitReply split_reasoning(std::string_view reply, bool starts_in_reasoning) {
  ReasoningSplitter splitter(starts_in_reasoning);
  ReasoningPieces a = splitter.feed(reply);
  ReasoningPieces b = splitter.finish();
  return {splitter.found_reasoning(), a.reasoning + b.reasoning, a.content + b.content};
}

std::optional<ReasoningSplitter> reasoning_splitter_for(const Tokenizer& tokenizer, std::span<const int32_t> prompt) {
  const auto tags = find_think_tokens(tokenizer);
  if (!tags) return std::nullopt;
  return ReasoningSplitter(ends_in_open_think(prompt, *tags));
}

}  // namespace glass
