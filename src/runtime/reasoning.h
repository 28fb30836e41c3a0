// Reasoning ("thinking") kept apart from the answer of a reply. Qwen3 writes
//   <think>\n ... reasoning ... \n</think>\n\n answer
// and a template may open the block in the generation prompt itself, so that the reply
// starts inside it (Qwen3-Thinking-2507, DeepSeek-R1). The splitter reads the reply's
// text as it streams and releases each part as soon as it is certain:
//   - reasoning is what follows a leading <think> (only whitespace before it) up to
//     </think>, without the whitespace that frames it; the whitespace after </think>
//     (the template's "\n\n") is not part of the answer either;
//   - when the prompt ends inside an open <think>, the reply starts as reasoning;
//   - a reply that ends before </think> is reasoning only (no answer);
//   - a reply that does not start with <think> is all answer, byte for byte.
// The tags are matched in the text, so a tag split over streamed pieces is found; text
// that may still become a tag (or whitespace whose side of a tag is not known yet) is
// held back until it is decided.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace glass {

// The ids of the think tags in a tokenizer that has them as tokens of their own.
struct ThinkTokens {
  int32_t open = -1;   // <think> (151667 in Qwen3)
  int32_t close = -1;  // </think> (151668)
};

// The tokenizer's think tags; nullopt when it lacks either (Qwen2.5) or marks one
// special (then the streamed text, which skips special tokens, would never show it).
std::optional<ThinkTokens> find_think_tokens(const Tokenizer& tokenizer);

// Whether `prompt` ends inside an open think block: a <think> with no </think> after it.
bool ends_in_open_think(std::span<const int32_t> prompt, const ThinkTokens& tags);

struct ReasoningPieces {
  std::string reasoning;
  std::string content;
};

class ReasoningSplitter {
 public:
  // `starts_in_reasoning`: the prompt opened the think block (see ends_in_open_think).
  explicit ReasoningSplitter(bool starts_in_reasoning = false);

  // The next piece of the reply (one token's newly printable text; may be empty):
  // returns what is now certain. Call once per generated token, so that
  // reasoning_tokens() counts tokens.
  ReasoningPieces feed(std::string_view text);
  // The reply ended: releases what was held back. Call once, after the last feed().
  ReasoningPieces finish();

  // Whether a think block was opened, by the reply or by the prompt: callers report the
  // reasoning (possibly empty) as a field of its own only then.
  bool found_reasoning() const { return found_; }
  // Whether the reply is inside the think block now (it has not closed it yet).
  bool in_reasoning() const { return state_ == State::kReasoningStart || state_ == State::kReasoning; }
  // The feed() calls from the one that opened the think block through the one that
  // closed it (or through the last, when it never closed).
  int64_t reasoning_tokens() const { return reasoning_tokens_; }

 private:
  enum class State {
    kLeading,          // only whitespace so far: a <think> may still come
    kReasoningStart,   // after <think>: whitespace here frames the reasoning
    kReasoning,        // inside the think block
    kAfterReasoning,   // after </think>: whitespace here is the template's separator
    kContent,          // the answer: everything passes through
  };
  void advance(ReasoningPieces& out);

  State state_;
  bool found_;
  int64_t reasoning_tokens_ = 0;
  std::string held_;  // text not yet released
};

// One generated token's text through `splitter` (and, with `last`, the end of the reply);
// without a splitter the text is all content.
ReasoningPieces split_piece(std::optional<ReasoningSplitter>& splitter, std::string_view text, bool last);

// The whole reply at once; the same as feeding it in pieces.
struct SplitReply {
  bool found_reasoning = false;
  std::string reasoning;
  std::string content;
};
SplitReply split_reasoning(std::string_view reply, bool starts_in_reasoning = false);

// The splitter for a reply to `prompt`, or nullopt when the tokenizer has no think
// tags (its models do not reason in tags, and their replies stay as they are).
std::optional<ReasoningSplitter> reasoning_splitter_for(const Tokenizer& tokenizer, std::span<const int32_t> prompt);

}  // namespace glass
